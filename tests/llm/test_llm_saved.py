"""What the cache saved is only what the hits of answers recorded live would have cost, and a
replayed answer keeps the origin its record says (a recording made live stays live) while
costing and saving nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from generator.stages.tape import CallTape
from tests.llm.conftest import verify_request
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, openai_completion
from toolkit.llm import ModelPrice, PriceTable
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger
from toolkit.llm.models import LLMResponse, Usage
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.origin import RecordOrigin, Source
from toolkit.llm.records import CacheRecord, record_json
from toolkit.llm.replay import ReplayProvider

GOOD = '{"reasoning": "It is.", "result": true}'
SNAPSHOT = "o4-mini-2025-04-16"
PRICES = PriceTable(prices={"o4-mini": ModelPrice(input=10.0, output=10.0)})
"""$10 per million tokens: an answer of `USAGE` is priced at $1.00."""
USAGE = Usage(input_tokens=90_000, output_tokens=10_000)
LIVE = RecordOrigin(source="live", provider="openai")


def stored(text: str, origin: RecordOrigin | None, provider: str = "openai") -> CacheRecord:
    """A record answering `text`'s request for `provider`, of `USAGE`, saying `origin`."""
    request = verify_request(text).model_copy(update={"provider": provider})
    answer = LLMResponse(text=GOOD, parsed=json.loads(GOOD), model=SNAPSHOT, usage=USAGE)
    return CacheRecord.of(request, answer, origin=origin)


def openai_provider(stub: StubAPI) -> OpenAIProvider:
    """The real OpenAI SDK against the loopback stub: a live provider."""
    return OpenAIProvider(base_url=stub.url("/v1"), max_retries=0, timeout_s=5.0)


def openai_client(stub: StubAPI, cache: Path, ledger: Ledger | None = None) -> LLMClient:
    """A live provider (`openai_provider`) served strictly from `cache` (any call to the API
    would fail)."""
    provider = openai_provider(stub)
    return LLMClient(
        provider,
        cache=ResponseCache(cache),
        cache_mode=CacheMode.STRICT,
        ledger=ledger or Ledger(None, PRICES),
        prices=PRICES,
    )


def cache_of(path: Path, *records: CacheRecord) -> Path:
    cache = ResponseCache(path)
    for record in records:
        cache.put(record)
    cache.close()
    return path


async def test_a_run_with_one_hit_recorded_live_and_one_scripted_saves_only_the_live_ones_price(
    stub: StubAPI, tmp_path: Path
) -> None:
    scripted = RecordOrigin(source="scripted", provider="scripted")
    name = openai_provider(stub).name
    path = cache_of(
        tmp_path / "c.sqlite", stored("live", LIVE, name), stored("fixture", scripted, name)
    )
    ledger = Ledger(tmp_path / "ledger.jsonl", PRICES)
    async with openai_client(stub, path, ledger) as client:
        await client.complete(verify_request("live"))
        await client.complete(verify_request("fixture"))
        summary, line = client.summary(), client.summary_line()
    rows = [json.loads(row) for row in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [(row["origin"], row["saved_usd"]) for row in rows] == [
        ("live", pytest.approx(1.0)),
        ("scripted", 0.0),
    ]
    assert (summary.cached, summary.saved_usd) == (2, pytest.approx(1.0))
    assert "; saved $1.00;" in line
    assert stub.calls(OPENAI_PATH) == []


@pytest.mark.parametrize("source", ["scripted", "replay", "unknown", "before_origins"])
def test_a_hit_of_an_answer_not_recorded_live_saves_nothing(source: Source) -> None:
    ledger = Ledger(None, PRICES)
    origin = RecordOrigin(source=source)
    row = ledger.row_for(verify_request(), USAGE, hit=True, latency=0.0, error=None, origin=origin)
    assert (row.cost_usd, row.saved_usd) == (0.0, 0.0)


async def test_the_generation_tape_counts_as_saved_only_the_hits_recorded_live(
    stub: StubAPI, tmp_path: Path
) -> None:
    unknown = RecordOrigin(source="unknown")
    name = openai_provider(stub).name
    path = cache_of(
        tmp_path / "c.sqlite", stored("live", LIVE, name), stored("hand", unknown, name)
    )
    async with openai_client(stub, path) as client:
        tape = CallTape(client)
        await tape.complete(verify_request("live"))
        await tape.complete(verify_request("hand"))
        assert "; saved $1.00;" in tape.summary_line()
        assert tape.summary_line() == client.summary_line()


async def recorded_live(stub: StubAPI, tmp_path: Path, *texts: str) -> Path:
    """Answers to `texts` recorded from the (stub) OpenAI API and exported: recordings made live."""
    for _ in texts:
        stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model=SNAPSHOT)))
    provider = openai_provider(stub)
    recorder = LLMClient(
        provider, cache=ResponseCache(tmp_path / "rec.sqlite"), cache_mode=CacheMode.RW
    )
    async with recorder:
        for text in texts:
            await recorder.complete(verify_request(text))
    ResponseCache(tmp_path / "rec.sqlite").export_dir(tmp_path / "recordings")
    return tmp_path / "recordings"


def replaying(directory: Path, cache: Path) -> LLMClient:
    """A client replaying the recordings in `directory`, caching what it replays in `cache`."""
    replay = ReplayProvider.from_path(directory)
    return LLMClient(replay, cache=ResponseCache(cache), cache_mode=CacheMode.RW, prices=PRICES)


async def test_replaying_a_recording_made_live_stores_its_answers_as_live(
    stub: StubAPI, tmp_path: Path
) -> None:
    directory = await recorded_live(stub, tmp_path, "one")
    async with replaying(directory, tmp_path / "c.sqlite") as client:
        await client.complete(verify_request("one"))
        hit = await client.complete(verify_request("one"))
    assert ResponseCache(tmp_path / "c.sqlite").stats().by_origin == {"live": 1}
    assert hit.cache_hit and hit.origin is not None
    assert (hit.origin.source, hit.origin.provider) == ("live", openai_provider(stub).name)


@pytest.mark.parametrize(
    ("origin", "kept"),
    [(RecordOrigin(source="scripted", provider="scripted"), "scripted"), (None, "unknown")],
)
async def test_a_replayed_answer_is_stored_with_the_origin_its_record_says(
    tmp_path: Path, origin: RecordOrigin | None, kept: str
) -> None:
    (tmp_path / "recordings").mkdir()
    record = stored("one", origin)
    (tmp_path / "recordings" / record.file_name()).write_text(record_json(record))
    async with replaying(tmp_path / "recordings", tmp_path / "c.sqlite") as client:
        await client.complete(verify_request("one"))
        hit = await client.complete(verify_request("one"))
    assert ResponseCache(tmp_path / "c.sqlite").stats().by_origin == {kept: 1}
    assert hit.origin is not None and hit.origin.source == kept


async def test_a_request_sharing_a_replayed_call_gets_the_origin_its_record_says(
    stub: StubAPI, tmp_path: Path
) -> None:
    directory = await recorded_live(stub, tmp_path, "one")
    async with replaying(directory, tmp_path / "c.sqlite") as client:
        first, second = await asyncio.gather(
            client.complete(verify_request("one")), client.complete(verify_request("one"))
        )
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.origin is not None and second.origin.source == "live"


async def test_replaying_a_recording_made_live_costs_nothing_and_saves_nothing(
    stub: StubAPI, tmp_path: Path
) -> None:
    """Its answers are stored as live, yet neither the replayed call nor a later hit of it
    paid for or spared a model call: a replay is free."""
    directory = await recorded_live(stub, tmp_path, "one")
    async with replaying(directory, tmp_path / "c.sqlite") as client:
        await client.complete(verify_request("one"))
        await client.complete(verify_request("one"))
        rows = client.ledger.rows
        summary = client.summary()
    assert [(row.cache_hit, row.origin) for row in rows] == [(False, None), (True, "live")]
    assert [(row.cost_usd, row.saved_usd) for row in rows] == [(0.0, 0.0), (0.0, 0.0)]
    assert (summary.cost_usd, summary.saved_usd) == (0.0, 0.0)
    assert summary.estimated_usd > 0  # the replayed call's live price, labelled an estimate


async def test_an_entry_an_older_judgegen_stored_while_replaying_is_served_as_replay(
    stub: StubAPI, tmp_path: Path
) -> None:
    """Such an entry's recording may have said anything: it is served, named apart, its
    model not counted as one that answered and nothing counted as saved."""
    old = RecordOrigin(source="replay", provider="replay:/recordings recorded=0123456789abcdef")
    path = cache_of(tmp_path / "c.sqlite", stored("one", old, openai_provider(stub).name))
    async with openai_client(stub, path) as client:
        hit = await client.complete(verify_request("one"))
        (row,) = client.ledger.rows
        line = client.summary_line()
    assert hit.cache_hit and hit.parsed == json.loads(GOOD)
    assert (row.origin, row.answered_by, row.saved_usd) == ("replay", None, 0.0)
    assert "1 replayed from recordings by an older judgegen" in line
