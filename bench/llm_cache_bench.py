"""Prints how fast the LLM layer serves cached answers and what it adds to every call.

Run: python bench/llm_cache_bench.py [--requests 2000]

Figures (a zero-latency provider, so only the layer's own cost shows):
- raw cache lookups per second (ResponseCache.get on known keys);
- cached completions per second through LLMClient (ledger + cache hit);
- per-call overhead of LLMClient over calling the provider directly, with the cache off
  (ledger, concurrency limit, budget) and in rw mode on misses (plus one SQLite write each).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolkit.errors import LLMError
from toolkit.llm.cache import CacheMode, ResponseCache
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, SystemBlock, Usage

PREFIX = "You verify claims against web pages. " * 200


class ZeroLatencyProvider:
    """Answers at once with a fixed verdict; counts calls."""

    name = "zero"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        usage = Usage(input_tokens=2000, output_tokens=50)
        return LLMResponse(text="{}", parsed={"result": True}, model=request.model, usage=usage)

    def classify(self, error: BaseException) -> LLMError:
        return LLMError(str(error))


def make_requests(count: int, tag: str) -> list[LLMRequest]:
    """Verification-shaped requests with a long shared prefix and distinct claims."""
    return [
        LLMRequest(
            provider="zero",
            model="o4-mini",
            system=[SystemBlock(text=PREFIX, cache=True)],
            messages=[Message.user(f"{tag} claim number {i}: the page says so.")],
            output_schema={"type": "object"},
            metadata=RequestMeta(purpose="verify"),
        )
        for i in range(count)
    ]


async def per_call(fn: Callable[[LLMRequest], Awaitable[object]], batch: list[LLMRequest]) -> float:
    """Mean seconds per sequential call of `fn` over `batch`."""
    started = time.perf_counter()
    for request in batch:
        await fn(request)
    return (time.perf_counter() - started) / len(batch)


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite"
        provider = ZeroLatencyProvider()
        rw = LLMClient(provider, cache=ResponseCache(path), cache_mode=CacheMode.RW)
        direct = await per_call(provider.complete, make_requests(count, "direct"))
        off = LLMClient(provider, cache_mode=CacheMode.OFF)
        layered_off = await per_call(off.complete, make_requests(count, "off"))
        warm = make_requests(count, "warm")
        layered_miss = await per_call(rw.complete, warm)
        keys = [r.cache_key() for r in warm]
        cache = ResponseCache(path)
        started = time.perf_counter()
        for key in keys:
            cache.get_response(key)
        lookups = count / (time.perf_counter() - started)
        before = provider.calls
        hit = await per_call(rw.complete, warm)
        assert provider.calls == before, "cached pass must make no provider call"
        print(f"requests per pass:                 {count}")
        print(f"raw cache lookups per second:      {lookups:,.0f}")
        print(f"cached completions per second:     {1 / hit:,.0f} (LLMClient, ledger included)")
        print(f"provider alone, per call:          {direct * 1e6:,.1f} µs")
        print(f"layer overhead, cache off:         {(layered_off - direct) * 1e6:,.1f} µs per call")
        print(
            f"layer overhead, cache rw (miss):   {(layered_miss - direct) * 1e6:,.1f} µs per call"
        )
        print(f"summary: {rw.summary_line()}")
        await rw.aclose()
        cache.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    asyncio.run(main(parser.parse_args().requests))
