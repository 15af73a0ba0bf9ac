"""The replay provider answers only from recordings; a miss names purpose, key and diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from tests.llm.policies import always_supported, never_supported, verdict
from toolkit.errors import LLMError, ReplayMiss, SpecError
from toolkit.llm.cache import CacheRecord, ResponseCache, record_json
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient, build_client
from toolkit.llm.models import LLMResponse
from toolkit.llm.replay import ReplayProvider
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import LLMSettings


async def record(tmp_path: Path, *texts: str) -> Path:
    client = LLMClient(
        ScriptedProvider(verdict),
        cache=ResponseCache(tmp_path / "rec.sqlite"),
        cache_mode=CacheMode.RW,
    )
    for text in texts:
        await client.complete(verify_request(text))
    ResponseCache(tmp_path / "rec.sqlite").export_dir(tmp_path / "recordings")
    return tmp_path / "recordings"


async def test_replay_serves_recordings_whatever_provider_recorded_them(tmp_path: Path) -> None:
    directory = await record(tmp_path, "one", "two")
    replay = ReplayProvider.from_path(directory)
    response = await LLMClient(replay).complete(verify_request("two"))
    assert response.parsed == verdict(verify_request("two"))
    assert len(replay) == 2


async def test_replay_reads_a_cache_file_too(tmp_path: Path) -> None:
    await record(tmp_path, "one")
    replay = ReplayProvider.from_path(tmp_path / "rec.sqlite")
    assert (await replay.complete(verify_request("one"))).parsed == verdict(verify_request("one"))


async def test_answers_cached_while_replaying_one_recording_set_never_serve_another(
    tmp_path: Path,
) -> None:
    yes, no = tmp_path / "yes", tmp_path / "no"
    for directory, policy in ((yes, always_supported), (no, never_supported)):
        recorder = LLMClient(
            ScriptedProvider(policy),
            cache=ResponseCache(directory / "rec.sqlite"),
            cache_mode=CacheMode.RW,
        )
        await recorder.complete(verify_request())
        await recorder.aclose()
        ResponseCache(directory / "rec.sqlite").export_dir(directory / "recordings")
    answers = []
    for directory in (yes, no):
        settings = LLMSettings(
            provider=f"replay:{directory / 'recordings'}",
            cache_path=tmp_path / "c.sqlite",
            ledger_path=None,
        )
        async with build_client(settings) as client:
            answers.append((await client.complete(verify_request())).parsed["result"])
    assert answers == [True, False]


async def test_rerecording_a_directory_in_place_never_serves_its_old_answers_from_the_cache(
    tmp_path: Path,
) -> None:
    answers = []
    for policy in (always_supported, never_supported):
        recorder = LLMClient(
            ScriptedProvider(policy),
            cache=ResponseCache(tmp_path / f"{policy.__name__}.sqlite"),
            cache_mode=CacheMode.RW,
        )
        await recorder.complete(verify_request())
        await recorder.aclose()
        for old in (tmp_path / "recordings").glob("*.json"):
            old.unlink()
        ResponseCache(tmp_path / f"{policy.__name__}.sqlite").export_dir(tmp_path / "recordings")
        settings = LLMSettings(
            provider=f"replay:{tmp_path / 'recordings'}",
            cache_path=tmp_path / "c.sqlite",
            ledger_path=None,
        )
        async with build_client(settings) as client:
            answers.append((await client.complete(verify_request())).parsed["result"])
    assert answers == [True, False]


async def test_a_truncated_recording_is_an_error_not_an_answer(tmp_path: Path) -> None:
    cut = LLMResponse(text='{"reasoning": "The page sa', model="o4-mini", stop_reason="length")
    replay = ReplayProvider([CacheRecord.of(verify_request(), cut)])
    with pytest.raises(LLMError) as caught:
        await replay.complete(verify_request())
    assert caught.value.kind == "truncated" and "re-record it" in str(caught.value)


def test_recordings_answering_one_request_differently_are_refused(tmp_path: Path) -> None:
    (tmp_path / "rec").mkdir()
    for provider, result in (("anthropic", True), ("openai", False)):
        request = verify_request().model_copy(update={"provider": provider})
        parsed = {"reasoning": provider, "result": result}
        record = CacheRecord.of(request, LLMResponse(text=json.dumps(parsed), parsed=parsed))
        (tmp_path / "rec" / f"{provider}.json").write_text(record_json(record))
    with pytest.raises(SpecError) as caught:
        ReplayProvider.from_path(tmp_path / "rec")
    assert caught.value.file == str(tmp_path / "rec" / "openai.json")
    assert str(tmp_path / "rec" / "anthropic.json") in caught.value.problem


def test_recordings_in_a_cache_file_answering_one_request_differently_are_refused(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "rec.sqlite")
    for provider, text in (("anthropic", "The answer is 4."), ("openai", "The answer is 5.")):
        request = verify_request().model_copy(update={"provider": provider, "output_schema": None})
        cache.put(CacheRecord.of(request, LLMResponse(text=text)))
    cache.close()
    with pytest.raises(SpecError) as caught:
        ReplayProvider.from_path(tmp_path / "rec.sqlite")
    assert caught.value.file.startswith(f"{tmp_path / 'rec.sqlite'} entry sha256-v2:")


async def test_replay_miss_names_purpose_key_and_nearest_diff(tmp_path: Path) -> None:
    directory = await record(tmp_path, "Paris is in France.", "Unrelated text entirely.")
    client = build_client(
        LLMSettings(
            provider=f"replay:{directory}", model="o4-mini", cache_mode="off", ledger_path=None
        )
    )
    changed = verify_request("Paris is in Germany.")
    with pytest.raises(ReplayMiss) as caught:
        await client.complete(changed)
    message = str(caught.value)
    assert message.startswith("replay miss: no recorded response for verify request sha256-v2:")
    assert "-Paris is in France." in message and "+Paris is in Germany." in message
    assert "Unrelated" not in message
    assert client.ledger.rows == []


async def test_a_replay_miss_for_a_model_nothing_was_recorded_for_shows_the_nearest_diff(
    tmp_path: Path,
) -> None:
    replay = ReplayProvider.from_path(await record(tmp_path, "Paris is in France."))
    with pytest.raises(ReplayMiss) as caught:
        await replay.complete(verify_request("Paris is in France.", model="gpt-4.1"))
    message = str(caught.value)
    assert "nothing recorded for model gpt-4.1; diff against the nearest" in message
    assert "-model: o4-mini" in message and "+model: gpt-4.1" in message


async def test_a_replay_miss_finds_its_models_recording_among_many_of_other_models() -> None:
    answer = LLMResponse(text="{}", parsed={"reasoning": "r", "result": True})
    others = [CacheRecord.of(verify_request(f"c{i}", model="a-model"), answer) for i in range(500)]
    own = CacheRecord.of(verify_request("Paris is in France."), answer)
    with pytest.raises(ReplayMiss) as caught:
        await ReplayProvider([*others, own]).complete(verify_request("Paris is in Germany."))
    message = str(caught.value)
    assert "-Paris is in France." in message and "+Paris is in Germany." in message


async def test_a_replayed_fixture_costs_nothing_and_its_live_price_is_a_labelled_estimate(
    tmp_path: Path,
) -> None:
    directory = await record(tmp_path, "one")
    client = build_client(
        LLMSettings(
            provider=f"replay:{directory}",
            model="o4-mini",
            cache_mode="off",
            ledger_path=None,
            budget_usd=0.000001,
        )
    )
    response = await client.complete(verify_request("one"))
    summary = client.ledger.summary()
    assert response.cost_usd == 0.0 and summary.cost_usd == 0.0
    assert response.estimated_usd > 0 and summary.estimated_usd == response.estimated_usd
    assert "$0.00" in summary.line() and "replayed fixtures, no model called" in summary.line()
    await client.complete(verify_request("one"))  # a tiny budget is never spent by replays


async def test_a_scripted_policys_answers_are_a_labelled_simulated_spend() -> None:
    client = LLMClient(ScriptedProvider(verdict), model="o4-mini")
    response = await client.complete(verify_request("one"))
    summary = client.ledger.summary()
    assert response.cost_usd > 0  # priced as live, so a budget cap can be tried on it
    assert summary.simulated_usd == summary.cost_usd == response.cost_usd
    assert f"${summary.cost_usd:.2f} of it simulated: a scripted policy answered" in summary.line()
