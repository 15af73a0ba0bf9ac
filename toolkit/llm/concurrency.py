"""A limit on how many provider calls run at once (cache hits never wait for a slot).

Calls made under a `Deferral` (`start_deferred`) are made for a result nobody waits for yet:
a cited page's wave partner once an earlier page of its wave supported the claim
(`toolkit.sources`). They take a slot only while another stays free, and yield their turn
to every other waiting call, until `promote()` says someone now waits for them; so a claim
that needs its verdict now never queues behind a check whose verdict no one may need.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine
from contextvars import ContextVar
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
        self._limits: set[ConcurrencyLimit] = set()

    def promote(self) -> None:
        """Someone now waits for these calls: they queue like any other, in arrival order."""
        if self.deferred:
            self.deferred = False
            for limit in self._limits:
                limit._grant()


_deferral: ContextVar[Deferral | None] = ContextVar("judgegen_deferral", default=None)


def start_deferred(work: Coroutine[Any, Any, T]) -> tuple[asyncio.Task[T], Deferral]:
    """Run `work` in a task whose provider calls are deferred until the Deferral is promoted."""
    deferral = Deferral()
    token = _deferral.set(deferral)
    try:
        task = asyncio.ensure_future(work)  # the task copies the context as it is now
    finally:
        _deferral.reset(token)
    return task, deferral


class _Waiter:
    __slots__ = ("deferral", "granted")

    def __init__(self, granted: asyncio.Future[None], deferral: Deferral | None) -> None:
        self.granted, self.deferral = granted, deferral

    @property
    def deferred(self) -> bool:
        return self.deferral is not None and self.deferral.deferred


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
        self._waiters: deque[_Waiter] = deque()
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
        waiter = _Waiter(asyncio.get_running_loop().create_future(), deferral)
        self._waiters.append(waiter)
        self._grant()
        if waiter.granted.done():
            return
        if deferral is not None:
            deferral._limits.add(self)
        try:
            await waiter.granted
        except BaseException:
            if waiter.granted.done() and not waiter.granted.cancelled():
                self.in_flight -= 1  # granted as it was cancelled: the slot goes on
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            self._grant()
            raise

    def _grant(self) -> None:
        """Give free slots to waiters: the first one not deferred, else the first deferred
        one while `headroom` slots stay free."""
        while self._waiters:
            waiter = next((w for w in self._waiters if not w.deferred), self._waiters[0])
            if waiter.granted.done():  # cancelled, and not yet out of the queue
                self._waiters.remove(waiter)
                continue
            if self.limit - self.in_flight <= (self.headroom if waiter.deferred else 0):
                return
            self._waiters.remove(waiter)
            self.in_flight += 1
            waiter.granted.set_result(None)

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)
