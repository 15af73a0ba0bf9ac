"""The replay provider: answers only from recorded responses, never from a model.

Recordings are a directory of exported cache records (`judgegen cache export`) or a cache
SQLite file. A request matches a recording when everything but the provider name is equal,
so a run recorded against `anthropic` replays as-is; two recordings that match one request
but answer it differently (recorded against two providers, or a file copied and edited) are
refused when loaded, never one of them served. A truncated or refused recording is an
error, as the live call was. A miss raises `ReplayMiss` naming the
purpose, the key and a unified diff against the nearest recording (of the same model and
purpose when there is one). A replayed answer carries the origin its record says
(`LLMResponse.origin`; `unknown` if it says none), which the cache stores it with: a recording
made live stays live, a scripted one scripted. A replay is free all the same: it costs and
saves nothing (`pricing.is_free`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolkit.errors import LLMError, ReplayMiss
from toolkit.llm.cache import ResponseCache
from toolkit.llm.diff import miss_message
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.origin import UNKNOWN
from toolkit.llm.provider import REFUSED_STOPS, TRUNCATED_STOPS, answer_problems
from toolkit.llm.records import CacheRecord, load_record_files, one_answer_each
from toolkit.util.hashing import sha256_text


def replay_key(request: LLMRequest) -> str:
    """The cache key with the provider name left out."""
    return request.cache_key(provider="")


def recordings_name(path: Path, records: list[CacheRecord]) -> str:
    """`replay:/abs/path recorded=<digest>`: where the recordings are and a hash of what they
    answer, so re-recording a directory in place renames its replays."""
    answers = sorted(f"{replay_key(r.request)} {r.response.model_dump_json()}" for r in records)
    digest = sha256_text("\n".join(answers)).removeprefix("sha256:")[:16]
    return f"replay:{path.resolve()} recorded={digest}"


def _replay_key(record: CacheRecord) -> str:
    return replay_key(record.request)


class ReplayProvider:
    """`Provider` that serves recorded responses and fails loudly on anything else. `name` is
    its identity in cache keys and ledger rows: `from_path` names the recordings by place and
    content (`recordings_name`), so answers cached while replaying one set, or an earlier
    recording of the same directory, never serve another."""

    def __init__(
        self,
        records: Sequence[CacheRecord],
        name: str = "replay",
        sources: Sequence[str] | None = None,
    ) -> None:
        """`sources` say where each record came from, for the error naming two that answer
        one request differently (`SpecError`); by default their export file names."""
        self.name = name
        where = sources or [record.file_name() for record in records]
        self._records = one_answer_each(zip(where, records, strict=True), _replay_key)

    @classmethod
    def from_path(cls, path: Path | str) -> ReplayProvider:
        """Load recordings from an export directory or a cache SQLite file."""
        path = Path(path)
        if path.is_dir():
            named = load_record_files(path)
            records = [record for _, record in named]
            sources = [str(file) for file, _ in named]
        elif path.is_file():
            cache = ResponseCache(path)
            try:
                records = cache.records()
            finally:
                cache.close()
            sources = [f"{path} entry {record.key}" for record in records]
        else:
            raise ReplayMiss(f"replay recordings not found at {path}")
        return cls(records, recordings_name(path, records), sources)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The recorded response for `request`, with the origin its record says, or
        `ReplayMiss` with a diff."""
        record = self._records.get(replay_key(request))
        if record is None:
            recorded = [
                r.request.model_copy(update={"provider": request.provider})
                for r in self._records.values()
            ]
            raise ReplayMiss(miss_message("replay miss", request, recorded))
        stop = record.response.stop_reason
        if stop in TRUNCATED_STOPS | REFUSED_STOPS:
            raise LLMError(
                f"the recorded answer to {request.metadata.purpose} request "
                f"{request.cache_key()} is incomplete (stop reason {stop}); re-record it",
                kind="truncated" if stop in TRUNCATED_STOPS else "refused",
            )
        problems = answer_problems(request, record.response)
        if problems:
            raise LLMError(
                f"the recorded answer to {request.metadata.purpose} request "
                f"{request.cache_key()} does not match its schema: {'; '.join(problems)}; "
                "re-record it",
                kind="invalid_output",
            )
        origin = record.origin or UNKNOWN
        return record.response.model_copy(update={"cache_hit": False, "origin": origin})

    def classify(self, error: BaseException) -> LLMError:
        """Replay has no SDK; anything unexpected is reported as it is."""
        return LLMError(f"replay failed: {error}", kind="unknown")

    def __len__(self) -> int:
        return len(self._records)
