"""A provider that fails many calls in a row is down: the client stops calling it.

Counted in a row: connection, server, overloaded and timeout failures (each already retried by
the SDK). A success or any other failure (the provider answered) starts the count again; a rate
limit neither counts nor resets. Once open, every call fails at once as `outage`; cache hits
are still served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from tests.llm.stub_api import StubAPI
from toolkit.errors import LLMError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.outage import OUTAGE_FIX, OutageBreaker
from toolkit.llm.scripted import ScriptedProvider

OK = "ok"


def scripted(outcomes: Iterable[str]) -> ScriptedProvider:
    """A provider whose calls end, in order, as `outcomes`: `OK` answers, any other word
    fails as an `LLMError` of that kind; calls after the last outcome fail as `connection`."""
    left = list(outcomes)

    def policy(request: LLMRequest) -> dict:
        kind = left.pop(0) if left else "connection"
        if kind == OK:
            return verdict(request)
        raise LLMError(f"LLM call failed ({kind}, HTTP 503): upstream unavailable", kind=kind)

    return ScriptedProvider(policy)


async def outcome(breaker: OutageBreaker, index: int) -> str:
    """How call `index` through `breaker` ended: `OK`, or its error's kind."""
    try:
        await breaker.complete(verify_request(f"claim {index}"))
    except LLMError as exc:
        return exc.kind
    return OK


async def outcomes(breaker: OutageBreaker, calls: int) -> list[str]:
    return [await outcome(breaker, index) for index in range(calls)]


async def test_it_opens_after_the_threshold_of_connection_and_server_failures_in_a_row() -> None:
    breaker = OutageBreaker(scripted(["connection", "server", "timeout"]), threshold=3)
    assert await outcomes(breaker, 3) == ["connection", "server", "outage"]
    assert breaker.open


async def test_a_success_in_between_starts_the_count_again() -> None:
    provider = scripted(["connection", "server", OK, "connection", "overloaded", "timeout"])
    breaker = OutageBreaker(provider, threshold=3)
    assert await outcomes(breaker, 6) == [
        "connection",
        "server",
        OK,
        "connection",
        "overloaded",
        "outage",
    ]


@pytest.mark.parametrize("answered", ["invalid_output", "refused", "request"])
async def test_a_failure_the_provider_answered_starts_the_count_again(answered: str) -> None:
    breaker = OutageBreaker(scripted(["server", "server", answered, "server", "server"]), 3)
    assert await outcomes(breaker, 5) == ["server", "server", answered, "server", "server"]
    assert not breaker.open


async def test_a_rate_limit_neither_counts_nor_starts_the_count_again() -> None:
    provider = scripted(["server", "rate_limit", "rate_limit", "server", "server"])
    breaker = OutageBreaker(provider, threshold=3)
    assert await outcomes(breaker, 5) == [
        "server",
        "rate_limit",
        "rate_limit",
        "server",
        "outage",
    ]


async def test_once_open_calls_fail_as_outage_without_reaching_the_provider() -> None:
    provider = scripted(["connection"] * 2 + [OK] * 10)  # it would answer: never asked again
    breaker = OutageBreaker(provider, threshold=2)
    assert await outcomes(breaker, 5) == ["connection", "outage", "outage", "outage", "outage"]
    assert len(provider.calls) == 2


async def test_a_call_in_flight_when_it_opens_still_returns_its_answer() -> None:
    released = asyncio.Event()

    async def policy(request: LLMRequest) -> dict:
        if request.prompt_text().endswith("slow"):
            await released.wait()
            return verdict(request)
        raise LLMError("LLM call failed (connection, APIConnectionError): reset", kind="connection")

    breaker = OutageBreaker(ScriptedProvider(policy), threshold=2)
    slow = asyncio.ensure_future(breaker.complete(verify_request("slow")))
    await asyncio.sleep(0)
    assert await outcomes(breaker, 2) == ["connection", "outage"]
    released.set()
    assert (await slow).parsed is not None
    assert breaker.open


async def test_the_client_opens_after_max_10_or_twice_its_concurrency_failures() -> None:
    for concurrency, threshold in ((1, 10), (8, 16)):
        provider = scripted([])
        client = LLMClient(provider, concurrency=concurrency)
        kinds = []
        for index in range(threshold + 3):
            with pytest.raises(LLMError) as failed:
                await client.complete(verify_request(f"claim {index}"))
            kinds.append(failed.value.kind)
        assert kinds == ["connection"] * (threshold - 1) + ["outage"] * 4
        assert len(provider.calls) == threshold


async def test_the_outage_names_the_count_the_last_error_and_the_fix() -> None:
    breaker = OutageBreaker(scripted(["timeout", "server"]), threshold=2)
    await outcomes(breaker, 2)
    with pytest.raises(LLMError) as refused:
        await breaker.complete(verify_request())
    message = str(refused.value)
    assert "2 calls in a row failed" in message
    assert "LLMError (server): LLM call failed (server, HTTP 503): upstream unavailable" in message
    assert f"Fix: {OUTAGE_FIX}" in message
    assert message.endswith(OUTAGE_FIX) and "JUDGEGEN_LLM_BASE_URL" in message


async def test_cache_hits_are_still_served_once_it_is_open(tmp_path: Path) -> None:
    provider = scripted([OK])
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = LLMClient(provider, cache=cache, cache_mode=CacheMode.RW, concurrency=1)
    answered = await client.complete(verify_request("cached claim"))
    for index in range(10):
        with pytest.raises(LLMError):
            await client.complete(verify_request(f"claim {index}"))
    assert client.breaker.open
    hit = await client.complete(verify_request("cached claim"))
    assert hit.cache_hit and hit.parsed == answered.parsed
    assert len(provider.calls) == 11
    await client.aclose()


async def test_a_refused_call_leaves_a_ledger_row_of_kind_outage_costing_nothing() -> None:
    client = LLMClient(scripted([]), concurrency=1)
    for index in range(11):
        with pytest.raises(LLMError):
            await client.complete(verify_request(f"claim {index}"))
    rows = client.ledger.rows
    assert [row.error for row in rows] == ["connection"] * 9 + ["outage"] * 2
    assert rows[-1].cost_usd == 0 and rows[-1].input_tokens == 0
    assert client.summary().errors == 11


async def test_server_errors_of_a_real_provider_open_it(stub: StubAPI) -> None:
    """The OpenAI SDK's 5xx, classified by its provider, counts: no reply queued is a 500."""
    client = LLMClient(OpenAIProvider(base_url=stub.url("/v1"), max_retries=0), concurrency=1)
    kinds = []
    for index in range(12):
        with pytest.raises(LLMError) as failed:
            await client.complete(verify_request(f"claim {index}"))
        kinds.append(failed.value.kind)
    assert kinds == ["server"] * 9 + ["outage"] * 3
    assert len(stub.received) == 10
    assert "HTTP 500" in str(failed.value)
    await client.aclose()
