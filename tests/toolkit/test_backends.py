"""Judging backends: the LLM backend's prompts and majority vote, the scripted backend."""

from __future__ import annotations

import json
from itertools import cycle

import pytest
from pydantic import BaseModel

from toolkit.backends import (
    UNAVAILABLE_REASON,
    ExtractRequest,
    LLMBackend,
    ScriptedBackend,
    Verdict,
    VerifyRequest,
)
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
