"""Prints how fast the LLM layer serves cached answers, what it adds to every call, and what
it stores per response.

Run: python bench/llm_cache_bench.py [--requests 2000] [--verifications 20]

Figures (a zero-latency provider, so only the layer's own cost shows):
- raw cache lookups per second (ResponseCache.get_response on known keys);
- cached completions per second through LLMClient (ledger + cache hit + output check);
- per-call overhead of LLMClient over calling the provider directly, with the cache off
  (ledger, concurrency limit, budget) and in rw mode on misses (plus one SQLite write each);
- page verifications (300 KB page text + a screenshot, three trials each because the first two
  disagree): milliseconds of layer time per verification, cold and cached, and the bytes the
  cache file grows by per stored response.
The script only uses APIs that also existed before the cache format 2, so running it with an
older checkout on PYTHONPATH gives the "before" figures.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolkit.backends import LLMBackend, VerifyRequest
from toolkit.errors import LLMError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, SystemBlock, Usage

PREFIX = "You verify claims against web pages. " * 200
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "result": {"type": "boolean"}},
    "required": ["reasoning", "result"],
}
PAGE_TEXT = "The museum opens at 9:00 and closes at 18:00 on weekdays. " * 5_200  # ~300 KB
SCREENSHOT = "iVBORw0KGgoAAAANSUhEUgAA" * 8_000  # ~190 KB of base64


class ZeroLatencyProvider:
    """Answers at once; verdicts alternate pass/fail by sample index (so votes need 3 trials)."""

    name = "zero"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        usage = Usage(input_tokens=2000, output_tokens=50)
        parsed = {"reasoning": "r", "result": request.sample_index % 2 == 0}
        return LLMResponse(
            text="{}", parsed=parsed, model=request.model, usage=usage, stop_reason="end_turn"
        )

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
            output_schema=VERDICT_SCHEMA,
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


def file_bytes(path: Path) -> int:
    """The cache's size on disk: the SQLite file plus its WAL."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def page_verifications(directory: Path, count: int) -> tuple[float, float, float]:
    """(ms per cold verification, ms per cached verification, bytes stored per response)."""
    path = directory / "pages.sqlite"
    provider = ZeroLatencyProvider()
    client = LLMClient(provider, cache=ResponseCache(path), cache_mode=CacheMode.RW)
    backend = LLMBackend(client, provider="zero")
    requests = [
        VerifyRequest(
            claim=f"The museum opens at 9:00 (claim {i}).",
            sources=["https://museum.example/hours"],
            page_texts=[PAGE_TEXT],
            images=[SCREENSHOT],
        )
        for i in range(count)
    ]
    empty = file_bytes(path)
    started = time.perf_counter()
    for request in requests:
        await backend.verify(request)
    cold = (time.perf_counter() - started) / count
    calls = provider.calls
    started = time.perf_counter()
    for request in requests:
        await backend.verify(request)
    cached = (time.perf_counter() - started) / count
    assert provider.calls == calls, "the cached pass must make no provider call"
    await client.aclose()
    return cold * 1e3, cached * 1e3, (file_bytes(path) - empty) / calls


async def main(count: int, verifications: int) -> None:
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
        cold, cached, per_response = await page_verifications(Path(tmp), verifications)
        print(f"requests per pass:                 {count}")
        print(f"raw cache lookups per second:      {lookups:,.0f}")
        print(f"cached completions per second:     {1 / hit:,.0f} (LLMClient, ledger included)")
        print(f"provider alone, per call:          {direct * 1e6:,.1f} µs")
        print(f"layer overhead, cache off:         {(layered_off - direct) * 1e6:,.1f} µs per call")
        print(
            f"layer overhead, cache rw (miss):   {(layered_miss - direct) * 1e6:,.1f} µs per call"
        )
        print(
            f"page verification (300 KB page + {len(SCREENSHOT) // 1000} KB screenshot, "
            f"3 trials), {verifications} claims:"
        )
        print(f"  layer time per verification:     {cold:,.2f} ms cold, {cached:,.2f} ms cached")
        print(f"  bytes stored per response:       {per_response / 1000:,.1f} KB")
        print(f"summary: {rw.summary_line()}")
        await rw.aclose()
        cache.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--verifications", type=int, default=20)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.requests, arguments.verifications))
