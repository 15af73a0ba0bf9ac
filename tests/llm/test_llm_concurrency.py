"""The concurrency limit bounds provider calls in flight, and deferred calls wait their turn
behind calls someone waits on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.errors import LLMError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.cached_provider import CachedProvider
from toolkit.llm.client import LLMClient
from toolkit.llm.concurrency import ConcurrencyLimit, Deferral, start_deferred
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta
from toolkit.llm.scripted import ScriptedProvider


async def test_no_more_than_the_limit_run_at_once() -> None:
    async def slow(request: LLMRequest) -> dict:
        await asyncio.sleep(0.01)
        return verdict(request)

    client = LLMClient(ScriptedProvider(slow), concurrency=3)
    await asyncio.gather(*(client.complete(verify_request(f"c{i}")) for i in range(20)))
    assert client.limit.peak == 3
    assert client.summary().calls == 20


class HeldProvider:
    """Answers each call once the test releases it (by its request's claim), in any order."""

    name = "held"

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release: dict[str, asyncio.Event] = {}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        claim = request.metadata.task_id
        self.started.append(claim)
        await self.release.setdefault(claim, asyncio.Event()).wait()
        return LLMResponse(text="ok")

    def classify(self, error: BaseException) -> LLMError:  # pragma: no cover - never fails
        raise AssertionError(error)

    def done(self, claim: str) -> None:
        self.release.setdefault(claim, asyncio.Event()).set()


def request(name: str) -> LLMRequest:
    return LLMRequest(model="m", messages=(), metadata=RequestMeta(purpose="verify", task_id=name))


async def turns() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def deferred(limit: ConcurrencyLimit, name: str) -> tuple[asyncio.Task[LLMResponse], Deferral]:
    return start_deferred(limit.complete(request(name)))


def awaited(limit: ConcurrencyLimit, name: str) -> asyncio.Task[LLMResponse]:
    return asyncio.ensure_future(limit.complete(request(name)))


async def test_a_deferred_call_leaves_a_slot_free_for_a_call_someone_waits_on() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 3)
    first, _ = deferred(limit, "d1")
    second, _ = deferred(limit, "d2")
    await turns()
    assert provider.started == ["d1", "d2"]
    third, _ = deferred(limit, "d3")  # only one slot is free: it stays free
    await turns()
    assert provider.started == ["d1", "d2"]
    needed = awaited(limit, "n1")
    await turns()
    assert provider.started == ["d1", "d2", "n1"]
    for name in ("d1", "d2", "d3", "n1"):
        provider.done(name)
    await asyncio.gather(first, second, third, needed)
    assert provider.started == ["d1", "d2", "n1", "d3"]
    assert limit.in_flight == 0 and limit.peak == 3


async def test_a_waiting_call_goes_before_deferred_calls_that_waited_longer() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 2)
    held = awaited(limit, "n1")
    other = awaited(limit, "n2")
    await turns()
    early, _ = deferred(limit, "d1")
    late = awaited(limit, "n3")
    await turns()
    provider.done("n1")
    await turns()
    assert provider.started == ["n1", "n2", "n3"]
    for name in ("n2", "n3", "d1"):
        provider.done(name)
    await asyncio.gather(held, other, early, late)
    assert provider.started == ["n1", "n2", "n3", "d1"]


async def test_a_promoted_call_takes_its_turn_in_arrival_order() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 2)
    held = [awaited(limit, "n1"), awaited(limit, "n2")]
    await turns()
    promoted, deferral = deferred(limit, "d1")
    later = awaited(limit, "n3")
    await turns()
    deferral.promote()
    provider.done("n1")
    await turns()
    assert provider.started == ["n1", "n2", "d1"]
    for name in ("n2", "d1", "n3"):
        provider.done(name)
    await asyncio.gather(*held, promoted, later)
    assert provider.started[-1] == "n3"


async def test_a_deferred_call_runs_when_the_limit_is_one_and_no_one_else_waits() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 1)
    task, _ = deferred(limit, "d1")
    await turns()
    assert provider.started == ["d1"]
    provider.done("d1")
    assert (await task).text == "ok"


async def test_a_call_cancelled_while_it_waits_gives_its_turn_to_the_next() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 1)
    held = awaited(limit, "n1")
    await turns()
    gone = awaited(limit, "n2")
    nxt = awaited(limit, "n3")
    await turns()
    gone.cancel()
    provider.done("n1")
    provider.done("n3")
    await asyncio.gather(held, nxt)
    assert provider.started == ["n1", "n3"]
    assert gone.cancelled() and limit.in_flight == 0


async def test_a_promoted_call_holds_one_slot_though_it_was_queued_twice() -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 2)
    held = [awaited(limit, "n1"), awaited(limit, "n2")]
    await turns()
    promoted, deferral = deferred(limit, "d1")
    await turns()
    deferral.promote()
    provider.done("n1")
    await turns()
    provider.done("n2")
    await turns()
    assert provider.started == ["n1", "n2", "d1"] and limit.in_flight == 1
    provider.done("d1")
    await asyncio.gather(*held, promoted)
    assert limit.in_flight == 0


async def test_a_call_someone_waits_on_is_not_held_back_by_the_identical_deferred_call_it_shares(
    tmp_path: Path,
) -> None:
    provider = HeldProvider()
    limit = ConcurrencyLimit(provider, 2)
    cached = CachedProvider(limit, ResponseCache(tmp_path / "c.sqlite"), CacheMode.RW)

    def named(name: str) -> LLMRequest:
        return LLMRequest(
            model="m",
            messages=[Message.user(name)],
            metadata=RequestMeta(purpose="verify", task_id=name),
        )

    busy = asyncio.ensure_future(cached.complete(named("n1")))
    partner, _ = start_deferred(cached.complete(named("d1")))  # a wave partner nobody awaits
    await turns()
    assert provider.started == ["n1"]  # the one slot left stays free for a call someone needs
    needed = asyncio.ensure_future(cached.complete(named("d1")))  # the same claim and page
    await turns()
    assert provider.started == ["n1", "d1"]  # it takes that slot, though it shares the call
    for name in ("d1", "n1"):
        provider.done(name)
    await asyncio.gather(busy, partner, needed)
    assert limit.in_flight == 0
    cached.cache.close()  # type: ignore[union-attr]
