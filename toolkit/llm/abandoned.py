"""Calls a unit of work stopped waiting for, and what the ledger found they cost once they ended.

A judge that times out, or whose process ends, leaves its LLM calls behind. With the response
cache on they go on (shared, and paid for) and the ledger writes their row when they end; with
it off they are cancelled with their caller (a row of error `abandoned`: the request was sent,
what it cost is not known). A unit of work that opens `tracking_abandoned()` — the runner does,
around each evaluation — is handed each such call's ledger row as it is written, and can wait
for the calls still running (`AbandonedCalls.settle`) to charge what they cost to its own
account: the ledger and the unit's usage then count the same calls.

A unit of work may also stop waiting for a call another one made: identical requests in flight
share one call, which only its maker pays for (`toolkit.llm.cached_provider`). The tracker
counts those (`AbandonedSpend.followed`), so the unit can say what it was waiting for when it
stopped, though the call is none of its own.

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
    @property
    def origin(self) -> str | None: ...


@dataclass(frozen=True)
class AbandonedSpend:
    """The calls a unit of work abandoned: the ledger rows of those that ended by the end of
    the wait (paid, failed, or cancelled: error `abandoned`, cost unknown), and how many were
    still running then (their rows, and cost, come later); and how many calls of other units
    of work it was waiting for when it stopped (`followed`: none of its own, charged to their
    makers)."""

    rows: tuple[CallRow, ...] = ()
    running: int = 0
    followed: int = 0

    @property
    def calls(self) -> int:
        """How many calls were abandoned."""
        return len(self.rows) + self.running


NOTHING_ABANDONED = AbandonedSpend()


class AbandonedCalls:
    """The calls one unit of work abandoned, each a future of its ledger row."""

    def __init__(self) -> None:
        self._rows: list[asyncio.Future[CallRow | None]] = []
        self._followed = 0

    def add(self) -> asyncio.Future[CallRow | None]:
        """A future for the row of a call just abandoned: the ledger sets it when it writes
        the row (None: the call ended with an error the ledger keeps no row of)."""
        row: asyncio.Future[CallRow | None] = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        return row

    def follow(self, calls: int = 1) -> None:
        """Count `calls` calls another unit of work made, shared with this one, that this one
        stopped waiting for (they are their maker's to pay and account for)."""
        self._followed += calls

    @property
    def calls(self) -> int:
        """How many calls were abandoned since the last `settle`."""
        return len(self._rows)

    @property
    def followed(self) -> int:
        """How many calls of other units of work were left (`follow`) since the last `settle`."""
        return self._followed

    def running(self) -> bool:
        """Whether a call abandoned so far has no row yet (settling would wait for it)."""
        return any(not row.done() for row in self._rows)

    async def settle(self, timeout_s: float) -> AbandonedSpend:
        """The calls abandoned so far, once each has its row or `timeout_s` has passed, and
        those of other units of work left."""
        followed, self._followed = self._followed, 0
        if not self._rows:
            return AbandonedSpend(followed=followed) if followed else NOTHING_ABANDONED
        rows, self._rows = self._rows, []
        running = [row for row in rows if not row.done()]
        if running:
            await asyncio.wait(running, timeout=max(0.0, timeout_s))
        ended = tuple(row.result() for row in rows if row.done())
        return AbandonedSpend(
            rows=tuple(row for row in ended if row is not None),
            running=sum(not row.done() for row in rows),
            followed=followed,
        )


current_abandoned: ContextVar[AbandonedCalls | None] = ContextVar(
    "judgegen_abandoned_calls", default=None
)


def left_shared_call(maker: AbandonedCalls | None) -> None:
    """The current unit of work stopped waiting for a shared call made under `maker`'s
    tracker: counted by its own tracker when that is another's (a unit's own call, made
    under its own tracker, is counted as abandoned by its maker's caller, if it was)."""
    tracker = current_abandoned.get()
    if tracker is not None and tracker is not maker:
        tracker.follow()


def tracking_abandoned() -> AbstractContextManager[AbandonedCalls]:
    """Track the calls abandoned inside (in tasks started inside too): the caller `settle`s
    the tracker yielded to learn what they cost."""
    return scoped(current_abandoned, AbandonedCalls())
