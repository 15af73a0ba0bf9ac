"""Judging backends: the LLM backend's prompts and majority vote, the scripted backend."""

from __future__ import annotations

import asyncio
import json
from itertools import cycle
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from toolkit import backends
from toolkit.backends import (
    UNAVAILABLE_REASON,
    ExtractRequest,
    LLMBackend,
    ScriptedBackend,
    Verdict,
    VerifyRequest,
)
from toolkit.errors import JudgegenError, LLMError, TemplateError
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider


class Commit(BaseModel):
    commit_id: str | None = None


def voting_provider(*outcomes: bool) -> ScriptedProvider:
    answers = cycle(outcomes)
    return ScriptedProvider(lambda request: {"reasoning": "r", "result": next(answers)})


@pytest.mark.parametrize(
    ("outcomes", "calls", "passed"),
    [
        ((True, True), 2, True),
        ((False, False), 2, False),
        ((True, False, True), 3, True),
        ((False, True, False), 3, False),
        ((True, False, False), 3, False),
    ],
    ids=["agree-pass", "agree-fail", "split-pass", "split-fail", "late-majority"],
)
async def test_majority_vote_stops_once_two_agree(outcomes, calls, passed):
    provider = voting_provider(*outcomes)
    verdict = await LLMBackend(provider).verify(VerifyRequest(claim="c"))
    assert len(provider.calls) == calls
    assert verdict.passed is passed


async def test_each_trial_is_a_distinct_request_for_the_cache():
    provider = voting_provider(True, False, True)
    await LLMBackend(provider).verify(VerifyRequest(claim="c"))
    assert [r.sample_index for r in provider.calls] == [0, 1, 2]
    assert len({r.cache_key() for r in provider.calls}) == 3


async def test_the_first_two_trials_are_in_flight_together():
    both_asked = asyncio.Event()
    asked: list[int] = []

    async def gate(request: LLMRequest) -> dict:
        asked.append(request.sample_index)
        if len(asked) == 2:
            both_asked.set()
        await asyncio.wait_for(both_asked.wait(), timeout=5)
        return {"reasoning": "r", "result": True}

    provider = ScriptedProvider(gate)
    verdict = await LLMBackend(provider).verify(VerifyRequest(claim="c"))
    assert verdict.passed and asked == [0, 1]


async def test_the_third_trial_is_asked_only_after_the_first_two_disagree():
    provider = voting_provider(True, False, False)
    verdict = await LLMBackend(provider).verify(VerifyRequest(claim="c"))
    assert [r.sample_index for r in provider.calls] == [0, 1, 2]
    assert not verdict.passed


def calls_voting_in_turn(outcomes: list[bool]) -> int:
    """How many trials one-at-a-time voting (today's and Mind2Web 2's) makes for `outcomes`."""
    need, seen = len(outcomes) // 2 + 1, {True: 0, False: 0}
    for index, outcome in enumerate(outcomes):
        seen[outcome] += 1
        if seen[outcome] >= need:
            return index + 1
    return len(outcomes)


async def test_concurrent_voting_never_makes_more_calls_than_voting_in_turn():
    for trials in range(1, 8):
        for pattern in range(2**trials):
            outcomes = [bool(pattern >> i & 1) for i in range(trials)]
            provider = voting_provider(*outcomes)
            await LLMBackend(provider, trials=trials).verify(VerifyRequest(claim="c"))
            assert len(provider.calls) == calls_voting_in_turn(outcomes), outcomes


async def test_a_failed_trial_fails_the_verification_after_its_sibling_finished():
    finished: list[int] = []

    async def one_fails(request: LLMRequest) -> dict:
        if request.sample_index == 0:
            raise LLMError("boom", kind="server")
        await asyncio.sleep(0.01)
        finished.append(request.sample_index)
        return {"reasoning": "r", "result": True}

    with pytest.raises(LLMError, match="boom"):
        await LLMBackend(ScriptedProvider(one_fails)).verify(VerifyRequest(claim="c"))
    assert finished == [1]


async def test_the_verdict_schema_is_built_once_and_trials_share_one_request_hash(monkeypatch):
    built: list[str] = []
    original = backends._VerdictSchema.model_json_schema

    def counting(*args, **kwargs):
        built.append("schema")
        return original(*args, **kwargs)

    backends._schema_of.cache_clear()
    monkeypatch.setattr(backends._VerdictSchema, "model_json_schema", counting)
    provider = voting_provider(True, False, True)
    backend = LLMBackend(provider)
    await backend.verify(VerifyRequest(claim="one"))
    await backend.verify(VerifyRequest(claim="two"))
    assert built == ["schema"]
    assert provider.calls[0]._base_digest == provider.calls[2]._base_digest is not None


async def test_verify_prompts_do_not_carry_the_answer():
    provider = voting_provider(True)
    request = VerifyRequest(
        claim="c", answer="THE-WHOLE-ANSWER", sources=["https://p/"], page_texts=["page"]
    )
    await LLMBackend(provider).verify(request)
    assert all("THE-WHOLE-ANSWER" not in r.prompt_text() for r in provider.calls)


async def test_trials_are_configurable():
    provider = voting_provider(True)
    await LLMBackend(provider, trials=1).verify(VerifyRequest(claim="c"))
    assert len(provider.calls) == 1


async def test_missing_page_is_unsupported_without_calling_the_model():
    provider = voting_provider(True)
    request = VerifyRequest(claim="c", sources=["https://gone/"], page_texts=[None])
    verdict = await LLMBackend(provider).verify(request)
    assert verdict == Verdict(passed=False, reasoning=UNAVAILABLE_REASON)
    assert provider.calls == []


async def test_page_verification_prompt_carries_claim_url_and_page_text():
    provider = voting_provider(True)
    request = VerifyRequest(
        claim="The commit is a1b2c3", sources=["https://gh/c"], page_texts=["commit a1b2c3"]
    )
    await LLMBackend(provider).verify(request)
    sent = provider.calls[0]
    text = sent.messages[0].content[0].text
    assert "The commit is a1b2c3" in text and "https://gh/c" in text and "commit a1b2c3" in text
    assert sent.system[0].cache is True
    assert sent.metadata.purpose == "verify"
    assert sent.model == "o4-mini"


async def test_stable_system_prefix_is_identical_across_requests():
    provider = voting_provider(True)
    backend = LLMBackend(provider)
    await backend.verify(VerifyRequest(claim="one"))
    await backend.verify(VerifyRequest(claim="two"))
    assert provider.calls[0].system == provider.calls[2].system


async def test_llm_extraction_returns_the_parsed_object_with_the_template_schema():
    provider = ScriptedProvider(lambda request: json.dumps({"commit_id": "a1b2c3"}))
    request = ExtractRequest.for_template(Commit, prompt="the commit", source_text="answer text")
    result = await LLMBackend(provider, extract_model="gpt-x").extract(request)
    assert result == {"commit_id": "a1b2c3"}
    sent = provider.calls[0]
    assert sent.output_schema == Commit.model_json_schema()
    assert sent.model == "gpt-x" and sent.metadata.purpose == "extract"
    assert "answer text" in sent.messages[0].content[0].text


async def test_llm_extraction_from_a_missing_page_returns_nulls_without_a_call():
    provider = ScriptedProvider(lambda request: "{}")
    request = ExtractRequest.for_template(
        Commit, prompt="p", source="https://gone/", source_text=None
    )
    assert await LLMBackend(provider).extract(request) == {}
    assert provider.calls == []


async def test_very_long_pages_are_clipped():
    provider = voting_provider(True)
    request = VerifyRequest(claim="c", sources=["https://p/"], page_texts=["x" * 50])
    await LLMBackend(provider, max_page_chars=10).verify(request)
    assert "[CONTENT TRUNCATED]" in provider.calls[0].messages[0].content[0].text


async def test_scripted_backend_accepts_async_callables_and_bools():
    async def verify(request):
        return request.claim == "yes"

    backend = ScriptedBackend(verify=verify)
    assert (await backend.verify(VerifyRequest(claim="yes"))).passed is True
    assert (await backend.verify(VerifyRequest(claim="no"))).passed is False
    assert len(backend.calls) == 2


def test_llm_backend_rejects_zero_trials():
    with pytest.raises(ValueError):
        LLMBackend(voting_provider(True), trials=0)


async def test_a_request_naming_one_trial_makes_one_call():
    provider = voting_provider(True, False, False)
    verdict = await LLMBackend(provider).verify(VerifyRequest(claim="c", trials=1))
    assert len(provider.calls) == 1
    assert verdict.passed is True


async def test_a_request_naming_five_trials_votes_a_majority_of_five():
    provider = voting_provider(True, False, False, True, True)
    verdict = await LLMBackend(provider).verify(VerifyRequest(claim="c", trials=5))
    assert [r.sample_index for r in provider.calls] == [0, 1, 2, 3, 4]
    assert verdict.passed is True


@pytest.mark.parametrize("trials", [0, 2, -1])
def test_a_request_with_an_even_or_non_positive_trial_count_is_a_value_error(trials):
    with pytest.raises(ValueError, match="trials must be an odd number"):
        VerifyRequest(claim="c", trials=trials)


async def test_a_request_without_screenshots_sends_the_page_text_alone():
    provider = voting_provider(True)
    request = VerifyRequest(
        claim="c", sources=["https://p/"], page_texts=["page"], images=["aGVsbG8="]
    )
    backend = LLMBackend(provider, trials=1)
    await backend.verify(request)
    await backend.verify(request.model_copy(update={"screenshots": False}))
    with_images, text_only = (call.messages[0].content for call in provider.calls)
    assert [type(part).__name__ for part in with_images] == ["TextPart", "ImagePart"]
    assert [type(part).__name__ for part in text_only] == ["TextPart"]


# -- templates structured output cannot fill ------------------------------------------------


class Scores(BaseModel):
    scores: dict[str, int] = {}


class Loose(BaseModel):
    anything: dict[str, Any] | None = None


class Bare(BaseModel):
    name: str | None = None
    attributes: dict = {}


class Place(BaseModel):
    name: str | None = None
    tags: dict[str, str] = {}


class Places(BaseModel):
    places: list[Place] = []


class Rows(BaseModel):
    rows: list[dict[str, str]] = []


class Section(BaseModel):
    title: str | None = None
    parts: list[Section] = []
    meta: dict[str, str] | None = None


@pytest.mark.parametrize(
    ("template", "path"),
    [
        (Scores, "scores"),
        (Loose, "anything"),
        (Bare, "attributes"),
        (Places, "places[].tags"),
        (Rows, "rows[]"),
        (Section, "meta"),
    ],
    ids=["str-to-int", "optional-any", "bare-dict", "nested-in-list", "list-item", "recursive"],
)
def test_a_template_with_a_map_field_is_rejected_naming_template_field_and_fix(template, path):
    with pytest.raises(TemplateError) as info:
        ExtractRequest.for_template(template, prompt="p")
    message = str(info.value)
    assert f"extraction template {template.__name__} has a map field" in message
    assert f"at '{path}':" in message
    assert "Fix: use a list of models with key and value fields" in message


def test_a_map_template_is_rejected_every_time_not_only_the_first():
    for _ in range(2):
        with pytest.raises(TemplateError):
            ExtractRequest.for_template(Scores, prompt="p")


def test_a_template_error_is_a_type_error_of_judgegen():
    with pytest.raises(TypeError) as info:
        ExtractRequest.for_template(Scores, prompt="p")
    assert isinstance(info.value, JudgegenError)


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None


class Empty(BaseModel):
    pass


class Outline(BaseModel):
    title: str | None = None
    parts: list[Outline] = []


@pytest.mark.parametrize(
    "template", [Open, Empty, Outline, Commit], ids=["extra-allowed", "empty", "recursive", "flat"]
)
def test_a_template_without_map_fields_builds_its_request_as_before(template):
    request = ExtractRequest.for_template(template, prompt="p")
    assert request.output_schema == template.model_json_schema()
    assert request.schema_name == template.__name__
