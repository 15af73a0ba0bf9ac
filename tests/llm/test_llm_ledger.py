"""The usage ledger: one JSON line per request and the end-of-command summary line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from toolkit.errors import LedgerError, LLMError
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


def record_mixed(ledger: Ledger) -> None:
    """A paid call, a cache hit, a failed call with billed tokens, and an unpriced model."""
    paid = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=50)
    ledger.record(ledger.row_for(verify_request("a"), paid, hit=False, latency=0.1, error=None))
    ledger.record(ledger.row_for(verify_request("a"), paid, hit=True, latency=0.0, error=None))
    failed = Usage(input_tokens=700)
    ledger.record(
        ledger.row_for(verify_request("b"), failed, hit=False, latency=0.2, error="server")
    )
    local = verify_request(model="my-local-model")
    ledger.record(ledger.row_for(local, paid, hit=False, latency=0.1, error=None))


def summary_of(rows: list[dict]) -> UsageSummary:
    """What the summary must say of these rows, computed from the rows themselves."""
    paid = [row for row in rows if not row["cache_hit"]]
    return UsageSummary(
        calls=len(rows),
        cached=len(rows) - len(paid),
        errors=sum(1 for row in rows if row["error"]),
        input_tokens=sum(
            r["input_tokens"] + r["cache_read_tokens"] + r["cache_write_tokens"] for r in paid
        ),
        output_tokens=sum(row["output_tokens"] for row in paid),
        cost_usd=sum(row["cost_usd"] for row in paid),
        saved_usd=sum(row["saved_usd"] for row in rows),
        estimated_usd=sum(row["estimated_usd"] for row in rows),
        unpriced_models=["my-local-model"],
    )


def test_the_summary_adds_up_the_rows_in_memory() -> None:
    ledger = Ledger(None, PriceTable())
    record_mixed(ledger)
    assert len(ledger.rows) == 4
    assert ledger.summary() == summary_of([row.model_dump() for row in ledger.rows])


def test_a_ledger_with_a_file_keeps_its_totals_not_its_rows(tmp_path: Path) -> None:
    """The file is the record: a long run must not also hold every row (~1 KB) in memory."""
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, PriceTable())
    record_mixed(ledger)
    assert ledger.rows == []
    written = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(written) == 4
    assert ledger.summary() == summary_of(written)


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


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-opus-4-1-20250805", "claude-opus-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("claude-sonnet-9", "claude-sonnet"),
    ],
)
def test_versions_and_snapshots_of_a_family_take_its_price(model: str, family: str) -> None:
    table = PriceTable()
    assert table.price_for(model) == table.prices[family]


@pytest.mark.parametrize("model", ["gpt-5-pro", "o3-pro-2025-06-10", "gpt-4o-audio-preview"])
def test_a_named_tier_of_a_model_is_not_priced_as_its_base_model(model: str) -> None:
    """o3-pro lists at ten times o3's price: charged as o3, a budget cap overspends tenfold."""
    assert PriceTable().price_for(model) is None


@pytest.mark.parametrize(
    ("model", "input_usd", "output_usd", "read_usd", "write_usd"),
    [
        ("claude-opus-4-6", 5.0, 25.0, 0.50, 6.25),
        ("claude-opus-4-8", 5.0, 25.0, 0.50, 6.25),
        ("claude-opus-5-5", 4.0, 20.0, 0.20, 5.0),
        ("claude-sonnet-5", 2.0, 10.0, 0.20, 2.50),
        ("claude-sonnet-5-5", 2.0, 10.0, 0.20, 2.50),
        ("gpt-5-nano-2025-08-07", 0.05, 0.40, 0.005, None),
    ],
)
def test_a_model_is_priced_at_its_own_list_price_not_an_older_relatives(
    model: str, input_usd: float, output_usd: float, read_usd: float, write_usd: float | None
) -> None:
    """Longest-prefix matching priced Opus 4.6-4.8 as Opus 4 (3x), Sonnet 5.x as Sonnet 4
    (1.5x) and gpt-5-nano as gpt-5 (25x): each needs its own row."""
    price = PriceTable().price_for(model)
    assert price is not None
    assert (price.input, price.output, price.cache_read) == (input_usd, output_usd, read_usd)
    assert price.cache_write == write_usd


async def test_a_reask_that_fails_in_transport_still_charges_the_invalid_answer_before_it() -> None:
    """The first answer was not JSON (paid), the re-ask timed out: the ledger row, the budget
    and the error all carry the first answer's tokens."""
    answers: list[str] = []

    def invalid_then_timeout(request: LLMRequest) -> LLMResponse:
        answers.append(request.prompt_text())
        if len(answers) == 1:
            usage = Usage(input_tokens=1000, output_tokens=100)
            return LLMResponse(text="not json", model=request.model, usage=usage)
        raise TimeoutError("read timed out")

    client = LLMClient(
        ScriptedProvider(invalid_then_timeout), ledger=Ledger(None, PriceTable()), budget_usd=10
    )
    with pytest.raises(LLMError) as caught:
        await client.complete(verify_request("a"))
    [row] = client.ledger.rows
    assert (row.input_tokens, row.output_tokens) == (1000, 100) and row.error == "unknown"
    assert caught.value.usage == Usage(input_tokens=1000, output_tokens=100)
    assert caught.value.attempts == 2
    assert row.cost_usd > 0 and row.cost_usd == client.budget.spent_usd == caught.value.cost_usd


FULL_DISK = Path("/dev/full")  # every write to it fails with ENOSPC, as a full disk does


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full")
async def test_a_ledger_on_a_full_disk_fails_the_call_naming_the_file_and_the_fix() -> None:
    ledger = Ledger(FULL_DISK, PriceTable())
    client = LLMClient(ScriptedProvider(fixed), ledger=ledger)
    with pytest.raises(LedgerError, match="No space left on device") as raised:
        await client.complete(verify_request("a"))
    assert raised.value.kind == "ledger"
    assert str(FULL_DISK) in str(raised.value) and "JUDGEGEN_LEDGER_PATH" in str(raised.value)
    assert ledger.summary().calls == 1  # the paid call is still counted in the summary line


def test_a_ledger_whose_folder_cannot_be_made_raises_a_ledger_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the folder should be")
    ledger = Ledger(tmp_path / "taken" / "ledger.jsonl", PriceTable())
    row = ledger.row_for(verify_request("a"), Usage(), hit=False, latency=0.0, error=None)
    with pytest.raises(LedgerError, match="taken"):
        ledger.record(row)
