"""The content-addressed response store: SQLite in WAL mode (`CachedProvider` puts it in
front of a provider).

Invariants: the key is `LLMRequest.cache_key()` (never credentials, timeouts or retries);
several processes may share one file (WAL plus a busy timeout); a process's new answers are
committed together by its writer thread, on a connection of its own, before their calls
return (`cache_writer.py`). Large request parts (page text, screenshots) are stored once, by
content digest, in `blobs`, however many trials and requests repeat them; each entry records
whether its answer was checked against its schema, and where the answer came from
(`RecordOrigin`: recorded from a live provider or a fixture, or imported, and from which file;
entries of an older format read as stored before origins were kept, never as anything more).
The file's format is `PRAGMA user_version`; an older format is migrated in one transaction on
open, a newer one or a file that is not (or no longer) SQLite is
a `CacheError`. A garbled row is a miss, reported once per cache. Export writes one small JSON
file per entry with a stable name, sorted keys and indentation (`records.py`), so recordings
are reviewable in a pull request and serve as test fixtures; an import never keeps an entry
over a record that answers its request differently without saying so (it refuses, or with
`replace` takes the record's answer); it keeps what each record says of its origin, adding the
file and the time, and a record that says nothing is stored as of unknown origin.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from toolkit.errors import CACHE_ACCESS_FIX, CacheError, SpecError
from toolkit.llm.cache_writer import PendingWrite, WriteBehind
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.origin import BEFORE_ORIGINS, UNKNOWN, RecordOrigin
from toolkit.llm.provider import REFUSED_STOPS, TRUNCATED_STOPS, cacheable
from toolkit.llm.records import CacheRecord, load_record_files, record_json
from toolkit.util.sqlite_errors import sqlite_errors

FORMAT_VERSION = 4
"""1: one `responses` table with whole requests; 2: `entries` plus content-addressed `blobs`;
3: each entry records whether its answer was checked against its schema (hits skip the check);
4: each entry records its `origin` (entries of older formats get `before_origins`)."""
BUSY_TIMEOUT_S = 60.0
SQLITE_MAGIC = b"SQLite format 3\x00"
log = logging.getLogger("judgegen.llm.cache")

ENTRY_COLUMNS = (
    "(key, provider, model, purpose, request, response, created, checked, origin) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ORIGIN_SOURCE_SQL = (
    "CASE WHEN json_valid(origin) THEN "
    "COALESCE(json_extract(origin, '$.source'), 'unknown') ELSE 'unknown' END"
)
"""An entry's origin source, as `_origin` reads it (a missing or unreadable one: unknown)."""
UNSERVED_STOPS = tuple(sorted(TRUNCATED_STOPS | REFUSED_STOPS))
NEVER_SERVED_SQL = (
    "SELECT COUNT(*) FROM entries WHERE CASE WHEN json_valid(response) THEN "
    f"json_extract(response, '$.stop_reason') IN ({', '.join('?' * len(UNSERVED_STOPS))}) "
    "OR (COALESCE(json_type(response, '$.parsed'), 'null') = 'null' AND "
    "trim(COALESCE(json_extract(response, '$.text'), ''), ' ' || char(9, 10, 13)) = '') "
    "ELSE 1 END"
)
"""Counts the entries a lookup treats as misses without validating them (`cacheable`):
truncated, refused or empty answers, and rows that are not JSON."""
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL,
    checked INTEGER NOT NULL DEFAULT 0,
    origin TEXT
);
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
"""


class CacheStats(BaseModel):
    """What `judgegen cache stats` prints."""

    path: str
    entries: int
    blobs: int = Field(default=0, description="Distinct large request parts, each stored once.")
    never_served: int = Field(
        default=0,
        description="Entries a lookup treats as a miss: a truncated, refused or empty answer "
        "(one imported from recordings, or stored by an older judgegen), or an unreadable row. An answer that fails its schema is "
        "found only when it is looked up.",
    )
    bytes: int
    by_model: dict[str, int]
    by_purpose: dict[str, int]
    by_origin: dict[str, int] = Field(
        default_factory=dict,
        description="Entries by where their answers came from (`RecordOrigin.source`).",
    )


class ImportReport(BaseModel):
    """What `judgegen cache import` did with the records it read."""

    added: int = Field(default=0, description="Requests the cache held no answer for.")
    unchanged: int = Field(default=0, description="Records whose answer the cache already held.")
    replaced: int = Field(
        default=0,
        description="Entries whose answer the import replaced: with --replace, or one never "
        "served (truncated, refused, empty, unreadable).",
    )
    unknown_origin: int = Field(
        default=0,
        description="Of those added or replaced, records that do not say where their answers "
        "came from (written by hand, or exported before origins were kept): stored as of "
        "unknown origin, which every run they answer says.",
    )

    def line(self) -> str:
        """`5 records: 3 new, 1 replaced, 1 already in the cache`."""
        total = self.added + self.unchanged + self.replaced
        return (
            f"{total} records: {self.added} new, {self.replaced} replaced, "
            f"{self.unchanged} already in the cache"
        )

    def origin_note(self) -> str | None:
        """How many records were stored of unknown origin, and what that means; None if none."""
        if not self.unknown_origin:
            return None
        return (
            f"{self.unknown_origin} stored of unknown origin: their files do not say how their "
            "answers were recorded, so runs they answer count them apart, never as a model's"
        )


class Stored(NamedTuple):
    """A stored answer as a lookup finds it."""

    response: LLMResponse
    checked: bool
    """Whether it was checked against its request's schema."""
    origin: RecordOrigin


class ResponseCache:
    """A SQLite file of `CacheRecord`s keyed by request hash; safe for concurrent processes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _check_file(self.path)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._garbled: set[str] = set()
        self._warned = False
        with self._guard():
            self._db = self._connect()
            self._db.execute("PRAGMA journal_mode = WAL")
            self._prepare()
            # Stores run on a connection of their own: with WAL, a lookup on the event loop
            # never waits for a store's transaction to commit.
            self._writer = self._connect()
        self._behind = WriteBehind(self._write, name=f"judgegen-cache-writer {self.path.name}")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    def close(self) -> None:
        """Finish the queued stores (`put_batched`), then close the connections."""
        try:
            self._behind.close()
        finally:
            self._close()

    def _close(self) -> None:
        with self._write_lock:
            self._writer.close()
        with self._lock:
            self._db.close()

    def get_response(self, key: str) -> LLMResponse | None:
        """Only the stored response under `key`; None on a miss or an unreadable row."""
        found = self.lookup(key)
        return None if found is None else found[0]

    def lookup(self, key: str) -> Stored | None:
        """The stored response under `key`, whether it was checked against its schema and
        where it came from (the fast path of a cache hit); None on a miss or an unreadable
        row."""
        queued = self._behind.pending(key)
        if queued is not None:
            return Stored(queued.response, queued.checked, queued.origin)
        with self._guard():
            row = self._db.execute(
                "SELECT response, checked, origin FROM entries WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        try:
            return Stored(LLMResponse.model_validate_json(row[0]), bool(row[1]), _origin(row[2]))
        except ValueError:
            self.forget(key, "unreadable rows are treated as misses and replaced")
            return None

    def mark_checked(self, key: str) -> None:
        """Record that `key`'s answer passed its schema, so later hits skip the check."""
        with self._guard():
            self._db.execute("UPDATE entries SET checked = 1 WHERE key = ?", (key,))

    def forget(self, key: str, why: str) -> None:
        """Mark `key`'s stored entry unusable: the next `put` replaces it; warn once per cache."""
        self._garbled.add(key)
        if not self._warned:
            self._warned = True
            log.warning("warning: response cache %s has unusable entries (%s)", self.path, why)

    def put(self, record: CacheRecord, *, replace: bool = False, checked: bool = False) -> None:
        """Store `record` and its blobs now; an existing entry is kept unless `replace` (or
        unusable). `checked` says the answer was validated against the request's schema; a
        record that does not say its origin is stored as of unknown origin."""
        self._behind.flush()  # an older queued store must not land after this one
        self._write([_pending(record, replace, checked)])

    async def put_batched(
        self, record: CacheRecord, *, replace: bool = False, checked: bool
    ) -> None:
        """Queue `record` for the background writer (`put`'s rules), to be committed with the
        others queued meanwhile; lookups of this process see it at once. Returns once it is
        committed (or raises the write's error)."""
        commit = self.put_queued(record, replace=replace, checked=checked)
        self.hurry()
        await commit

    def put_queued(
        self, record: CacheRecord, *, replace: bool = False, checked: bool
    ) -> asyncio.Future[None]:
        """`put_batched` without the wait: the future of the commit (its error if it fails),
        which lingers a moment unless someone waits for it and says so (`hurry`)."""
        return self._behind.queue(_pending(record, replace, checked))

    def hurry(self) -> None:
        """Commit what is queued now: a caller waits for it."""
        self._behind.hurry()

    def _write(self, items: list[PendingWrite]) -> None:
        """Store `items` and their blobs in one transaction."""
        with self._guard(self._write_lock):
            db = self._writer
            db.execute("BEGIN IMMEDIATE")
            try:
                for item in items:
                    self._insert(db, item)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        for item in items:
            self._garbled.discard(item.key)

    def _insert(self, db: sqlite3.Connection, item: PendingWrite) -> None:
        replace = item.replace or item.key in self._garbled
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        request = item.request
        text, blobs = request.storage_json()
        for digest, blob in blobs.items():
            db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, blob))
        values = (
            item.key,
            request.provider,
            request.model,
            request.metadata.purpose,
            text,
            item.response.model_dump_json(),
            time.time(),
            int(item.checked),
            item.origin.model_dump_json(),
        )
        db.execute(f"{verb} INTO entries {ENTRY_COLUMNS}", values)

    def requests(self, model: str | None = None) -> list[LLMRequest]:
        """Recorded requests (optionally of one model), for explaining misses."""
        sql, args = "SELECT key, request, NULL, NULL FROM entries", tuple[str, ...]()
        if model is not None:
            sql, args = sql + " WHERE model = ?", (model,)
        return [record.request for record in self._read(sql + " ORDER BY key", args)]

    def records(self) -> list[CacheRecord]:
        """Every readable record, ordered by key (unreadable ones are skipped with a warning)."""
        sql = "SELECT key, request, response, origin FROM entries ORDER BY key"
        return list(self._read(sql, ()))

    def stats(self) -> CacheStats:
        """Entry counts by model and purpose, and the file size."""
        self._behind.flush()
        with self._guard():
            total = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            models = self._db.execute("SELECT model, COUNT(*) FROM entries GROUP BY model")
            by_model = dict(models.fetchall())
            purposes = self._db.execute("SELECT purpose, COUNT(*) FROM entries GROUP BY purpose")
            by_purpose = dict(purposes.fetchall())
            blobs = self._db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]
            never_served = self._db.execute(NEVER_SERVED_SQL, UNSERVED_STOPS).fetchone()[0]
            origins = self._db.execute(
                f"SELECT {ORIGIN_SOURCE_SQL}, COUNT(*) FROM entries GROUP BY 1"
            )
            by_origin = dict(origins.fetchall())
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return CacheStats(
            path=str(self.path),
            entries=total,
            blobs=blobs,
            never_served=never_served,
            bytes=size,
            by_model=by_model,
            by_purpose=by_purpose,
            by_origin=by_origin,
        )

    def clear(self) -> int:
        """Delete every entry and blob; returns how many entries there were."""
        self._behind.flush()
        with self._guard():
            count = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            self._db.execute("DELETE FROM entries")
            self._db.execute("DELETE FROM blobs")
        return count

    def export_dir(self, directory: Path) -> tuple[int, int]:
        """Write every readable record as `<purpose>-<model>-<digest>.json`; (how many were
        written, how many entries were unreadable and skipped: the folder lacks them, so a
        replay of it misses their requests)."""
        directory.mkdir(parents=True, exist_ok=True)
        records = self.records()  # writes still queued are stored first
        with self._guard():
            (stored,) = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()
        for record in records:
            (directory / record.file_name()).write_text(record_json(record), encoding="utf-8")
        return len(records), stored - len(records)

    def import_dir(self, directory: Path, *, replace: bool = False) -> ImportReport:
        """Store every `*.json` record in `directory` (read strictly: `load_record_files`) in
        one transaction. A record whose request the cache already answers differently is a
        `SpecError` naming its file, and nothing is stored, unless `replace` (its answer then
        replaces the cache's); an entry never served (truncated, refused, empty, unreadable) is
        replaced all the same. Each stored entry keeps the origin its record says (of unknown
        origin if none), with the file it came from and the time of this import."""
        named = load_record_files(directory)
        now = time.time()
        self._behind.flush()
        report, writes, differing = ImportReport(), list[PendingWrite](), list[Path]()
        seen: set[str] = set()  # files that say the same (`load_record_files` refused others)
        for path, record in named:
            if record.key in seen:
                report.unchanged += 1
                continue
            seen.add(record.key)
            held = self.lookup(record.key)  # an unreadable entry is a miss, replaced by `_write`
            if held is None:
                report.added += 1
            elif held.response.same_answer(record.response):
                report.unchanged += 1
                continue
            elif replace or not cacheable(held.response):
                report.replaced += 1
            else:
                differing.append(path)
                continue
            origin = (record.origin or UNKNOWN).imported(path, now)
            report.unknown_origin += origin.source == "unknown"
            imported = record.model_copy(update={"origin": origin})
            writes.append(_pending(imported, replace=held is not None, checked=False))
        if differing:
            raise _differing_error(self.path, differing)
        if writes:
            self._write(writes)
        return report

    def _read(self, sql: str, args: tuple[Any, ...]) -> Iterator[CacheRecord]:
        self._behind.flush()
        with self._guard():
            rows = self._db.execute(sql, args).fetchall()
        for key, request, response, origin in rows:
            try:
                yield CacheRecord(
                    key=key,
                    request=self._request(json.loads(request)),
                    response=LLMResponse.model_validate_json(response or "{}"),
                    origin=_origin(origin),
                )
            except (ValueError, KeyError):
                self.forget(key, "unreadable rows are skipped")

    def _request(self, data: dict[str, Any]) -> LLMRequest:
        digests = [
            item["blob"] for item in [*data.get("system", []), *_parts(data)] if "blob" in item
        ]
        blobs: dict[str, str] = {}
        with self._guard():
            for digest in digests:
                row = self._db.execute("SELECT data FROM blobs WHERE digest = ?", (digest,))
                found = row.fetchone()
                if found is not None:
                    blobs[digest] = found[0]
        return LLMRequest.from_storage(data, blobs)

    def _prepare(self) -> None:
        """Create, or migrate in one transaction, the tables of FORMAT_VERSION."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                row[0]
                for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if version > FORMAT_VERSION:
                raise CacheError(
                    self.path,
                    f"it has cache format {version}, this judgegen reads up to {FORMAT_VERSION} "
                    "(upgrade judgegen)",
                )
            if version == 2:
                self._db.execute(
                    "ALTER TABLE entries ADD COLUMN checked INTEGER NOT NULL DEFAULT 0"
                )
            if version in (2, 3):
                self._db.execute("ALTER TABLE entries ADD COLUMN origin TEXT")
                self._db.execute("UPDATE entries SET origin = ?", (_BEFORE_ORIGINS_JSON,))
            if version < FORMAT_VERSION:
                for statement in SCHEMA_SQL.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                if "responses" in tables:
                    self._migrate_v1()
                self._db.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _migrate_v1(self) -> None:
        """Re-key every format-1 row (whole requests) into entries and blobs; drop the old table."""
        rows = self._db.execute("SELECT key, request, response, created FROM responses").fetchall()
        for old_key, request_json, response_json, created in rows:
            try:
                request = LLMRequest.model_validate_json(request_json)
                LLMResponse.model_validate_json(response_json)
            except ValueError:
                self.forget(old_key, "unreadable rows were dropped while upgrading its format")
                continue
            data, blobs = request.storage_form()
            for digest, blob in blobs.items():
                self._db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, blob))
            self._db.execute(
                f"INSERT OR IGNORE INTO entries {ENTRY_COLUMNS}",
                (
                    request.cache_key(),
                    request.provider,
                    request.model,
                    request.metadata.purpose,
                    json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                    response_json,
                    created,
                    0,
                    _BEFORE_ORIGINS_JSON,
                ),
            )
        self._db.execute("DROP TABLE responses")
        log.info(
            "response cache %s upgraded to format %d (%d rows)",
            self.path,
            FORMAT_VERSION,
            len(rows),
        )

    @contextmanager
    def _guard(self, lock: threading.Lock | None = None) -> Iterator[None]:
        """Serialize use of a connection (the reader's by default); a damaged file, or a
        read or write that fails, becomes a `CacheError` naming the file and the fix."""
        with lock or self._lock, sqlite_errors(CacheError, self.path, CACHE_ACCESS_FIX):
            yield


def _differing_error(path: Path, files: list[Path]) -> SpecError:
    """The refusal of an import that would keep the cache's answers over different ones."""
    more = f" (and {len(files) - 1} more: {', '.join(f.name for f in files[1:6])})"
    return SpecError(
        str(files[0]),
        "response",
        f"it answers a request the cache {path} already answers, differently"
        f"{more if len(files) > 1 else ''}; nothing was imported",
        "pass --replace to store the imported answers instead, or delete those files to keep "
        "the cache's",
    )


def _pending(record: CacheRecord, replace: bool, checked: bool) -> PendingWrite:
    origin = record.origin or UNKNOWN
    return PendingWrite(record.key, record.request, record.response, replace, checked, origin)


_BEFORE_ORIGINS_JSON = BEFORE_ORIGINS.model_dump_json()


def _origin(text: str | None) -> RecordOrigin:
    """An entry's stored origin; a missing or unreadable one is of unknown origin."""
    if not text:
        return UNKNOWN
    try:
        return RecordOrigin.model_validate_json(text)
    except ValueError:
        return UNKNOWN


def _parts(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for message in data.get("messages", []) for part in message.get("content", [])]


def _check_file(path: Path) -> None:
    """Refuse a file that is not SQLite, or shorter than its header says (truncated)."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(SQLITE_MAGIC):
        raise CacheError(path, "it is not an SQLite database")
    if len(header) < 100:
        raise CacheError(path, "it is truncated (incomplete header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_valid = header[24:28] == header[92:96]
    wal = path.with_name(path.name + "-wal")
    pending = wal.is_file() and wal.stat().st_size > 0  # a checkpoint may still extend the file
    if header_valid and pages and not pending and path.stat().st_size < pages * page_size:
        raise CacheError(
            path, f"it is truncated ({path.stat().st_size} bytes of {pages * page_size})"
        )
