"""The response cache in front of a provider: serves stored answers the mode allows, checks
each stored answer against its schema once, and lets identical in-flight requests share one call.

Invariants: an error raises before anything is stored; a truncated or refused output, or one
that fails its schema, is never stored; a stored answer that fails its schema is a miss.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from toolkit.errors import CacheError, LLMError, ReplayMiss
from toolkit.llm.cache import CacheRecord, ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.diff import miss_message
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.provider import REFUSED_STOPS, TRUNCATED_STOPS, Provider, answer_problems


def cacheable(response: LLMResponse) -> bool:
    """Only complete answers are stored: never truncated or refused outputs."""
    return response.stop_reason not in TRUNCATED_STOPS | REFUSED_STOPS


class CachedProvider:
    """Wraps a provider with the response cache; identical in-flight requests share one call.

    Mode `off` is a plain pass-through (no key is computed, nothing is shared).
    """

    def __init__(self, inner: Provider, cache: ResponseCache | None, mode: CacheMode) -> None:
        if cache is None and mode is not CacheMode.OFF:
            raise ValueError(f"cache mode {mode.value} needs a cache")
        self.inner = inner
        self.cache = cache
        self.mode = mode
        self.name = inner.name
        self._inflight: dict[str, asyncio.Future[LLMResponse]] = {}
        self.on_abandoned: Callable[[LLMRequest, asyncio.Future[LLMResponse]], None] | None = None
        """Told of a call its maker stopped waiting for, which goes on (shared, and paid for):
        `LLMClient` accounts for it in the ledger once it ends."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """A stored answer when the mode allows, else one shared provider call."""
        if self.mode is CacheMode.OFF:
            return await self.inner.complete(request)
        key = request.cache_key()
        if self.cache is not None and self.mode is not CacheMode.REFRESH:
            found = self.cache.lookup(key)
            if found is not None and self._usable(key, request, *found):
                return _as_hit(found[0])
            if self.mode is CacheMode.STRICT:
                recorded = self.cache.requests(request.model)
                raise ReplayMiss(miss_message("strict cache miss", request, recorded))
        return await self._shared(key, request)

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    async def _shared(self, key: str, request: LLMRequest) -> LLMResponse:
        task = self._inflight.get(key)
        if task is not None:
            return await _wait_as_follower(task)
        task = asyncio.ensure_future(self._call_and_store(key, request))
        self._inflight[key] = task
        task.add_done_callback(lambda done: self._settle(key, done))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done() and self.on_abandoned is not None:
                self.on_abandoned(request, task)
            raise

    def _settle(self, key: str, done: asyncio.Future[LLMResponse]) -> None:
        """Forget the finished call; mark its error seen even if every waiter was cancelled."""
        self._inflight.pop(key, None)
        if not done.cancelled():
            done.exception()

    def _usable(self, key: str, request: LLMRequest, stored: LLMResponse, checked: bool) -> bool:
        """A stored answer is served only if it passes its schema (checked once per entry)."""
        if checked:
            return True
        if answer_problems(request, stored):
            self.cache.forget(key, "answers that fail their schema are treated as misses")  # type: ignore[union-attr]
            return False
        self.cache.mark_checked(key)  # type: ignore[union-attr]
        return True

    async def _call_and_store(self, key: str, request: LLMRequest) -> LLMResponse:
        response = await self.inner.complete(request)
        problems = answer_problems(request, response)
        if problems:
            raise LLMError(
                f"{request.model}: answer does not match its schema: {'; '.join(problems)}",
                kind="invalid_output",
                usage=response.usage,
                body=response.text[:2000],
            )
        storing = self.cache is not None and self.mode in {CacheMode.RW, CacheMode.REFRESH}
        if storing and cacheable(response):
            record = CacheRecord.of(request, response, key)
            replace = self.mode is CacheMode.REFRESH
            try:  # the paid answer is on disk before the caller goes on
                await self.cache.put_batched(record, replace=replace, checked=True)  # type: ignore[union-attr]
            except CacheError as exc:
                exc.usage = response.usage  # paid for all the same: the ledger records it
                raise
        return response


async def _wait_as_follower(task: asyncio.Future[LLMResponse]) -> LLMResponse:
    """A shared call's result for a request that did not make it: a hit, or the error
    without its usage (the caller that made the call already accounts for it)."""
    try:
        return _as_hit(await asyncio.shield(task))
    except LLMError as exc:
        raise LLMError(
            str(exc), kind=exc.kind, usage=Usage(), attempts=exc.attempts, body=exc.body
        ) from exc


def _as_hit(response: LLMResponse) -> LLMResponse:
    return response.model_copy(update={"cache_hit": True, "cost_usd": 0.0})
