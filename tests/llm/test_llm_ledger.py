"""The usage ledger: one JSON line per request and the end-of-command summary line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.llm.conftest import verify_request
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger, UsageSummary
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.pricing import PriceTable
from toolkit.llm.scripted import ScriptedProvider

VERDICT = '{"reasoning": "r", "result": true}'


def fixed(request: LLMRequest) -> LLMResponse:
    usage = Usage(input_tokens=1000, output_tokens=100)
    return LLMResponse(text=VERDICT, parsed=json.loads(VERDICT), model=request.model, usage=usage)


async def test_each_request_appends_one_json_line(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    client = LLMClient(ScriptedProvider(fixed), ledger=ledger)
    await client.complete(verify_request("a"))
    await client.complete(verify_request("b"))
    rows = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    assert rows[0]["purpose"] == "verify" and rows[0]["model"] == "o4-mini"
    assert rows[0]["input_tokens"] == 1000 and rows[0]["cache_hit"] is False
    assert set(rows[0]) >= {"cost_usd", "latency_s", "task_id", "version"}


def test_summary_line_has_the_documented_shape() -> None:
    summary = UsageSummary(
        calls=412,
        cached=388,
        input_tokens=1_200_000,
        output_tokens=80_000,
        cost_usd=0.94,
        saved_usd=6.10,
    )
    assert (
        summary.line() == "LLM: 412 calls, 388 cached, 1.2M in / 80k out tokens, $0.94; saved $6.10"
    )


async def test_unpriced_models_are_named_in_the_summary() -> None:
    client = LLMClient(ScriptedProvider(fixed))
    await client.complete(verify_request(model="my-local-model"))
    assert "no price for my-local-model" in client.summary_line()


def test_price_table_matches_the_longest_prefix() -> None:
    table = PriceTable()
    assert table.price_for("claude-sonnet-4-5-20250929") == table.prices["claude-sonnet-4"]
    assert table.price_for("gpt-4o-mini-2024-07-18") == table.prices["gpt-4o-mini"]
    assert table.price_for("unknown") is None
