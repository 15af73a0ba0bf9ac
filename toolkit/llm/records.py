"""Recorded exchanges and their file form: what `judgegen cache export` writes, `cache import`
and `--provider replay:DIR` read, and how `recordings/` and the test fixtures are kept.

Invariant: a record file is read only as it was written, or not at all (a `SpecError` naming
it): no field this judgegen does not know (a misspelt `sample_idx` would leave the request
answering sample 0), no version newer than it reads, and a request that still hashes to its
key (one changed after its answer was recorded would take that answer to another request;
a key of an older key version is derived again). One folder holds one answer per request: two
files that answer the same request differently are refused, never one picked in silence. A
record says where its answer came from (`origin`, `toolkit.llm.origin`); one that does not (a
hand-written file, or one exported before origins were kept) is read as of unknown origin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolkit.errors import SpecError
from toolkit.llm.models import KEY_VERSION, SCHEMA_VERSION, LLMRequest, LLMResponse
from toolkit.llm.origin import RecordOrigin

RECORD_VERSION = 2
"""2: `origin`, where the answer came from (records of version 1 have none: of unknown origin)."""
_KEY_PREFIX = re.compile(r"sha256-v(\d+):")
REFRESH_FIX = "record it again (a live or scripted run with --cache-mode rw, then cache export)"


class CacheRecord(BaseModel):
    """One stored exchange: the full request (with metadata), the provider's response and
    where that response came from."""

    version: int = RECORD_VERSION
    key: str = Field(description="LLMRequest.cache_key() of `request`.")
    request: LLMRequest
    response: LLMResponse
    origin: RecordOrigin | None = Field(
        default=None,
        description="Where the answer came from; None: not said (a hand-written record, or one "
        "exported before origins were kept), stored and served as of unknown origin.",
    )

    @classmethod
    def of(
        cls,
        request: LLMRequest,
        response: LLMResponse,
        key: str | None = None,
        origin: RecordOrigin | None = None,
    ) -> CacheRecord:
        """The record for an exchange, with the response's per-call flags reset.

        Pass `key` when the caller already has it: hashing a request with images is costly.
        """
        stored = response.model_copy(update={"cache_hit": False, "origin": None})
        # Made of validated models: validating them again is all the constructor would add.
        return cls.model_construct(
            key=key or request.cache_key(), request=request, response=stored, origin=origin
        )

    def file_name(self) -> str:
        """Stable, readable export name: purpose, model and the start of the key digest."""
        digest = self.key.split(":")[-1][:16]
        return f"{self.request.metadata.purpose}-{_slug(self.request.model)}-{digest}.json"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60] or "model"


def record_json(record: CacheRecord) -> str:
    """The reviewable file form of a record: sorted keys, two-space indent, final newline."""
    data = record.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def load_records(directory: Path) -> list[CacheRecord]:
    """Read a directory of exported records (`load_record_files`), in file-name order."""
    return [record for _, record in load_record_files(directory)]


def load_record_files(directory: Path) -> list[tuple[Path, CacheRecord]]:
    """Every `*.json` record in `directory` with its file, keyed by its request; a file that
    is malformed, or answers a request another file answers differently, is a `SpecError`."""
    if not directory.is_dir():
        raise SpecError(
            str(directory), "-", "not a directory", "pass a directory of exported records"
        )
    named = [(path, _load_record(path)) for path in sorted(directory.glob("*.json"))]
    one_answer_each(((str(path), record) for path, record in named), lambda r: r.key)
    return named


def one_answer_each(
    named: Iterable[tuple[str, CacheRecord]], key: Callable[[CacheRecord], str]
) -> dict[str, CacheRecord]:
    """The records by `key`, the first of those that say the same; two records under one key
    that answer differently are a `SpecError` naming both (where each came from)."""
    found: dict[str, tuple[str, CacheRecord]] = {}
    for source, record in named:
        first = found.setdefault(key(record), (source, record))
        if first[1] is not record and not first[1].response.same_answer(record.response):
            raise SpecError(
                source,
                "response",
                f"it answers the {record.request.metadata.purpose} request that {first[0]} "
                "answers, differently (same model, prompt, schema and sample)",
                "keep the one that is right and delete the other",
            )
    return {name: record for name, (_, record) in found.items()}


def _load_record(path: Path) -> CacheRecord:
    """`path` read strictly (see the module's invariant), keyed by its request."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        record = CacheRecord.model_validate(data, extra="forbid")
    except ValueError as exc:
        raise SpecError(str(path), "-", f"not a cache record ({exc})", "re-export it") from None
    newest = {
        "version": (record.version, RECORD_VERSION),
        "request.version": (record.request.version, SCHEMA_VERSION),
        "response.version": (record.response.version, SCHEMA_VERSION),
    }
    for field, (version, known) in newest.items():
        if version > known:
            raise SpecError(
                str(path),
                field,
                f"version {version} was written by a newer judgegen (this one reads up to {known})",
                "upgrade judgegen",
            )
    return record.model_copy(update={"key": _checked_key(path, record)})


def _checked_key(path: Path, record: CacheRecord) -> str:
    """The request's key; the file's own must be it, unless an older key version wrote it."""
    key = record.request.cache_key()
    match = _KEY_PREFIX.match(record.key)
    version = int(match.group(1)) if match else None
    if version is not None and version < KEY_VERSION:
        return key
    if version is None or version > KEY_VERSION:
        problem = f"'{record.key[:24]}' is not a key this judgegen derives (v{KEY_VERSION} keys)"
        raise SpecError(str(path), "key", problem, "upgrade judgegen, or re-export the record")
    if record.key != key:
        raise SpecError(
            str(path),
            "key",
            "its request does not hash to its key: the request was changed after its answer "
            "was recorded, so the answer may belong to another request",
            REFRESH_FIX,
        )
    return key
