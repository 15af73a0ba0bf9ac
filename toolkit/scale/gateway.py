"""The gateway: the one place of a cluster run holding keys, limits, budget, ledger and cache.

One `Gateway` actor runs on the driver's node. It builds the run's services there (the LLM
client with its provider, concurrency limit, rate limits, budget, ledger and response cache;
the page store; the tool providers) from a factory the CLI gives, and answers the judges'
broker calls from every node. Node runners only ever see results and redacted errors, so no
node but the driver's holds a key or writes the ledger, cache or page store.

It also tallies what each attempt's calls cost: a node reports its evaluation's usage with
its result, so an attempt lost with its node reports nothing, while the calls it had answered
here were paid for, and those still running here are waited for, then cancelled (`spent`;
the LLM calls they leave running are followed as an ended attempt's). An attempt whose node
reported is ended here as a local evaluation ends (`end`): its calls still running are
cancelled, and the LLM calls it left running (tracked as `toolkit.llm.abandoned` tracks a
local evaluation's) are waited for, so the driver can charge what they cost (`settle`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from toolkit.backends import JudgingBackend
from toolkit.evaluator import PageSource
from toolkit.llm.abandoned import AbandonedCalls, current_abandoned
from toolkit.llm.client import CLOSE_WAIT_S
from toolkit.llm.ledger import LedgerRow
from toolkit.llm.usage import UsageSummary
from toolkit.runner.fingerprint import toolkit_identity
from toolkit.runner.metering import Meter, current_meter
from toolkit.runner.results import UsageTotals
from toolkit.sandbox.broker import Broker, ToolProvider
from toolkit.sandbox.protocol import Call, Reply
from toolkit.scale.messages import AttemptEnd, AttemptSpend, GatewayInfo, GatewayReply, LeftRunning


@dataclass
class GatewayServices:
    """What the gateway serves: the backend (metered, as a local run builds it) and the rest."""

    backend: JudgingBackend
    identity: str
    pages: PageSource | None = None
    tools: Mapping[str, ToolProvider] = field(default_factory=dict)
    usage_line: Callable[[], str | None] = lambda: None
    """The run's `LLM:` line (None without an LLM client)."""
    usage: Callable[[], UsageSummary | None] = lambda: None
    """The run's LLM totals, as the `LLM:` line counts them (None without an LLM client)."""
    aclose: Callable[[], Awaitable[None]] | None = None
    """Closes the LLM client (flushing the ledger and cache)."""


ServicesFactory = Callable[[], GatewayServices]


LOST = "its attempt was found lost with its Ray node: the call was not made"
ENDED = "its evaluation was over: the call was not made"


@dataclass
class _Attempt:
    """The usage of one attempt's calls so far, its calls still running, the meters they are
    charged to (one per call), and the LLM calls it left running."""

    usage: UsageTotals = field(default_factory=UsageTotals)
    running: set[asyncio.Future[GatewayReply]] = field(default_factory=set)
    meters: list[Meter] = field(default_factory=list)
    abandoned: AbandonedCalls = field(default_factory=AbandonedCalls)


class Gateway:
    """Answers broker calls from every node with the run's one set of services.

    Built in the driver's working directory (relative cache, ledger and page store paths
    mean the same as in a local run). `start` builds the services in the actor's event loop
    thread, where they are then always used.
    """

    def __init__(self, cwd: str, factory: ServicesFactory) -> None:
        os.chdir(cwd)
        self._factory = factory
        self._services: GatewayServices | None = None
        self._broker: Broker | None = None
        self._info: GatewayInfo | None = None
        self._started = asyncio.Event()
        self._attempts: dict[str, _Attempt] = {}
        self._closing = False
        self._closed: dict[str, str] = {}
        """Attempts over, each with why (`LOST`, `ENDED`): their calls are refused. One short
        entry per evaluation: a call sent just before its evaluation ended may arrive after."""

    async def start(self) -> GatewayInfo:
        """Build the services; what they offer, or the error that stopped them."""
        if self._info is None:
            self._info = self._build()
            self._started.set()
        return self._info

    async def info(self) -> GatewayInfo:
        """What `start` returned, once it has (node runners ask while the gateway starts)."""
        await self._started.wait()
        assert self._info is not None
        return self._info

    def _build(self) -> GatewayInfo:
        try:
            services = self._factory()
        except Exception as exc:
            return GatewayInfo(error=f"{type(exc).__name__}: {exc}")
        self._services = services
        self._broker = Broker(services.backend, services.pages, services.tools)
        backend = services.backend
        model = getattr(backend, "model", None)
        return GatewayInfo(
            code=toolkit_identity(),
            model=model,
            extract_model=getattr(backend, "extract_model", None) or model,
            identity=services.identity,
            pages=services.pages is not None,
            screenshots=callable(getattr(services.pages, "screenshot", None)),
            stored_pages=callable(getattr(services.pages, "stored_page", None)),
            tools=sorted(services.tools),
        )

    async def handle(self, call: Call, attempt: str | None = None) -> GatewayReply:
        """Answer one judge's call, made for `attempt` (its usage tallied under it); never
        raises (errors come back in the reply). A call of an attempt over is refused."""
        refused = self._closed.get(attempt) if attempt else None
        if refused is not None:
            error = {"type": "ClusterError", "kind": "cluster", "message": refused}
            return GatewayReply(reply=Reply(call_id=call.call_id, error=error))
        tally = self._attempts.setdefault(attempt, _Attempt()) if attempt else None
        task = asyncio.ensure_future(self._metered(call, tally))  # own task: own meter
        if tally is not None:
            tally.running.add(task)
            task.add_done_callback(tally.running.discard)
        return await task

    async def _metered(self, call: Call, tally: _Attempt | None = None) -> GatewayReply:
        if self._broker is None:
            raise RuntimeError("the gateway was not started")
        meter = Meter()
        current_meter.set(meter)
        if tally is not None:  # the calls this one leaves running are its attempt's
            tally.meters.append(meter)
            current_abandoned.set(tally.abandoned)
        try:
            reply = await self._broker.handle(call)
        finally:  # a call cancelled here still counts what it had cost
            if tally is not None:
                tally.usage = tally.usage + meter.usage
        return GatewayReply(reply=reply, usage=meter.usage, clipped=sorted(meter.clipped))

    async def spent(self, attempt: str, wait_s: float) -> AttemptSpend:
        """What `attempt`, lost with its node, spent here: its calls answered, and those still
        running once they end (waited for up to `wait_s`, then cancelled: no judge is left to
        read them), and how many LLM calls the cancelled ones left running (`settle` says what
        they cost, as for an attempt ended). Its later calls are refused."""
        self._closed[attempt] = LOST
        tally = self._attempts.get(attempt)
        if tally is None:
            return AttemptSpend()
        running = set(tally.running)
        cancelled = 0
        if running:
            _, late = await asyncio.wait(running, timeout=max(0.0, wait_s))
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            cancelled = len(late)
        left = tally.abandoned.calls
        if not left:
            self._attempts.pop(attempt, None)
        return AttemptSpend(usage=tally.usage, cancelled=cancelled, left_running=left)

    async def end(self, attempt: str, wait_s: float) -> AttemptEnd:
        """End `attempt`, whose node reported: its evaluation is over, as `end_calls` ends a
        local one. Its calls still running here are cancelled (waited for up to `wait_s`),
        and its later calls refused. What all its calls cost, how many LLM calls it left
        running (their caller stopped waiting, the calls go on: `settle` says what they cost),
        and how many of other attempts' it was waiting for (`AttemptEnd.followed`).
        """
        self._closed[attempt] = ENDED
        tally = self._attempts.get(attempt)
        if tally is None:
            return AttemptEnd()
        for meter in tally.meters:
            meter.ended = True
        running = [task for task in tally.running if not task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=max(0.0, wait_s))
        left, followed = tally.abandoned.calls, tally.abandoned.followed
        if not left:
            self._attempts.pop(attempt, None)
        return AttemptEnd(usage=tally.usage, left_running=left, followed=followed)

    async def settle(self, attempt: str, wait_s: float) -> LeftRunning:
        """What the LLM calls `attempt` left running cost, once each has ended or `wait_s`
        has passed (`AbandonedCalls.settle`); its tally is dropped."""
        tally = self._attempts.pop(attempt, None)
        if tally is None:
            return LeftRunning()
        left = tally.abandoned.calls
        spend = await tally.abandoned.settle(wait_s)
        rows = [LedgerRow.model_validate(row, from_attributes=True) for row in spend.rows]
        return LeftRunning(rows=rows, unrecorded=left - spend.calls, running=spend.running)

    async def summary_line(self) -> str | None:
        """The LLM client's end-of-command line (calls, cost, budget), if there is a client."""
        return self._services.usage_line() if self._services else None

    async def summary(self) -> UsageSummary | None:
        """The LLM client's totals (what its line says), if there is a client."""
        return self._services.usage() if self._services else None

    async def aclose(self) -> None:
        """Close the services, once: the calls still running are cancelled and their ledger
        rows written (`abandoned`), as a local command's end cancels them, before the LLM
        client closes (flushing the ledger and cache) and the page store. The actor is killed
        next, so a call left running would otherwise never get its row. The `LLM:` line and
        totals still answer after, counting those rows, and the calls still running after the
        client's wait, whose rows are lost with the actor (`UsageSummary.unrecorded_calls`). A
        late row that could not be written raises its `LedgerError` here, as a local command's
        close does (the page store is closed all the same), for the driver to raise in turn
        (`toolkit.scale.run`)."""
        if self._services is None or self._closing:
            return
        self._closing = True
        running = [task for tally in self._attempts.values() for task in tally.running]
        for task in running:  # no attempt should be open by now: none is left to read them
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=CLOSE_WAIT_S)
        try:
            if self._services.aclose is not None:
                await self._services.aclose()
        finally:
            close = getattr(self._services.pages, "close", None)
            if callable(close):
                close()
