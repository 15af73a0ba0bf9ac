"""Calls a unit of work stopped waiting for, and what the ledger found they cost once they ended.

A judge that times out, or whose process ends, leaves its LLM calls behind. With the response
cache on they go on (shared, and paid for) and the ledger writes their row when they end; with
it off they are cancelled with their caller (a row of error `abandoned`: the request was sent,
what it cost is not known). A unit of work that opens `tracking_abandoned()` — the runner does,
around each evaluation — is handed each such call's ledger row as it is written, and can wait
for the calls still running (`AbandonedCalls.settle`) to charge what they cost to its own
account: the ledger and the unit's usage then count the same calls.

Nothing is tracked, and nothing waited for, outside an open tracker; a unit of work that
abandoned no call settles at once.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from toolkit.util.scoped import scoped


class CallRow(Protocol):
    """What a tracker reads of a `toolkit.llm.ledger.LedgerRow` (named by its shape: the
    ledger imports this module to hand rows over, so this module does not import it)."""

    @property
    def error(self) -> str | None: ...
    @property
    def cache_hit(self) -> bool: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def answered_by(self) -> str | None: ...


@dataclass(frozen=True)
class AbandonedSpend:
    """The calls a unit of work abandoned: the ledger rows of those that ended by the end of
    the wait (paid, failed, or cancelled: error `abandoned`, cost unknown), and how many were
    still running then (their rows, and cost, come later)."""

    rows: tuple[CallRow, ...] = ()
    running: int = 0

    @property
    def calls(self) -> int:
        """How many calls were abandoned."""
        return len(self.rows) + self.running


NOTHING_ABANDONED = AbandonedSpend()


class AbandonedCalls:
    """The calls one unit of work abandoned, each a future of its ledger row."""

    def __init__(self) -> None:
        self._rows: list[asyncio.Future[CallRow | None]] = []

    def add(self) -> asyncio.Future[CallRow | None]:
        """A future for the row of a call just abandoned: the ledger sets it when it writes
        the row (None: the call ended with an error the ledger keeps no row of)."""
        row: asyncio.Future[CallRow | None] = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        return row

    @property
    def calls(self) -> int:
        """How many calls were abandoned since the last `settle`."""
        return len(self._rows)

    def running(self) -> bool:
        """Whether a call abandoned so far has no row yet (settling would wait for it)."""
        return any(not row.done() for row in self._rows)

    async def settle(self, timeout_s: float) -> AbandonedSpend:
        """The calls abandoned so far, once each has its row or `timeout_s` has passed."""
        if not self._rows:
            return NOTHING_ABANDONED
        rows, self._rows = self._rows, []
        running = [row for row in rows if not row.done()]
        if running:
            await asyncio.wait(running, timeout=max(0.0, timeout_s))
        ended = tuple(row.result() for row in rows if row.done())
        return AbandonedSpend(
            rows=tuple(row for row in ended if row is not None),
            running=sum(not row.done() for row in rows),
        )


current_abandoned: ContextVar[AbandonedCalls | None] = ContextVar(
    "judgegen_abandoned_calls", default=None
)


def tracking_abandoned() -> AbstractContextManager[AbandonedCalls]:
    """Track the calls abandoned inside (in tasks started inside too): the caller `settle`s
    the tracker yielded to learn what they cost."""
    return scoped(current_abandoned, AbandonedCalls())
