"""A limit on how many provider calls run at once (cache hits never wait for a slot).

Calls made under a `Deferral` (`start_deferred`) are made for a result nobody waits for yet:
a cited page's wave partner once an earlier page of its wave supported the claim
(`toolkit.sources`). They take a slot only while another stays free, and yield their turn
to every other waiting call, until `promote()` says someone now waits for them (as a call
sharing one of them in flight does, `toolkit.llm.cached_provider`); so a claim that needs
its verdict now never queues behind a check whose verdict no one may need.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolkit.errors import LLMError
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.provider import Provider

T = TypeVar("T")

DEFERRED_HEADROOM = 1
"""Slots a deferred call leaves free for calls someone waits on (when the limit allows one)."""


class Deferral:
    """The calls of one deferred task: they wait behind other calls until `promote()`."""

    def __init__(self) -> None:
        self.deferred = True
        self._waiting: list[tuple[ConcurrencyLimit, _Waiter]] = []

    def promote(self) -> None:
        """Someone now waits for these calls: they queue like any other, in arrival order."""
        if self.deferred:
            self.deferred = False
            waiting, self._waiting = self._waiting, []
            for limit, waiter in waiting:
                limit._promoted(waiter)


_deferral: ContextVar[Deferral | None] = ContextVar("judgegen_deferral", default=None)


def current_deferral() -> Deferral | None:
    """The Deferral of the calls made here now, if they are deferred."""
    deferral = _deferral.get()
    return deferral if deferral is not None and deferral.deferred else None


def start_deferred(work: Coroutine[Any, Any, T]) -> tuple[asyncio.Task[T], Deferral]:
    """Run `work` in a task whose provider calls are deferred until the Deferral is promoted."""
    deferral = Deferral()
    token = _deferral.set(deferral)
    try:
        task = asyncio.ensure_future(work)  # the task copies the context as it is now
    finally:
        _deferral.reset(token)
    return task, deferral


@dataclass(order=True)
class _Waiter:
    """A call waiting for a slot, ordered by arrival."""

    arrival: int
    granted: asyncio.Future[None] = field(compare=False)


class ConcurrencyLimit:
    """Wraps a provider so that at most `limit` of its calls are in flight; a waiting call
    gets the next free slot in arrival order, deferred calls last (see the module)."""

    def __init__(self, inner: Provider, limit: int) -> None:
        if limit < 1:
            raise ValueError("concurrency limit must be at least 1")
        self.inner = inner
        self.limit = limit
        self.name = inner.name
        self.headroom = DEFERRED_HEADROOM if limit > DEFERRED_HEADROOM else 0
        self._arrivals = itertools.count()
        self._needed: list[_Waiter] = []  # a heap, by arrival
        self._deferred: deque[_Waiter] = deque()
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Wait for a free slot, then forward `request`."""
        await self._acquire(_deferral.get())
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self.inner.complete(request)
        finally:
            self.in_flight -= 1
            self._grant()

    async def _acquire(self, deferral: Deferral | None) -> None:
        waiter = _Waiter(next(self._arrivals), asyncio.get_running_loop().create_future())
        if deferral is not None and deferral.deferred:
            self._deferred.append(waiter)
            deferral._waiting.append((self, waiter))
        else:
            heapq.heappush(self._needed, waiter)
        self._grant()
        if waiter.granted.done():
            return
        try:
            await waiter.granted
        except BaseException:  # a cancelled waiter stays queued, skipped when its turn comes
            if waiter.granted.done() and not waiter.granted.cancelled():
                self.in_flight -= 1  # granted as it was cancelled: the slot goes on
            self._grant()
            raise

    def _promoted(self, waiter: _Waiter) -> None:
        """`waiter` is waited for now: it queues by its arrival (and leaves the deferred
        queue when its turn there comes, granted already)."""
        if not waiter.granted.done():
            heapq.heappush(self._needed, waiter)
            self._grant()

    def _grant(self) -> None:
        """Give free slots to the waiters: the earliest arrival not deferred, else the first
        deferred one while `headroom` slots stay free. Waiters cancelled or granted already
        (a promoted one, still in the deferred queue) are dropped as they come up."""
        while True:
            if self._needed:
                queue: list[_Waiter] | deque[_Waiter] = self._needed
                waiter, room = self._needed[0], 0
            elif self._deferred:
                queue, waiter, room = self._deferred, self._deferred[0], self.headroom
            else:
                return
            if not waiter.granted.done():
                if self.limit - self.in_flight <= room:
                    return
                self.in_flight += 1
                waiter.granted.set_result(None)
            if queue is self._needed:
                heapq.heappop(self._needed)
            else:
                self._deferred.popleft()

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)
