"""The dollar cap stops new calls cleanly; in-flight calls finish; the run says what was skipped."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.llm.conftest import verify_request
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, openai_completion
from toolkit.errors import BudgetExceeded, LLMError
from toolkit.llm.budget import BUDGET_FIX
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.pricing import ModelPrice, PriceTable
from toolkit.llm.scripted import ScriptedProvider

ONE_DOLLAR_PER_CALL = PriceTable(prices={"m": ModelPrice(input=1_000_000.0, output=0.0)})

VERDICT = '{"reasoning": "r", "result": true}'


def priced(request: LLMRequest) -> LLMResponse:
    return LLMResponse(
        text=VERDICT, parsed=json.loads(VERDICT), model=request.model, usage=Usage(input_tokens=1)
    )


async def test_calls_stop_once_the_budget_is_spent() -> None:
    provider = ScriptedProvider(priced)
    client = LLMClient(provider, budget_usd=2.0, prices=ONE_DOLLAR_PER_CALL, concurrency=1)
    for index in range(2):
        await client.complete(verify_request(f"c{index}", model="m"))
    with pytest.raises(BudgetExceeded):
        await client.complete(verify_request("c2", model="m"))
    assert len(provider.calls) == 2
    assert client.budget.spent_usd == pytest.approx(2.0)
    assert [s.purpose for s in client.budget.not_done] == ["verify"]
    assert "1 requests not made" in client.summary_line()


async def test_a_refused_call_names_the_cap_as_given_and_the_fix() -> None:
    client = LLMClient(
        ScriptedProvider(priced), budget_usd=0.0001, prices=ONE_DOLLAR_PER_CALL, concurrency=1
    )
    await client.complete(verify_request("c0", model="m"))
    with pytest.raises(BudgetExceeded) as refused:
        await client.complete(verify_request("c1", model="m"))
    assert "budget of $0.0001 reached" in str(refused.value)
    assert str(refused.value).endswith(f"Fix: {BUDGET_FIX}")


async def test_in_flight_calls_finish_and_queued_ones_are_refused() -> None:
    async def slow(request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(0.02)
        return priced(request)

    provider = ScriptedProvider(slow)
    client = LLMClient(provider, budget_usd=0.5, prices=ONE_DOLLAR_PER_CALL, concurrency=2)
    calls = [client.complete(verify_request(f"c{i}", model="m")) for i in range(6)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    done = [r for r in results if isinstance(r, LLMResponse)]
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert (len(done), len(refused)) == (2, 4)
    assert len(provider.calls) == 2
    assert len(client.budget.not_done) == 4


async def test_cache_hits_are_served_after_the_budget_is_spent(tmp_path) -> None:
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.cache_mode import CacheMode

    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(
        ScriptedProvider(priced),
        cache=cache,
        cache_mode=CacheMode.RW,
        budget_usd=1.0,
        prices=ONE_DOLLAR_PER_CALL,
    )
    await client.complete(verify_request("a", model="m"))
    assert (await client.complete(verify_request("a", model="m"))).cache_hit


async def test_a_capped_call_to_a_model_without_a_price_is_refused_before_it_is_sent(
    stub: StubAPI,
) -> None:
    """An unpriced model costs $0 in the table, so a cap could never stop it: with a cap
    set, a real provider refuses the call (config error) instead of spending unmetered."""
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(VERDICT)))
    provider = OpenAIProvider(base_url=stub.url("/v1"), max_retries=0)
    client = LLMClient(provider, budget_usd=1.0)
    with pytest.raises(LLMError) as caught:
        await client.complete(verify_request(model="gpt-5.5"))
    assert caught.value.kind == "config"
    assert 'llm.prices."gpt-5.5"' in str(caught.value)
    assert stub.received == []


async def test_an_uncapped_call_to_a_model_without_a_price_goes_through(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(VERDICT)))
    client = LLMClient(OpenAIProvider(base_url=stub.url("/v1"), max_retries=0))
    response = await client.complete(verify_request(model="gpt-5.5"))
    assert response.parsed == {"reasoning": "r", "result": True}
    assert "no price for gpt-5.5" in client.summary_line()
