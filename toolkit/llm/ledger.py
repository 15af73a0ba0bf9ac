"""The usage ledger: one row per LLM request (paid, cached or failed) and the summary line.

Invariant: every request the client answers or fails leaves exactly one row, so the
summary's figures add up to what was paid, including failed calls whose tokens were billed. A
call still running when its client has closed (its provider ignored the cancellation) has no
row yet, perhaps never: the summary counts it apart (`UsageSummary.unrecorded_calls`).
Rows are appended as JSON lines when a path is given; they never contain prompts or keys.
The file is opened once per ledger and each row is flushed to the OS as it is recorded, so a
killed process loses no row (a power cut may lose what the OS had not yet written).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, Field

from toolkit.errors import CacheError, LedgerError, LLMError
from toolkit.llm.abandoned import CallRow, current_abandoned
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.origin import RecordOrigin, Source
from toolkit.llm.pricing import PriceTable, is_free, is_simulated
from toolkit.llm.provider import Provider
from toolkit.llm.usage import UsageSummary

LEDGER_VERSION = 4
"""2: `answered_by`, the model the provider said answered (rows of version 1 read with None:
not recorded). 3: `origin` and `imported_from`, where a cache hit's stored answer came from
(rows of earlier versions read with None: not recorded). 4: `saved_usd` counts only hits of
answers recorded live (rows of earlier versions counted every hit's, fixtures too), and a hit
of an answer stored while replaying recordings has the origin its record says (no longer
`replay`)."""


class LedgerRow(BaseModel):
    """One request's accounting."""

    version: int = LEDGER_VERSION
    ts: float = Field(description="Unix time when the request finished.")
    purpose: str
    task_id: str | None = None
    provider: str = ""
    model: str = Field(
        description="The model asked for (an alias such as `o4-mini`, or a snapshot)."
    )
    answered_by: str | None = Field(
        default=None,
        description="The model the provider said answered (the response's `model`, e.g. the "
        "dated snapshot an alias pointed to then; for a cache hit, the stored answer's); None "
        "when it said none, the request failed, or the hit's record is of unknown origin, or "
        "an older judgegen's `replay` entry (its `model` is only what a file says).",
    )
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = Field(default=0.0, description="Paid for this request (0 on a cache hit).")
    saved_usd: float = Field(
        default=0.0,
        description="What a cache hit of an answer recorded live (`origin` live) would have "
        "cost: 0 for a hit of any other origin (a fixture cost nothing; no saving is claimed "
        "for an answer that does not say a model was paid for it) and for a replay's.",
    )
    estimated_usd: float = Field(
        default=0.0, description="Replayed fixture: what the call would have cost live (paid $0)."
    )
    cache_hit: bool = False
    origin: Source | None = Field(
        default=None,
        description="A cache hit's: where the stored answer came from (`RecordOrigin.source`: "
        "live, scripted, unknown, before_origins, or replay for an older judgegen's replayed "
        "entry; an answer stored while replaying has its record's); None for a call answered "
        "now.",
    )
    imported_from: str | None = Field(
        default=None, description="A cache hit's: the record file its entry was imported from."
    )
    latency_s: float = 0.0
    error: str | None = Field(default=None, description="LLMError kind when the request failed.")


class Ledger:
    """Appends `LedgerRow`s to a JSON-lines file if given, and keeps the totals of its summary.

    The rows themselves are kept in memory (`rows`) only when there is no file, or when asked:
    the file is the full record, and a long run would otherwise hold every row (~1 KB per call)
    to its end."""

    def __init__(
        self,
        path: Path | None = None,
        prices: PriceTable | None = None,
        *,
        keep_rows: bool | None = None,
    ) -> None:
        self.path = path
        self.prices = prices or PriceTable()
        self.keep_rows = path is None if keep_rows is None else keep_rows
        self.rows: list[LedgerRow] = []
        self._totals = UsageSummary()
        self._models: set[str] = set()
        self._file: TextIO | None = None
        self.lost: LedgerError | None = None
        """The first failure of a row nobody was waiting for (`record_late`): `close` raises it
        (a row that comes after the close too, if the command closes the ledger again once
        its event loop has ended)."""

    def record(self, row: LedgerRow) -> None:
        """Count `row` and append it to the file, flushed at once (one write, no open per row);
        a file that cannot be written raises `LedgerError` (the row stays counted)."""
        self._count(row)
        if self.keep_rows:
            self.rows.append(row)
        if self.path is not None:
            try:
                if self._file is None or self._file.closed:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._file = self.path.open("a", encoding="utf-8")
                self._file.write(row.model_dump_json() + "\n")
                self._file.flush()
            except OSError as exc:
                self._drop_file()  # the row it holds could not be written: never retried
                raise LedgerError(self.path, exc.strerror or str(exc)) from None

    def record_late(self, row: LedgerRow, *, overdue: bool = False) -> None:
        """`record` a row from a callback, where no caller would see its failure: the first
        failure is kept in `lost`, for `close` to raise (the command then stops, exit 3).
        `overdue`: the row of a call counted as unrecorded, come after all (no longer so)."""
        if overdue:
            self._totals.unrecorded_calls -= 1
        try:
            self.record(row)
        except LedgerError as exc:
            self.lost = self.lost or exc

    def unrecorded(self, calls: int) -> None:
        """Count `calls` LLM calls the ledger has no row of (still running as their client
        closes), so `summary` does not pass for every call's (`UsageSummary.unrecorded_calls`)."""
        self._totals.unrecorded_calls += calls

    def close(self) -> None:
        """Close the file (rows are already flushed; a later `record` reopens it); raise the
        `LedgerError` of a late row that could not be written, once. A late row may still come
        after the close: a call its provider kept running past the client's close ends when
        the command's event loop ends (`asyncio.run` cancels it again), so a command closes
        the ledger again then, for that row's failure too."""
        if self._file is not None:
            self._file.close()
            self._file = None
        lost, self.lost = self.lost, None
        if lost is not None:
            raise lost

    def _drop_file(self) -> None:
        """Forget the open file without flushing what it holds (a write that just failed)."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()  # its flush fails again; the descriptor is closed all the same

    def row_for(
        self,
        request: LLMRequest,
        usage: Usage,
        *,
        hit: bool,
        latency: float,
        error: str | None,
        free: bool = False,
        answered_by: str | None = None,
        origin: RecordOrigin | None = None,
    ) -> LedgerRow:
        """A row for one finished request, priced from the table; a `free` (replayed) call
        costs and saves nothing and records the live price as an estimate; a hit saves its
        price only if its `origin` says it was recorded live. `answered_by`: the model the
        response names (empty: None; not recorded for a hit whose `origin` does not name its
        model, `RecordOrigin.names_its_model`)."""
        if hit and origin is not None and not origin.names_its_model:
            answered_by = None
        cost = self.prices.cost(request.model, usage)
        estimate = 0.0 if hit else cost
        if free:
            cost = 0.0
        return LedgerRow(
            ts=time.time(),
            purpose=request.metadata.purpose,
            task_id=request.metadata.task_id,
            provider=request.provider,
            model=request.model,
            answered_by=answered_by or None,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=0.0 if hit else cost,
            saved_usd=cost if hit and origin is not None and origin.recorded_live else 0.0,
            estimated_usd=estimate if free else 0.0,
            cache_hit=hit,
            origin=origin.source if hit and origin is not None else None,
            imported_from=origin.imported_from if hit and origin is not None else None,
            latency_s=round(latency, 6),
            error=error,
        )

    def summary(self) -> UsageSummary:
        """Totals of every row recorded; tokens count paid calls only (hits cost nothing)."""
        unpriced = sorted(m for m in self._models if self.prices.price_for(m) is None)
        by_origin = dict(self._totals.cached_by_origin)  # not the running totals' own
        return self._totals.model_copy(
            update={"unpriced_models": unpriced, "cached_by_origin": by_origin}
        )

    def _count(self, row: LedgerRow) -> None:
        """Add `row` to the running totals `summary` reports (the rows need not be kept)."""
        totals = self._totals
        totals.calls += 1
        totals.errors += bool(row.error)
        totals.saved_usd += row.saved_usd
        totals.estimated_usd += row.estimated_usd
        self._models.add(row.model)
        if row.cache_hit:
            totals.cached += 1
            if row.origin is not None:
                by_origin = totals.cached_by_origin
                by_origin[row.origin] = by_origin.get(row.origin, 0) + 1
            return
        totals.input_tokens += row.input_tokens + row.cache_read_tokens + row.cache_write_tokens
        totals.output_tokens += row.output_tokens
        totals.cost_usd += row.cost_usd
        if is_simulated(row.provider):
            totals.simulated_usd += row.cost_usd


ABANDONED = "abandoned"
"""The error of a ledger row for a call nobody waited for that the command's end cancelled."""

_call_started: ContextVar[float | None] = ContextVar("judgegen_ledger_call_started", default=None)
"""When the caller's `LedgerProvider.complete` began: per task, so one request object in flight
twice (or a recycled object id) cannot lend an abandoned call another call's start."""


class LedgerProvider:
    """Wraps a provider and writes one ledger row per request, hit, miss or failure."""

    def __init__(
        self, inner: Provider, ledger: Ledger, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.inner = inner
        self.ledger = ledger
        self.name = inner.name
        self._clock = clock
        self._left: set[asyncio.Future[LLMResponse]] = set()
        """Calls nobody waits for any more, still running: their row is written when they end."""
        self._overdue: set[asyncio.Future[LLMResponse]] = set()
        """Of those, the ones still running after `cancel_abandoned`'s wait: counted by the
        ledger as unrecorded until their row comes, if it ever does."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward `request`; record usage, cost, latency and cache hit, or the error kind.

        The row's cost and saving are copied onto the response (or the error), so every
        record made from it shows the ledger's figures."""
        started = self._clock()
        token = _call_started.set(started)
        try:
            response = await self.inner.complete(request)
        except LLMError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            row = self._row(request, usage, False, started, exc.kind)
            self.ledger.record(row)
            exc.cost_usd = row.cost_usd
            raise
        except CacheError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            row = self._row(request, usage, False, started, exc.kind)
            self.ledger.record(row)
            exc.cost_usd = row.cost_usd
            raise
        finally:
            _call_started.reset(token)
        row = self._answered_row(request, response, started)
        self.ledger.record(row)
        response.cost_usd, response.saved_usd = row.cost_usd, row.saved_usd
        response.estimated_usd = row.estimated_usd
        return response

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    def abandoned(self, request: LLMRequest, call: asyncio.Future[LLMResponse]) -> None:
        """`request`'s maker stopped waiting (e.g. a judge timed out) while its call goes on:
        write its row when the call ends, as `complete` would have — a paid answer nobody
        waited for still costs. A call cancelled in turn (the command ended first, or, with the
        cache off, its maker was cancelled) gets a row of error `abandoned` and no usage: it
        was sent, and what it cost is not known. The maker's tracker of abandoned calls, if
        it has one open (`toolkit.llm.abandoned`), is handed the row too."""
        started = _call_started.get()  # told in the abandoning caller's task, inside `complete`
        if started is None:
            started = self._clock()
        tracker = current_abandoned.get()  # the abandoning caller's, as `started`
        told = tracker.add() if tracker is not None else None
        call.add_done_callback(lambda done: self._late_row(request, started, done, told))
        if not call.done():
            self._left.add(call)
            call.add_done_callback(self._left.discard)

    async def cancel_abandoned(self, wait_s: float) -> int:
        """Cancel the calls nobody waits for that are still running, as the end of
        `asyncio.run` cancels them in a local command, and wait up to `wait_s` for their rows
        (`abandoned`): a process that ends by other means (a Ray actor killed) writes them too.
        Those still running after the wait (their provider ignores the cancellation) are
        counted by the ledger as calls it has no row of (their rows are lost with the process,
        unless they come after all); how many."""
        left = [call for call in self._left if not call.done()]
        for call in left:
            call.cancel()
        if left:
            await asyncio.wait(left, timeout=max(0.0, wait_s))
        overdue = [call for call in left if not call.done()]
        self._overdue.update(overdue)
        self.ledger.unrecorded(len(overdue))
        return len(overdue)

    def _late_row(
        self,
        request: LLMRequest,
        started: float,
        done: asyncio.Future[LLMResponse],
        told: asyncio.Future[CallRow | None] | None = None,
    ) -> None:
        row = None
        if done.cancelled():
            row = self._row(request, Usage(), False, started, ABANDONED)
        elif (error := done.exception()) is None:
            response = done.result()
            row = self._answered_row(request, response, started)
        elif isinstance(error, (LLMError, CacheError)):
            usage = error.usage if isinstance(error.usage, Usage) else Usage()
            row = self._row(request, usage, False, started, error.kind)
        overdue = done in self._overdue
        self._overdue.discard(done)
        if row is not None:
            self.ledger.record_late(row, overdue=overdue)
        if told is not None and not told.done():
            told.set_result(row)

    def _answered_row(
        self, request: LLMRequest, response: LLMResponse, started: float
    ) -> LedgerRow:
        """The row of a call `response` answered (a hit carries its entry's origin)."""
        return self._row(
            request,
            response.usage,
            response.cache_hit,
            started,
            None,
            response.model,
            response.origin,
        )

    def _row(
        self,
        request: LLMRequest,
        usage: Usage,
        hit: bool,
        started: float,
        error: str | None,
        answered_by: str | None = None,
        origin: RecordOrigin | None = None,
    ) -> LedgerRow:
        latency = self._clock() - started
        free = is_free(self.name)
        return self.ledger.row_for(
            request,
            usage,
            hit=hit,
            latency=latency,
            error=error,
            free=free,
            answered_by=answered_by,
            origin=origin,
        )
