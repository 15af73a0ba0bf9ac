"""Group commit for the response cache: answers are stored by a background thread, every
answer queued meanwhile in one transaction, so concurrent LLM calls neither queue behind one
write lock nor block the event loop on SQLite.

The writer lingers `linger_s` after an answer is queued before it writes (unless someone
waits for a commit: `hurry`). Storing an answer holds the interpreter lock for a few hundred
µs (its storage form, the SQLite calls), and an answer is queued exactly when the event loop
is busiest — handling that answer and its vote partner, then sending the next request — so
writing at once delays the call that depends on it (one evaluation of the runner bench's
chain workload, sandboxed: its answers were taken up ~15 ms later in all over its 53 rounds);
a moment later the loop is waiting for the model.

Invariants: `committed` returns once the answer is committed (or raises the write's error), so
a caller that awaits it has its paid answer on disk before it goes on, as a direct write would
(`queue` hands back that outcome as a future, for a caller that waits later — `commits` — and
calls `hurry` when it begins to wait); a queued answer is served to lookups of this process at
once (`pending`); `flush` and `close` return once everything queued before them is written,
without lingering. The thread starts on the first answer and waits for more until `close`; it
is a daemon, since nothing is left to write at exit once every caller awaited `committed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.origin import UNKNOWN, RecordOrigin

WRITE_LINGER_S = 0.02
"""How long the writer waits, after an answer is queued, for the event loop to go idle (and
for more answers to share the transaction), unless a caller waits for a commit."""


class PendingWrite(NamedTuple):
    """One answer to store: `replace` an existing entry or not; `checked` against its schema;
    where it came from."""

    key: str
    request: LLMRequest
    response: LLMResponse
    replace: bool
    checked: bool
    origin: RecordOrigin = UNKNOWN


class WriteBehind:
    """Queues `PendingWrite`s and hands them, in batches, to `write` on a background thread."""

    def __init__(
        self,
        write: Callable[[list[PendingWrite]], None],
        name: str,
        linger_s: float | None = None,
    ) -> None:
        self._write = write
        self._name = name
        self._linger_s = WRITE_LINGER_S if linger_s is None else linger_s
        self._cond = threading.Condition()
        self._queued: dict[str, PendingWrite] = {}
        self._waiters: list[Callable[[BaseException | None], None]] = []
        self._writing: dict[str, PendingWrite] = {}
        self._thread: threading.Thread | None = None
        self._closing = False
        self._urgent = False

    async def committed(self, item: PendingWrite) -> None:
        """Queue `item` and return once it is committed; raises the error that stopped the
        write."""
        done = self.queue(item)
        self.hurry()
        await done

    def hurry(self) -> None:
        """Write what is queued now, without lingering: someone waits for it."""
        with self._cond:
            self._urgent = True
            self._cond.notify_all()

    def queue(self, item: PendingWrite) -> asyncio.Future[None]:
        """Queue `item` (an entry already queued for its key is kept unless `item.replace`);
        the returned future ends when it is committed, with the error that stopped the write.

        The writer wakes the event loop once, with the outcome (no thread-safe future in
        between: each costs a condition variable and a chained callback per call)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle(error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
                loop.call_soon_threadsafe(_settle, done, error)

        self._enqueue(item, settle)
        return done

    def _enqueue(self, item: PendingWrite, waiter: Callable[[BaseException | None], None]) -> None:
        """Queue `item`; wake the writer only for the batch's first answer: one that lingers
        waits for its deadline or `hurry`, not for more answers, and waking it for each costs
        a thread switch (and the interpreter lock) per LLM call."""
        with self._cond:
            first = not self._queued
            if item.replace or item.key not in self._queued:
                self._queued[item.key] = item
            self._waiters.append(waiter)
            if first:
                self._cond.notify_all()
            if self._thread is None:
                self._closing = False
                self._thread = threading.Thread(target=self._drain, name=self._name, daemon=True)
                self._thread.start()

    def pending(self, key: str) -> PendingWrite | None:
        """The answer queued or being written under `key`, if any."""
        with self._cond:
            return self._queued.get(key) or self._writing.get(key)

    def flush(self) -> None:
        """Wait until everything queued so far is written (or failed)."""
        with self._cond:
            self._urgent = True
            self._cond.notify_all()
            while self._thread is not None and (self._queued or self._writing):
                self._cond.wait()

    def close(self) -> None:
        """Write what is queued, then stop the thread (a later `committed` starts another)."""
        with self._cond:
            thread, self._closing = self._thread, True
            self._cond.notify_all()
        if thread is not None:
            thread.join()

    def _linger(self) -> None:
        """Wait (holding `_cond`) until `linger_s` has passed since the batch's first answer
        was queued, unless the writer is hurried or closing."""
        deadline = time.monotonic() + self._linger_s
        while not (self._urgent or self._closing):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _drain(self) -> None:
        while True:
            with self._cond:
                while not self._queued and not self._closing:
                    self._cond.wait()
                self._linger()
                self._urgent = False
                if not self._queued:
                    self._thread = None
                    self._cond.notify_all()
                    return
                self._writing, self._queued = self._queued, {}
                waiters, self._waiters = self._waiters, []
                batch = list(self._writing.values())
            error: BaseException | None = None
            try:
                self._write(batch)
            except BaseException as exc:  # handed to every caller waiting on this batch
                error = exc
            with self._cond:
                self._writing = {}
                self._cond.notify_all()
            for waiter in waiters:
                waiter(error)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    """Hand a write's outcome to its waiter (unless the waiter was cancelled meanwhile)."""
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
