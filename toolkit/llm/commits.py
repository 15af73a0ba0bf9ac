"""Deferred cache commits: a unit of work that waits for its answers' commits once, at its end.

An LLM call normally returns only once its paid answer is committed to the response cache
(~1 ms on this path, and a chain of dependent calls waits for it at every step). A unit of
work that opens `deferring_commits()` — the runner does, around each evaluation — lets its
calls return as soon as their answers are queued, and waits for all of them with `settled()`
before it records anything built from them: its result is written only once every answer it
used is on disk, as before, and a failed store still fails it (never silently).

Without an open barrier (a library call, the generator) every call waits for its own commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar

from toolkit.awaitables import mark_retrieved
from toolkit.util.scoped import scoped


class CommitBarrier:
    """The commits of one unit of work, waited for together."""

    def __init__(self) -> None:
        self._commits: list[asyncio.Future[None]] = []
        self._hurries: set[Callable[[], None]] = set()  # bound methods: equal per object
        self._settling = False

    def add(self, commit: asyncio.Future[None], hurry: Callable[[], None] | None = None) -> bool:
        """Count `commit` in (its error is raised by `settled`) and return True; False once
        the barrier has begun to settle. A call that outlives its unit of work (a task a judge
        left running) must then wait for its own commit: added later, a failed store would
        reach nobody. `hurry` is called when the barrier begins to wait for the commit (a
        writer that lingers before committing)."""
        if self._settling:
            return False
        commit.add_done_callback(mark_retrieved)  # reported by `settled`, unless abandoned
        self._commits.append(commit)
        if hurry is not None:
            self._hurries.add(hurry)
        return True

    async def settled(self) -> None:
        """Return once every commit added is done (hurrying their writers); raise the first
        one's error, if any. The barrier takes no commit from then on (`add`)."""
        self._settling = True
        commits, self._commits = self._commits, []
        hurries, self._hurries = self._hurries, set()
        for hurry in hurries:
            hurry()
        if not commits:
            return
        # shielded: other callers may wait on the same commit (a shared call), and a
        # cancelled wait here must not cancel it for them
        outcomes = await asyncio.gather(*map(asyncio.shield, commits), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome


current_barrier: ContextVar[CommitBarrier | None] = ContextVar(
    "judgegen_commit_barrier", default=None
)


def deferring_commits() -> AbstractContextManager[CommitBarrier]:
    """Defer the commits of the calls made inside (tasks started inside included) to the
    barrier yielded, which the caller must `settled()` before using their answers' results."""
    return scoped(current_barrier, CommitBarrier())
