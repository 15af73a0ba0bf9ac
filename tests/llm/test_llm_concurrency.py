"""The concurrency limit bounds provider calls in flight."""

from __future__ import annotations

import asyncio

from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider


async def test_no_more_than_the_limit_run_at_once() -> None:
    async def slow(request: LLMRequest) -> dict:
        await asyncio.sleep(0.01)
        return verdict(request)

    client = LLMClient(ScriptedProvider(slow), concurrency=3)
    await asyncio.gather(*(client.complete(verify_request(f"c{i}")) for i in range(20)))
    assert client.limit.peak == 3
    assert client.summary().calls == 20
