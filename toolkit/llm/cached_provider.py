"""The response cache in front of a provider: serves stored answers the mode allows, checks
each stored answer against its schema once, and lets identical in-flight requests share one call.

Invariants: a request is keyed by the provider this layer wraps; an error raises before
anything is stored; a truncated, refused or empty output, or one that fails its schema, is never
stored; a stored answer that is truncated, refused or empty (one imported from recordings, or
stored by an older judgegen), or fails its schema, is a miss. A
call returns once its answer is committed, or, inside `deferring_commits`, once it is queued
(the barrier then holds the commit); every caller of a shared call waits for that commit, and
a failed store fails each of them with its own error (only the caller that paid carries the
usage). A caller that stops waiting for a call another unit of work made is counted by its own
tracker of abandoned calls (`toolkit.llm.abandoned`), so it can tell what it was waiting for.
An answer is stored with its origin (`recorded_by` the provider; a replayed one's is what its
record says), and a hit carries its entry's origin (`LLMResponse.origin`), so no layer above
counts an answer no model gave as a model's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NamedTuple

from toolkit.awaitables import mark_retrieved
from toolkit.errors import CacheError, LLMError, ReplayMiss
from toolkit.llm.abandoned import AbandonedCalls, current_abandoned, left_shared_call
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.commits import current_barrier
from toolkit.llm.concurrency import Deferral, current_deferral
from toolkit.llm.diff import miss_message
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.origin import UNKNOWN, RecordOrigin
from toolkit.llm.pricing import is_free, is_simulated
from toolkit.llm.provider import Provider, answer_problems, cacheable
from toolkit.llm.records import CacheRecord


def recorded_by(provider: str, response: LLMResponse) -> RecordOrigin:
    """The origin of `response`, an answer the provider named `provider` gave: a scripted
    policy's is a fixture, a replayed recording's is what its record says (`response.origin`,
    unknown if none: a replay never makes it more), any other provider's is recorded live."""
    if is_simulated(provider):
        return RecordOrigin(source="scripted", provider=provider)
    if is_free(provider):
        return response.origin or UNKNOWN
    return RecordOrigin(source="live", provider=provider)


class CachedProvider:
    """Wraps a provider with the response cache; identical in-flight requests share one call.

    Mode `off` is a plain pass-through (no key is computed, nothing is shared; a call whose
    caller is cancelled is cancelled too, and told to `on_abandoned`).
    """

    def __init__(self, inner: Provider, cache: ResponseCache | None, mode: CacheMode) -> None:
        if cache is None and mode is not CacheMode.OFF:
            raise ValueError(f"cache mode {mode.value} needs a cache")
        self.inner = inner
        self.cache = cache
        self.mode = mode
        self.name = inner.name
        self._inflight: dict[str, _InFlight] = {}
        """Calls in flight by key."""
        self.on_abandoned: Callable[[LLMRequest, asyncio.Future[LLMResponse]], None] | None = None
        """Told of a call its maker stopped waiting for, which goes on (shared, and paid for),
        or has ended but not been accounted for (its maker was cancelled while waiting for the
        commit), or, with the cache off, was cancelled with its maker: `LLMClient` accounts for
        it in the ledger once it ends."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """A stored answer when the mode allows, else one shared provider call. The request
        is keyed, shared and stored as this provider's, whatever provider it names: answers
        of two providers sharing one cache file never stand for each other's."""
        if request.provider != self.name:
            request = request.model_copy(update={"provider": self.name})
        if self.mode is CacheMode.OFF:
            return await self._passed_through(request)
        key = request.cache_key()
        if self.cache is not None and self.mode is not CacheMode.REFRESH:
            found = self.cache.lookup(key)
            if found is not None and self._usable(key, request, found.response, found.checked):
                return _as_hit(found.response, found.origin)
            if self.mode is CacheMode.STRICT:
                recorded = self.cache.requests(request.model)
                raise ReplayMiss(miss_message("strict cache miss", request, recorded))
        return await self._shared(key, request)

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    async def _passed_through(self, request: LLMRequest) -> LLMResponse:
        """The provider's answer, uncached. A caller cancelled meanwhile cancels the call and
        tells `on_abandoned`, as a cached call's maker does: the request may have been sent,
        so the ledger still gets its row (`abandoned`, or paid if the call had ended)."""
        call = asyncio.ensure_future(self.inner.complete(request))
        try:
            return await call
        except asyncio.CancelledError:
            if self.on_abandoned is not None:
                self.on_abandoned(request, call)
            raise

    async def _shared(self, key: str, request: LLMRequest) -> LLMResponse:
        shared = self._inflight.get(key)
        if shared is not None:
            if shared.deferral is not None and current_deferral() is None:
                shared.deferral.promote()  # now someone waits for it: it takes its turn
            try:
                response = await _wait_as_follower(shared.call, self.name)
            except asyncio.CancelledError:  # e.g. its judge timed out: the call is the maker's
                left_shared_call(shared.maker)
                raise
            await _after_store(shared.stored, self._hurry, paid=None)  # the maker paid
            return response
        stored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stored.add_done_callback(mark_retrieved)  # its callers may all have stopped waiting
        task = asyncio.ensure_future(self._call_and_store(key, request, stored))
        self._inflight[key] = _InFlight(task, stored, current_abandoned.get(), current_deferral())
        task.add_done_callback(lambda done: self._settle(key, done, stored))
        try:
            response = await asyncio.shield(task)
            await _after_store(stored, self._hurry, paid=response.usage)
        except asyncio.CancelledError:  # in flight, or paid and waiting for its commit
            if self.on_abandoned is not None:
                self.on_abandoned(request, task)
            raise
        return response

    def _hurry(self) -> None:
        """Have the cache commit what is queued now: a caller waits for it."""
        if self.cache is not None:
            self.cache.hurry()

    def _settle(
        self, key: str, done: asyncio.Future[LLMResponse], stored: asyncio.Future[None]
    ) -> None:
        """Forget the finished call; mark its error seen even if every waiter was cancelled;
        a call that failed stored nothing: its commit's future ends too."""
        self._inflight.pop(key, None)
        failed = done.cancelled() or done.exception() is not None
        if failed and not stored.done():
            stored.set_result(None)

    def _usable(self, key: str, request: LLMRequest, stored: LLMResponse, checked: bool) -> bool:
        """A stored answer is served only if it is complete and passes its schema (checked once
        per entry: an entry this layer stored was checked before it was stored)."""
        if not cacheable(stored) or (not checked and answer_problems(request, stored)):
            why = "answers that are truncated, refused, empty or fail their schema are misses"
            self.cache.forget(key, why)  # type: ignore[union-attr]
            return False
        if not checked:
            self.cache.mark_checked(key)  # type: ignore[union-attr]
        return True

    async def _call_and_store(
        self, key: str, request: LLMRequest, stored: asyncio.Future[None]
    ) -> LLMResponse:
        """The provider's answer, checked against its schema and queued for the cache;
        `stored` gets the outcome of its commit."""
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
            origin = recorded_by(self.name, response)
            record = CacheRecord.of(request, response, key, origin)
            replace = self.mode is CacheMode.REFRESH
            commit = self.cache.put_queued(record, replace=replace, checked=True)  # type: ignore[union-attr]
            commit.add_done_callback(lambda done: _pass_on(done, stored))
        else:
            stored.set_result(None)
        return response


class _InFlight(NamedTuple):
    """A call in flight, shared by identical requests."""

    call: asyncio.Future[LLMResponse]
    stored: asyncio.Future[None]
    """The commit of its answer (done with None when nothing is stored)."""
    maker: AbandonedCalls | None
    """The tracker of abandoned calls of the unit of work that made it, if one was open."""
    deferral: Deferral | None
    """The Deferral its maker's calls wait under (`toolkit.llm.concurrency`), if deferred: a
    caller someone waits on promotes it, never queueing behind a call nobody needed."""


async def _after_store(
    stored: asyncio.Future[None], hurry: Callable[[], None], *, paid: Usage | None
) -> None:
    """Wait for the answer's commit (`hurry`ing the cache's writer), or leave it to the open
    commit barrier (unless it has begun to settle: the call outlived its unit of work). A
    failed store raises a `CacheError` of this caller's own, with the usage it `paid` for the
    answer (which the ledger records); a caller that shared another's call paid nothing."""
    barrier = current_barrier.get()
    if barrier is not None and barrier.add(stored, hurry):
        return
    if not stored.done():
        hurry()
    try:
        await asyncio.shield(stored)  # shared by every caller: one leaving must not cancel it
    except CacheError as exc:
        raise exc.for_caller(paid) from exc


def _pass_on(commit: asyncio.Future[None], stored: asyncio.Future[None]) -> None:
    """Hand a commit's outcome to the future the call's callers wait on."""
    if stored.done():
        return
    if commit.cancelled():
        stored.cancel()
    elif commit.exception() is not None:
        stored.set_exception(commit.exception())  # type: ignore[arg-type]
    else:
        stored.set_result(None)


async def _wait_as_follower(task: asyncio.Future[LLMResponse], provider: str) -> LLMResponse:
    """A shared call's result for a request that did not make it: a hit of the origin its
    answer is stored with (`recorded_by` the provider named `provider`), or the error without
    its usage (the caller that made the call already accounts for it)."""
    try:
        response = await asyncio.shield(task)
        return _as_hit(response, recorded_by(provider, response))
    except LLMError as exc:
        raise LLMError(
            str(exc), kind=exc.kind, usage=Usage(), attempts=exc.attempts, body=exc.body
        ) from exc


def _as_hit(response: LLMResponse, origin: RecordOrigin) -> LLMResponse:
    return response.model_copy(update={"cache_hit": True, "cost_usd": 0.0, "origin": origin})
