"""A command's event loop stopped by a signal: SIGTERM (what `timeout`, `docker stop`,
systemd, CI cancellation and Kubernetes send) is an interruption, as Ctrl-C is.

Without a handler SIGTERM ends the process at once: answers already paid for whose cache
commit was still queued are lost (the rerun pays again), calls in flight leave no ledger row
and nothing says what happened. `run_stoppable` has it cancel the work as asyncio's own
SIGINT handling does, so the work's cleanup runs (answers committed, calls in flight
accounted for, clients closed) before `Stopped` is raised; a second SIGTERM ends the process
at once. Only the event loop's run is covered: before it nothing is computed yet, after it
everything is written.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

STOP_SIGNALS = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}
"""The signals that stop a command's work, as its stop message names them."""


class Stopped(Exception):
    """The work was stopped by `signum` (after its cleanup ran)."""

    def __init__(self, signum: signal.Signals) -> None:
        super().__init__(f"stopped by {STOP_SIGNALS[signum]}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a command the signal ended: 130 for
        SIGINT, 143 for SIGTERM."""
        return 128 + int(self.signum)


def run_stoppable(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`, with SIGTERM cancelling `work` as Ctrl-C does (unless the process
    ignores SIGTERM, as its parent may have asked). Raises `Stopped` once the cancelled work
    has unwound; work that finished anyway returns its result."""
    received: list[signal.Signals] = []

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def terminated() -> None:
            if received:  # the second one: no more waiting for the cleanup
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            received.append(signal.SIGTERM)
            task.cancel()

        handled = signal.getsignal(signal.SIGTERM) != signal.SIG_IGN
        if handled:
            loop.add_signal_handler(signal.SIGTERM, terminated)
        try:
            return await work
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if received:
            raise Stopped(received[0]) from None
        raise
    except KeyboardInterrupt:
        raise Stopped(signal.SIGINT) from None
