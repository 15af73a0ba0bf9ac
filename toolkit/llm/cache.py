"""The content-addressed response cache: SQLite in WAL mode, in front of every provider.

Invariants: the key is `LLMRequest.cache_key()` (never credentials, timeouts or retries);
only complete answers are stored — an error raises before anything is written, and a
truncated or refused output is a failure, not an answer; several processes may share one
file (WAL plus a busy timeout, one short transaction per write). Export writes one small JSON
file per entry with a stable name, sorted keys and indentation, so recordings are reviewable
in a pull request and serve as test fixtures.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolkit.errors import LLMError, ReplayMiss, SpecError
from toolkit.llm.diff import miss_message
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.provider import REFUSED_STOPS, TRUNCATED_STOPS, Provider

RECORD_VERSION = 1
BUSY_TIMEOUT_S = 60.0

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class CacheMode(StrEnum):
    """How the cache treats a request."""

    OFF = "off"
    """Always call the provider; read and write nothing."""
    RW = "rw"
    """Serve hits; call the provider on a miss and store the answer (the default)."""
    RO = "ro"
    """Serve hits; call the provider on a miss but store nothing."""
    STRICT = "strict"
    """Serve hits; a miss is an error naming the nearest recorded request (tests, CI, demos)."""
    REFRESH = "refresh"
    """Always call the provider and overwrite what is stored."""


class CacheRecord(BaseModel):
    """One stored exchange: the full request (with metadata) and the provider's response."""

    version: int = RECORD_VERSION
    key: str = Field(description="LLMRequest.cache_key() of `request`.")
    request: LLMRequest
    response: LLMResponse

    @classmethod
    def of(cls, request: LLMRequest, response: LLMResponse, key: str | None = None) -> CacheRecord:
        """The record for an exchange, with the response's per-call flags reset.

        Pass `key` when the caller already has it: hashing a request with images is costly.
        """
        stored = response.model_copy(update={"cache_hit": False})
        return cls(key=key or request.cache_key(), request=request, response=stored)

    def file_name(self) -> str:
        """Stable, readable export name: purpose, model and the start of the key digest."""
        digest = self.key.split(":")[-1][:16]
        return f"{self.request.metadata.purpose}-{_slug(self.request.model)}-{digest}.json"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60] or "model"


class CacheStats(BaseModel):
    """What `judgegen cache stats` prints."""

    path: str
    entries: int
    bytes: int
    by_model: dict[str, int]
    by_purpose: dict[str, int]


class ResponseCache:
    """A SQLite file of `CacheRecord`s keyed by request hash; safe for concurrent processes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute(SCHEMA_SQL)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def get_response(self, key: str) -> LLMResponse | None:
        """Only the stored response under `key` (the fast path of a cache hit)."""
        with self._lock:
            row = self._db.execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else LLMResponse.model_validate_json(row[0])

    def put(self, record: CacheRecord, *, replace: bool = False) -> None:
        """Store `record`; an existing entry is kept unless `replace`."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        request = record.request
        values = (
            record.key,
            request.provider,
            request.model,
            request.metadata.purpose,
            request.model_dump_json(),
            record.response.model_dump_json(),
            time.time(),
        )
        with self._lock:
            self._db.execute(f"{verb} INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)", values)

    def requests(self, model: str | None = None) -> list[LLMRequest]:
        """Recorded requests (optionally of one model), for explaining misses."""
        sql, args = "SELECT request FROM responses", ()
        if model is not None:
            sql, args = sql + " WHERE model = ?", (model,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY key", args).fetchall()
        return [LLMRequest.model_validate_json(row[0]) for row in rows]

    def records(self) -> list[CacheRecord]:
        """Every record, ordered by key."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, request, response FROM responses ORDER BY key"
            ).fetchall()
        return [
            CacheRecord(
                key=key,
                request=LLMRequest.model_validate_json(req),
                response=LLMResponse.model_validate_json(resp),
            )
            for key, req, resp in rows
        ]

    def stats(self) -> CacheStats:
        """Entry counts by model and purpose, and the file size."""
        with self._lock:
            total = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            models = self._db.execute("SELECT model, COUNT(*) FROM responses GROUP BY model")
            by_model = dict(models.fetchall())
            purposes = self._db.execute("SELECT purpose, COUNT(*) FROM responses GROUP BY purpose")
            by_purpose = dict(purposes.fetchall())
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return CacheStats(
            path=str(self.path), entries=total, bytes=size, by_model=by_model, by_purpose=by_purpose
        )

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        with self._lock:
            count = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            self._db.execute("DELETE FROM responses")
        return count

    def export_dir(self, directory: Path) -> int:
        """Write every record as `<purpose>-<model>-<digest>.json`; returns the count."""
        directory.mkdir(parents=True, exist_ok=True)
        records = self.records()
        for record in records:
            (directory / record.file_name()).write_text(record_json(record), encoding="utf-8")
        return len(records)

    def import_dir(self, directory: Path, *, replace: bool = False) -> int:
        """Load every `*.json` record in `directory` (key recomputed from the request)."""
        records = load_records(directory)
        for record in records:
            self.put(record, replace=replace)
        return len(records)


def record_json(record: CacheRecord) -> str:
    """The reviewable file form of a record: sorted keys, two-space indent, final newline."""
    data = record.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def load_records(directory: Path) -> list[CacheRecord]:
    """Read a directory of exported records; a malformed file is a `SpecError` naming it."""
    if not directory.is_dir():
        raise SpecError(
            str(directory), "-", "not a directory", "pass a directory of exported records"
        )
    return [_load_record(path) for path in sorted(directory.glob("*.json"))]


def _load_record(path: Path) -> CacheRecord:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        record = CacheRecord.model_validate(data)
    except ValueError as exc:
        raise SpecError(str(path), "-", f"not a cache record ({exc})", "re-export it") from None
    return record.model_copy(update={"key": record.request.cache_key()})


def cacheable(response: LLMResponse) -> bool:
    """Only complete answers are stored: never truncated or refused outputs."""
    return response.stop_reason not in TRUNCATED_STOPS | REFUSED_STOPS


class CachedProvider:
    """Wraps a provider with the response cache; identical in-flight requests share one call.

    Mode `off` is a plain pass-through (no key is computed, nothing is shared).
    """

    def __init__(self, inner: Provider, cache: ResponseCache | None, mode: CacheMode) -> None:
        if cache is None and mode is not CacheMode.OFF:
            raise ValueError(f"cache mode {mode.value} needs a cache")
        self.inner = inner
        self.cache = cache
        self.mode = mode
        self.name = inner.name
        self._inflight: dict[str, asyncio.Future[LLMResponse]] = {}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """A stored answer when the mode allows, else one shared provider call."""
        if self.mode is CacheMode.OFF:
            return await self.inner.complete(request)
        key = request.cache_key()
        if self.cache is not None and self.mode is not CacheMode.REFRESH:
            stored = self.cache.get_response(key)
            if stored is not None:
                return _as_hit(stored)
            if self.mode is CacheMode.STRICT:
                recorded = self.cache.requests(request.model)
                raise ReplayMiss(miss_message("strict cache miss", request, recorded))
        return await self._shared(key, request)

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    async def _shared(self, key: str, request: LLMRequest) -> LLMResponse:
        task = self._inflight.get(key)
        if task is not None:
            return await _wait_as_follower(task)
        task = asyncio.ensure_future(self._call_and_store(key, request))
        self._inflight[key] = task
        task.add_done_callback(lambda done: self._settle(key, done))
        return await asyncio.shield(task)

    def _settle(self, key: str, done: asyncio.Future[LLMResponse]) -> None:
        """Forget the finished call; mark its error seen even if every waiter was cancelled."""
        self._inflight.pop(key, None)
        if not done.cancelled():
            done.exception()

    async def _call_and_store(self, key: str, request: LLMRequest) -> LLMResponse:
        response = await self.inner.complete(request)
        storing = self.cache is not None and self.mode in {CacheMode.RW, CacheMode.REFRESH}
        if storing and cacheable(response):
            record = CacheRecord.of(request, response, key)
            replace = self.mode is CacheMode.REFRESH
            await asyncio.to_thread(self.cache.put, record, replace=replace)  # type: ignore[union-attr]
        return response


async def _wait_as_follower(task: asyncio.Future[LLMResponse]) -> LLMResponse:
    """A shared call's result for a request that did not make it: a hit, or the error
    without its usage (the caller that made the call already accounts for it)."""
    try:
        return _as_hit(await asyncio.shield(task))
    except LLMError as exc:
        raise LLMError(
            str(exc), kind=exc.kind, usage=Usage(), attempts=exc.attempts, body=exc.body
        ) from exc


def _as_hit(response: LLMResponse) -> LLMResponse:
    return response.model_copy(update={"cache_hit": True, "cost_usd": 0.0})
