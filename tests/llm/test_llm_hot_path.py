"""The per-call work of the LLM layer: each answer validated once, each schema compiled once,
each model priced once, the ledger file opened once and never losing a row, answers stored by
group commit — and none of it weakening validation or the cache's durability."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.sqlite_faults import FailingConnection
from tests.llm.conftest import VERDICT_SCHEMA, verify_request
from toolkit.errors import CacheError, LLMError
from toolkit.llm import schema as schema_module
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.pricing import ModelPrice, PriceTable
from toolkit.llm.scripted import ScriptedProvider

REPO = Path(__file__).resolve().parents[2]
GOOD = {"reasoning": "r", "result": True}


def counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Replace `module.name` with a wrapper that counts its calls; returns the counter."""
    calls = [0]
    original = getattr(module, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


async def test_a_fresh_answer_is_validated_once_on_its_way_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.llm import provider

    checks = counting(monkeypatch, provider, "output_problems")
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD),
        cache=ResponseCache(tmp_path / "c.sqlite"),
        cache_mode=CacheMode.RW,
    )
    await client.complete(verify_request("a"))
    await client.aclose()
    assert checks[0] == 1


class UncheckedProvider:
    """A provider that does not validate its own output (as a third-party one may not)."""

    name = "unchecked"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(text='{"result": "yes"}', parsed={"result": "yes"}, model=request.model)

    def classify(self, error: BaseException) -> LLMError:
        return LLMError(str(error), kind="unknown")


async def test_an_answer_no_layer_validated_is_still_rejected_and_not_cached(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(UncheckedProvider(), cache=cache, cache_mode=CacheMode.RW)
    with pytest.raises(LLMError) as caught:
        await client.complete(verify_request("a"))
    assert caught.value.kind == "invalid_output"
    await client.aclose()
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


def test_a_mark_of_validation_holds_only_for_the_schema_it_was_checked_against() -> None:
    response = LLMResponse(parsed={"result": "yes"})
    response.mark_checked(VERDICT_SCHEMA)
    assert response.checked_against(VERDICT_SCHEMA)
    assert not response.checked_against(dict(VERDICT_SCHEMA))
    assert response.model_copy(update={"cache_hit": True}).checked_against(VERDICT_SCHEMA)
    assert "checked" not in response.model_dump_json()


def test_a_shared_schema_is_compiled_once_however_often_it_validates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    builds = counting(monkeypatch, schema_module, "strict_schema")
    schema_module._compiled.cache_clear()
    for value in range(50):
        assert schema_module.output_problems({"n": value}, schema) == []
    assert schema_module.output_problems({"n": "x"}, schema) != []
    assert builds[0] == 1


def test_an_equal_schema_in_another_object_shares_the_compiled_validator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds = counting(monkeypatch, schema_module, "strict_schema")
    schema_module._compiled.cache_clear()
    for _ in range(3):
        fresh = {"type": "object", "properties": {"m": {"type": "string"}}}
        assert schema_module.output_problems({"m": 1}, fresh) != []
    assert builds[0] == 1


def test_each_model_is_priced_by_prefix_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkit.llm import pricing

    scans = counting(monkeypatch, pricing, "_is_family")
    table = PriceTable()
    usage = Usage(input_tokens=1_000_000)
    first = table.cost("o4-mini-2025-04-16", usage)
    scanned = scans[0]
    for _ in range(100):
        assert table.cost("o4-mini-2025-04-16", usage) == first
    assert scans[0] == scanned
    assert first == table.prices["o4-mini"].input


def test_a_copied_price_table_charges_its_own_prices() -> None:
    table = PriceTable()
    old = table.price_for("o4-mini")
    cheaper = ModelPrice(input=0.01, output=0.02, cache_read=0.0)
    copied = table.model_copy(update={"prices": {**table.prices, "o4-mini": cheaper}})
    assert copied.price_for("o4-mini") == cheaper
    assert table.price_for("o4-mini") == old


async def test_the_ledger_file_is_opened_once_for_many_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens = counting(monkeypatch, Path, "open")
    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    client = LLMClient(ScriptedProvider(lambda r: GOOD), ledger=ledger)
    await asyncio.gather(*(client.complete(verify_request(str(i))) for i in range(20)))
    await client.aclose()
    assert opens[0] == 1
    assert len((tmp_path / "ledger.jsonl").read_text().splitlines()) == 20


async def test_a_closed_ledger_reopens_and_appends(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    client = LLMClient(ScriptedProvider(lambda r: GOOD), ledger=ledger)
    await client.complete(verify_request("a"))
    await client.aclose()
    await client.complete(verify_request("b"))
    ledger.close()
    assert len((tmp_path / "ledger.jsonl").read_text().splitlines()) == 2


KILLED_WRITER = """
import asyncio, os, signal, sys
from pathlib import Path
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger
from toolkit.llm.pricing import ModelPrice, PriceTable
from toolkit.llm.scripted import ScriptedProvider
from tests.llm.conftest import verify_request

async def main():
    ledger = Ledger(Path(sys.argv[1]), PriceTable())
    client = LLMClient(ScriptedProvider(lambda r: {"reasoning": "r", "result": True}), ledger=ledger)
    for i in range(int(sys.argv[2])):
        await client.complete(verify_request(str(i)))
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no exit handlers, no buffer flush

asyncio.run(main())
"""


def test_a_killed_process_loses_no_ledger_row(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(path), "37"], env=env, cwd=REPO, check=False
    )
    assert done.returncode == -signal.SIGKILL
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 37 and all(row["purpose"] == "verify" for row in rows)


async def test_concurrent_misses_are_all_on_disk_when_their_calls_return(tmp_path: Path) -> None:
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD),
        cache=ResponseCache(tmp_path / "c.sqlite"),
        cache_mode=CacheMode.RW,
    )
    await asyncio.gather(*(client.complete(verify_request(str(i))) for i in range(30)))
    other = ResponseCache(tmp_path / "c.sqlite")  # another process's view, before any close
    assert other.stats().entries == 30
    other.close()
    await client.aclose()


async def test_an_answer_being_stored_is_already_served_as_a_hit(tmp_path: Path) -> None:
    provider = ScriptedProvider(lambda r: GOOD)
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(provider, cache=cache, cache_mode=CacheMode.RW)
    first = await client.complete(verify_request("a"))
    again = await client.complete(verify_request("a"))
    assert not first.cache_hit and again.cache_hit and len(provider.calls) == 1
    await client.aclose()


@pytest.fixture
def unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ResponseCache:
    """A cache whose every store fails the way a full or broken disk does."""
    cache = ResponseCache(tmp_path / "c.sqlite")

    def broken(db: object, item: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")  # as SQLite reports it

    monkeypatch.setattr(cache, "_insert", broken)
    return cache


async def test_a_failed_store_fails_the_call_that_paid_for_the_answer(
    unwritable_cache: ResponseCache,
) -> None:
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD), cache=unwritable_cache, cache_mode=CacheMode.RW
    )
    with pytest.raises(CacheError, match="disk I/O error"):
        await client.complete(verify_request("a"))
    await client.aclose()


async def test_an_answer_paid_for_but_not_stored_still_leaves_its_ledger_row(
    tmp_path: Path, unwritable_cache: ResponseCache
) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD),
        cache=unwritable_cache,
        cache_mode=CacheMode.RW,
        ledger=ledger,
    )
    with pytest.raises(CacheError):
        await client.complete(verify_request("a"))
    await client.aclose()
    rows = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    assert rows[0]["error"] == "cache"
    assert rows[0]["input_tokens"] > 0 and rows[0]["output_tokens"] > 0


async def test_an_answer_paid_for_but_not_stored_is_charged_to_the_meter_as_the_ledger_counts_it(
    unwritable_cache: ResponseCache,
) -> None:
    """The evaluation's usage meter, the ledger and the budget count the unstored answer alike."""
    from toolkit.runner.metering import Meter, MeteredClient

    client = LLMClient(
        ScriptedProvider(lambda r: GOOD),
        cache=unwritable_cache,
        cache_mode=CacheMode.RW,
        ledger=Ledger(None, PriceTable()),
        budget_usd=10.0,
    )
    meter = Meter()
    with pytest.raises(CacheError) as raised:
        await MeteredClient(client, meter).complete(verify_request("a"))
    await client.aclose()
    [row] = client.ledger.rows
    assert row.cost_usd > 0 and raised.value.cost_usd == row.cost_usd == client.budget.spent_usd
    charged = meter.usage
    assert (charged.llm_calls, charged.input_tokens, charged.output_tokens) == (
        1,
        row.input_tokens,
        row.output_tokens,
    )
    assert charged.cost_usd == row.cost_usd


async def test_a_cache_that_cannot_be_read_fails_the_call_unpaid_naming_the_file_and_fix(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache._db.close()
    cache._db = FailingConnection()  # type: ignore[assignment]
    provider = ScriptedProvider(lambda r: GOOD)
    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    client = LLMClient(provider, cache=cache, cache_mode=CacheMode.RW, ledger=ledger)
    with pytest.raises(CacheError, match="disk I/O error") as raised:
        await client.complete(verify_request("a"))
    assert str(tmp_path / "c.sqlite") in str(raised.value) and "free space" in str(raised.value)
    assert provider.calls == []  # nothing was paid for
    (row,) = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert row["error"] == "cache" and row["cost_usd"] == 0
    await client.aclose()


def test_sending_a_schema_does_not_wait_for_the_validator_library() -> None:
    probe = (
        "import sys; from toolkit.llm.schema import sent_schema; "
        "strict = sent_schema({'type': 'object', 'properties': {'a': {'type': 'string'}}}); "
        "print(strict['required'], 'jsonschema_rs' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["['a']", "False"]


async def test_a_page_and_screenshot_are_hashed_once_for_the_key_and_the_cache_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.llm import models

    hashed: list[int] = []
    original = models.sha256_text

    def spy(text: str) -> str:
        if len(text) >= models.BLOB_MIN_CHARS:
            hashed.append(len(text))
        return original(text)

    monkeypatch.setattr(models, "sha256_text", spy)
    page, screenshot = "Opening hours. " * 2000, "A" * 50_000
    request = verify_request(page).model_copy(
        update={"messages": [models.Message.user(page, [screenshot])]}
    )
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD),
        cache=ResponseCache(tmp_path / "c.sqlite"),
        cache_mode=CacheMode.RW,
    )
    for index in range(3):  # three vote trials of one request
        await client.complete(request.with_sample(index))
    await client.aclose()
    assert sorted(hashed) == sorted([len(page), len(screenshot)])
    assert ResponseCache(tmp_path / "c.sqlite").stats().blobs == 2


async def test_one_screenshot_checked_against_several_claims_is_hashed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolkit.backends import LLMBackend, VerifyRequest
    from toolkit.llm import models

    screenshot = "B" * 40_000
    hashed: list[str] = []
    original = models.sha256_text

    def spy(text: str) -> str:
        if text == screenshot:
            hashed.append(text)
        return original(text)

    monkeypatch.setattr(models, "sha256_text", spy)
    provider = ScriptedProvider(lambda r: GOOD)
    backend = LLMBackend(provider)
    for claim in ("The museum opens at 9.", "The museum is free."):
        page = VerifyRequest(
            claim=claim,
            sources=["https://example.org/m"],
            page_texts=["Hours"],
            images=[screenshot],
        )
        await backend.verify(page)
        await backend.verify(page.model_copy(update={"images": ["B" * 40_000]}))
    parts = [call.messages[0].content[1] for call in provider.calls]
    assert all(part.data == screenshot for part in parts)
    assert len(hashed) == 1 + 2  # the shared string once; each equal copy in its own request
    assert len({call.cache_key() for call in provider.calls}) == 4  # 2 claims × 2 trials


async def test_a_store_whose_caller_was_cancelled_is_still_committed(tmp_path: Path) -> None:
    from toolkit.llm.cache import CacheRecord

    cache = ResponseCache(tmp_path / "c.sqlite")
    first, second = verify_request("first"), verify_request("second")
    answer = LLMResponse(text="{}", parsed=GOOD, model="o4-mini")
    waiting = asyncio.ensure_future(cache.put_batched(CacheRecord.of(first, answer), checked=True))
    await asyncio.sleep(0)
    waiting.cancel()
    await cache.put_batched(CacheRecord.of(second, answer), checked=True)
    assert waiting.cancelled()
    cache.close()
    reopened = ResponseCache(tmp_path / "c.sqlite")
    assert reopened.get_response(first.cache_key()) is not None
    assert reopened.get_response(second.cache_key()) is not None


async def test_a_shared_call_whose_answer_cannot_be_stored_is_paid_once_in_the_ledger(
    tmp_path: Path, unwritable_cache: ResponseCache
) -> None:
    """Two identical requests share one provider call; when its store fails, both fail, and
    the ledger counts the answer's tokens once (the follower paid nothing)."""

    async def slow(request: LLMRequest) -> dict[str, object]:
        await asyncio.sleep(0.01)
        return GOOD

    ledger = Ledger(tmp_path / "ledger.jsonl", PriceTable())
    provider = ScriptedProvider(slow)
    client = LLMClient(provider, cache=unwritable_cache, cache_mode=CacheMode.RW, ledger=ledger)
    both = await asyncio.gather(
        client.complete(verify_request("a")),
        client.complete(verify_request("a")),
        return_exceptions=True,
    )
    await client.aclose()
    assert len(provider.calls) == 1
    assert [type(outcome) for outcome in both] == [CacheError, CacheError]
    rows = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [row["error"] for row in rows] == ["cache", "cache"]
    assert [row["input_tokens"] > 0 for row in rows] == [True, False]


async def test_a_failed_store_nobody_waits_for_any_more_is_not_logged_as_unretrieved(
    unwritable_cache: ResponseCache, caplog: pytest.LogCaptureFixture
) -> None:
    """A judge that stops waiting (a timeout) leaves its call running; when that answer's
    store fails, the ledger has its row and the run its error path: asyncio must not also
    print an 'exception was never retrieved' traceback at exit."""

    async def slow(request: LLMRequest) -> dict[str, object]:
        await asyncio.sleep(0.05)
        return GOOD

    client = LLMClient(ScriptedProvider(slow), cache=unwritable_cache, cache_mode=CacheMode.RW)
    waiting = asyncio.ensure_future(client.complete(verify_request("a")))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.sleep(0.2)  # the call ends and its store fails, with nobody waiting
    await client.aclose()
    del waiting
    gc.collect()
    assert "never retrieved" not in caplog.text
