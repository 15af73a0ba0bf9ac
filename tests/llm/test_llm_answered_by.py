"""Each ledger row records the model that answered (`answered_by`, the response's `model`)
next to the one asked for: an alias such as `o4-mini` is answered by the dated snapshot the
vendor points it at, and re-pointed from time to time."""

from __future__ import annotations

import json
from pathlib import Path

from tests.llm.conftest import verify_request
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, openai_completion
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import LEDGER_VERSION, Ledger, LedgerRow
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.pricing import PriceTable

GOOD = '{"reasoning": "It is.", "result": true}'
SNAPSHOT = "o4-mini-2025-04-16"


def cached_client(stub: StubAPI, tmp_path: Path) -> LLMClient:
    """The real OpenAI SDK against the stub, behind a response cache, with a ledger file."""
    provider = OpenAIProvider(base_url=stub.url("/v1"), max_retries=0, timeout_s=5.0)
    return LLMClient(
        provider,
        cache=ResponseCache(tmp_path / "cache.sqlite"),
        cache_mode=CacheMode.RW,
        ledger=Ledger(tmp_path / "ledger.jsonl", PriceTable()),
    )


def ledger_rows(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]


async def test_a_row_records_the_snapshot_that_answered_the_alias_asked_for(
    stub: StubAPI, tmp_path: Path
) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model=SNAPSHOT)))
    async with cached_client(stub, tmp_path) as client:
        await client.complete(verify_request())
    (row,) = ledger_rows(tmp_path)
    assert (row["model"], row["answered_by"]) == ("o4-mini", SNAPSHOT)
    assert row["version"] == LEDGER_VERSION == 4


async def test_a_cache_hit_records_the_snapshot_that_gave_the_stored_answer(
    stub: StubAPI, tmp_path: Path
) -> None:
    """Asked again after the alias moved, the cache replays the old snapshot's answer: its
    row names that snapshot, not whatever the alias points at now."""
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model=SNAPSHOT)))
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model="o4-mini-2025-09-30")))
    async with cached_client(stub, tmp_path) as client:
        await client.complete(verify_request())
        await client.complete(verify_request())
    paid, hit = ledger_rows(tmp_path)
    assert (paid["cache_hit"], paid["answered_by"]) == (False, SNAPSHOT)
    assert (hit["cache_hit"], hit["answered_by"]) == (True, SNAPSHOT)
    assert len(stub.calls(OPENAI_PATH)) == 1


def test_rows_of_a_ledger_written_before_the_field_still_read() -> None:
    old = (
        '{"version": 1, "ts": 1.0, "purpose": "verify", "task_id": "demo", "provider": "openai",'
        ' "model": "o4-mini", "input_tokens": 10, "cache_hit": false, "error": null}'
    )
    row = LedgerRow.model_validate_json(old)
    assert (row.version, row.model, row.answered_by) == (1, "o4-mini", None)
