"""The response cache: hits, modes, in-flight sharing, concurrent writers, export and import."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.errors import LLMError, ReplayMiss, SpecError
from toolkit.llm.cache import CacheRecord, ResponseCache, record_json
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.origin import RecordOrigin
from toolkit.llm.scripted import ScriptedProvider

REPO = Path(__file__).resolve().parents[2]


def client_on(path: Path, mode: CacheMode, policy=verdict) -> tuple[LLMClient, ScriptedProvider]:
    provider = ScriptedProvider(policy)
    return LLMClient(provider, cache=ResponseCache(path), cache_mode=mode), provider


def requests(count: int) -> list[LLMRequest]:
    return [verify_request(f"claim number {i}", index=i % 3) for i in range(count)]


async def test_repeating_200_requests_makes_no_provider_call(tmp_path: Path) -> None:
    first, first_provider = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    before = await asyncio.gather(*(first.complete(r) for r in requests(200)))
    second, second_provider = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    after = await asyncio.gather(*(second.complete(r) for r in requests(200)))
    assert len(first_provider.calls) == 200
    assert second_provider.calls == []
    assert [r.parsed for r in after] == [r.parsed for r in before]
    assert [r.text for r in after] == [r.text for r in before]
    assert all(r.cache_hit for r in after)
    assert second.summary().cached == 200


async def test_cache_hit_records_no_spend(tmp_path: Path) -> None:
    """(What a hit saved, only a hit of an answer recorded live has: `test_llm_saved.py`.)"""
    first, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    paid = await first.complete(verify_request())
    second, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    await second.complete(verify_request())
    row = second.ledger.rows[0]
    assert paid.cost_usd > 0
    assert (row.cache_hit, row.cost_usd) == (True, 0.0)


async def test_strict_miss_on_changed_request_names_purpose_key_and_diff(tmp_path: Path) -> None:
    recorder, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    await recorder.complete(verify_request("The capital of France is Paris."))
    strict, provider = client_on(tmp_path / "c.sqlite", CacheMode.STRICT)
    changed = verify_request("The capital of France is Lyon.")
    with pytest.raises(ReplayMiss) as caught:
        await strict.complete(changed)
    message = str(caught.value)
    assert "verify request" in message
    assert changed.model_copy(update={"provider": "scripted"}).cache_key() in message
    assert "-The capital of France is Paris." in message
    assert "+The capital of France is Lyon." in message
    assert provider.calls == []


async def test_strict_hit_is_served(tmp_path: Path) -> None:
    recorder, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    recorded = await recorder.complete(verify_request())
    strict, _ = client_on(tmp_path / "c.sqlite", CacheMode.STRICT)
    assert (await strict.complete(verify_request())).parsed == recorded.parsed


async def test_metadata_does_not_change_the_key(tmp_path: Path) -> None:
    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    await client.complete(verify_request())
    relabelled = verify_request()
    relabelled.metadata.task_id = "another-task"
    await client.complete(relabelled)
    assert len(provider.calls) == 1


async def test_errors_are_not_cached(tmp_path: Path) -> None:
    def failing(request: LLMRequest) -> LLMResponse:
        raise LLMError("boom", kind="server")

    client, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW, failing)
    with pytest.raises(LLMError):
        await client.complete(verify_request())
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0
    assert client.ledger.rows[0].error == "server"


async def test_truncated_outputs_are_not_cached(tmp_path: Path) -> None:
    def truncated(request: LLMRequest) -> LLMResponse:
        return LLMResponse(text='{"a', model=request.model, stop_reason="max_tokens")

    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.RW, truncated)
    for _ in range(2):
        with pytest.raises(LLMError, match="truncated"):
            await client.complete(verify_request())
    assert len(provider.calls) == 2
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


async def test_identical_in_flight_requests_share_one_call(tmp_path: Path) -> None:
    async def slow(request: LLMRequest) -> dict:
        await asyncio.sleep(0.05)
        return verdict(request)

    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.RW, slow)
    results = await asyncio.gather(*(client.complete(verify_request()) for _ in range(10)))
    assert len(provider.calls) == 1
    assert len({json.dumps(r.parsed, sort_keys=True) for r in results}) == 1
    assert client.summary().cached == 9


async def test_read_only_mode_serves_hits_and_stores_nothing(tmp_path: Path) -> None:
    recorder, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    await recorder.complete(verify_request("a"))
    reader, provider = client_on(tmp_path / "c.sqlite", CacheMode.RO)
    await reader.complete(verify_request("a"))
    await reader.complete(verify_request("b"))
    assert len(provider.calls) == 1
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 1


async def test_refresh_mode_calls_again_and_overwrites(tmp_path: Path) -> None:
    recorder, _ = client_on(
        tmp_path / "c.sqlite", CacheMode.RW, lambda r: {"reasoning": "v1", "result": True}
    )
    await recorder.complete(verify_request())
    refresher, provider = client_on(
        tmp_path / "c.sqlite", CacheMode.REFRESH, lambda r: {"reasoning": "v2", "result": False}
    )
    await refresher.complete(verify_request())
    reader, _ = client_on(tmp_path / "c.sqlite", CacheMode.STRICT)
    assert len(provider.calls) == 1
    assert (await reader.complete(verify_request())).parsed == {"reasoning": "v2", "result": False}


async def test_off_mode_always_calls_the_provider_and_stores_nothing(tmp_path: Path) -> None:
    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.OFF)
    await client.complete(verify_request())
    await client.complete(verify_request())
    assert len(provider.calls) == 2
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


def test_two_processes_writing_one_cache_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    writer = [sys.executable, str(REPO / "tests/llm/cache_writer.py"), path]
    children = [
        subprocess.Popen([*writer, name, "300", "50"], cwd=REPO, env=_child_env())
        for name in ("alpha", "beta")
    ]
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    cache = ResponseCache(path)
    texts = {record.response.text for record in cache.records()}
    assert cache.stats().entries == 650
    assert {f"alpha-{i}" for i in range(300)} <= texts
    assert {f"beta-{i}" for i in range(300)} <= texts


def _child_env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


async def test_export_writes_stable_sorted_indented_files(tmp_path: Path) -> None:
    client, _ = client_on(tmp_path / "c.sqlite", CacheMode.RW)
    await client.complete(verify_request())
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.export_dir(tmp_path / "out") == (1, 0)
    (path,) = (tmp_path / "out").iterdir()
    text = path.read_text()
    data = json.loads(text)
    assert path.name.startswith("verify-o4-mini-") and path.name.endswith(".json")
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert data["request"]["metadata"]["purpose"] == "verify"
    cache.export_dir(tmp_path / "again")
    assert (tmp_path / "again" / path.name).read_text() == text


async def test_import_then_strict_serves_the_recording(tmp_path: Path) -> None:
    client, _ = client_on(tmp_path / "a.sqlite", CacheMode.RW)
    recorded = await client.complete(verify_request())
    ResponseCache(tmp_path / "a.sqlite").export_dir(tmp_path / "fixtures")
    assert ResponseCache(tmp_path / "b.sqlite").import_dir(tmp_path / "fixtures").added == 1
    strict, provider = client_on(tmp_path / "b.sqlite", CacheMode.STRICT)
    assert (await strict.complete(verify_request())).parsed == recorded.parsed
    assert provider.calls == []


async def test_an_imported_truncated_answer_is_a_miss_not_a_hit(tmp_path: Path) -> None:
    request = verify_request().model_copy(update={"provider": "scripted"})
    cut = LLMResponse(text="The answer is fo", model="o4-mini", stop_reason="max_tokens")
    (tmp_path / "fixtures").mkdir()
    record = CacheRecord.of(request.model_copy(update={"output_schema": None}), cut)
    (tmp_path / "fixtures" / record.file_name()).write_text(record_json(record))
    assert ResponseCache(tmp_path / "c.sqlite").import_dir(tmp_path / "fixtures").added == 1
    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.RW, lambda r: "The answer is 4.")
    response = await client.complete(record.request)
    assert (response.text, response.cache_hit) == ("The answer is 4.", False)
    assert len(provider.calls) == 1


def answer(result: bool) -> LLMResponse:
    parsed = {"reasoning": "r", "result": result}
    return LLMResponse(
        text=json.dumps(parsed), parsed=parsed, model="o4-mini", stop_reason="end_turn"
    )


def exported(directory: Path, *records: CacheRecord) -> Path:
    directory.mkdir()
    for record in records:
        (directory / record.file_name()).write_text(record_json(record))
    return directory


def test_an_import_that_answers_a_cached_request_differently_stores_nothing(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    held = verify_request("held")
    cache.put(CacheRecord.of(held, answer(True)))
    other = CacheRecord.of(verify_request("other"), answer(True))
    directory = exported(tmp_path / "in", CacheRecord.of(held, answer(False)), other)
    with pytest.raises(SpecError) as caught:
        cache.import_dir(directory)
    assert (
        "already answers, differently" in caught.value.problem and "--replace" in caught.value.fix
    )
    assert cache.get_response(held.cache_key()).parsed["result"] is True
    assert cache.get_response(other.key) is None


def test_import_replace_stores_the_imported_answer_over_a_different_one(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    held = verify_request("held")
    cache.put(CacheRecord.of(held, answer(True)), checked=True)
    directory = exported(tmp_path / "in", CacheRecord.of(held, answer(False)))
    report = cache.import_dir(directory, replace=True)
    assert (report.added, report.replaced, report.unchanged) == (0, 1, 0)
    assert cache.lookup(held.cache_key())[:2] == (answer(False), False)


def test_an_import_counts_what_it_added_and_what_the_cache_already_held(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    live = RecordOrigin(source="live", provider="anthropic")
    held = CacheRecord.of(verify_request("held"), answer(True), origin=live)
    cache.put(held)
    new = CacheRecord.of(verify_request("new"), answer(False), origin=live)
    report = cache.import_dir(exported(tmp_path / "in", held, new))
    assert (report.added, report.replaced, report.unchanged) == (1, 0, 1)
    assert report.line() == "2 records: 1 new, 0 replaced, 1 already in the cache"


def test_an_import_replaces_an_entry_that_is_never_served(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = verify_request()
    cut = LLMResponse(text='{"reasoning": "r', model="o4-mini", stop_reason="max_tokens")
    cache.put(CacheRecord.of(request, cut))
    report = cache.import_dir(exported(tmp_path / "in", CacheRecord.of(request, answer(True))))
    assert report.replaced == 1 and cache.get_response(request.cache_key()) == answer(True)


def test_record_key_is_the_request_cache_key() -> None:
    request = verify_request().model_copy(update={"provider": "openai"})
    record = CacheRecord.of(request, LLMResponse(text="x", cache_hit=True))
    assert record.key == request.cache_key()
    assert record.response.cache_hit is False


async def test_a_failed_shared_call_fails_every_waiter_and_is_not_cached(tmp_path: Path) -> None:
    async def failing(request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(0.02)
        raise LLMError("cut off", kind="truncated", usage=Usage(input_tokens=50))

    client, provider = client_on(tmp_path / "c.sqlite", CacheMode.RW, failing)
    results = await asyncio.gather(
        *(client.complete(verify_request()) for _ in range(4)), return_exceptions=True
    )
    assert len(provider.calls) == 1
    assert all(isinstance(r, LLMError) and r.kind == "truncated" for r in results)
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0
    assert sum(row.input_tokens for row in client.ledger.rows) == 50
