"""The node runner: one actor per node, running judges in the node's own sandboxed pool and
capturing pages with the node's own Chromium.

Evaluations run through the shared run builder (`judge_executor`) over the gateway's
forwarded services, so every node applies the same sandbox and limits as a local run. The
pool and the browser start on first use and stay warm for the rest of the run. An evaluation
fails on its own (the driver's retries are for a node's loss), with `GatewayLost` noted, when
the gateway is lost before the pool could start: the node is fine, the run stops. An
evaluation ends as a local one does (`end_calls`): the backend or tool calls its judge left
running are cancelled before its result goes back, so none answers into a result already
sent; the gateway then ends its attempt there too (`Gateway.end`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from toolkit.errors import InfraError
from toolkit.pages.capture import CaptureOptions, capture_page, chromium_session
from toolkit.pages.store import PageRecord
from toolkit.runner.builder import judge_executor
from toolkit.runner.executors import Executor
from toolkit.runner.fingerprint import toolkit_identity
from toolkit.runner.metering import Meter, current_meter, end_calls
from toolkit.runner.page_reads import recording_page_reads
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, error_dict
from toolkit.scale.errors import GatewayLost, is_ray_failure
from toolkit.scale.forwarding import (
    GatewayBackend,
    GatewayLink,
    GatewayPages,
    current_attempt,
    gateway_tools,
)
from toolkit.scale.messages import GatewayInfo, NodeResult, RunnerSettings


class NodeRunner:
    """Runs evaluations and page captures on one node; `node_id` names the node."""

    def __init__(
        self,
        node_id: str,
        gateway: Any = None,
        settings: RunnerSettings | None = None,
        cancel: Callable[[Any], Any] | None = None,
    ) -> None:
        self.node_id = node_id
        self.gateway = gateway
        self.settings = settings or RunnerSettings()
        self.cancel = cancel
        """How a gateway call the judge gave up on is cancelled there: `ray.cancel` (None), or
        the in-process actors' own (`tests/scale/fake_cluster.py`), where `ray.cancel` would
        quietly start a real Ray instance."""
        self._stack = AsyncExitStack()
        self._executor: Executor | None = None
        self._browser: Any = None
        self._lock = asyncio.Lock()

    async def ready(self) -> str:
        """The node this runner is on (answers once the actor is up)."""
        return self.node_id

    async def code(self) -> str:
        """The judgegen code this node runs (`toolkit_identity`), which must be the driver's."""
        return toolkit_identity()

    async def _pool(self) -> Executor:
        async with self._lock:
            if self._executor is None:
                if self.gateway is None:
                    raise RuntimeError("this node runner has no gateway: it only captures pages")
                try:
                    info: GatewayInfo = await self.gateway.info.remote()
                except Exception as exc:
                    if not is_ray_failure(exc):
                        raise
                    raise GatewayLost.of(exc) from None
                link = GatewayLink(self.gateway, info, cancel=self.cancel or _ray_cancel)
                settings = self.settings
                self._executor = await self._stack.enter_async_context(
                    judge_executor(
                        GatewayBackend(link),
                        isolation="sandbox" if settings.sandbox else "in_process",
                        pages=GatewayPages(link) if info.pages else None,
                        tools=gateway_tools(link),
                        limits=settings.limits,
                        jobs=settings.jobs,
                        require_sandbox=settings.require_sandbox,
                    )
                )
            return self._executor

    async def evaluate(self, job: EvalJob, attempt: str = "") -> NodeResult:
        """Run one judge on one answer here, as `attempt` (its gateway calls say so); the
        outcome, its usage and the pages it read."""
        try:
            executor = await self._pool()
        except GatewayLost as exc:  # raised on, it would read as this node's loss (a Ray error)
            failure = EvalOutcome.failure(job, exc.kind, str(exc), error_type=type(exc).__name__)
            noted = error_dict(type(exc).__name__, exc.kind, str(exc))
            return NodeResult(outcome=failure, infra=[noted], node_id=self.node_id, attempt=attempt)
        meter = Meter()
        token = current_meter.set(meter)
        named = current_attempt.set(attempt or None)
        try:
            with recording_page_reads() as log:
                outcome = await executor.evaluate(job)
        finally:
            current_attempt.reset(named)
            current_meter.reset(token)
        await end_calls(meter, self.settings.limits.timeout_s)
        return NodeResult(
            outcome=outcome,
            usage=meter.usage,
            clipped=sorted(meter.clipped),
            reads=log.reads(),
            infra=meter.infra,
            tool_calls=meter.tool_calls,
            notes=meter.notes,
            node_id=self.node_id,
            attempt=attempt,
        )

    async def capture(self, url: str, options: CaptureOptions) -> PageRecord:
        """Capture one page with this node's Chromium (started on the first capture)."""
        try:
            async with self._lock:
                if self._browser is None:
                    session = chromium_session(options)
                    self._browser = await self._stack.enter_async_context(session)
        except InfraError as exc:  # no or broken Chromium on this node: as a local capture says
            return PageRecord.failure(url, "browser", f"{exc} (on Ray node {self.node_id[:12]})")
        return await capture_page(self._browser, url, options)

    async def aclose(self) -> None:
        """Stop the pool's workers and the browser."""
        await self._stack.aclose()
        self._executor = self._browser = None


def _ray_cancel(pending: Any) -> Any:
    """`ray.cancel` (Ray is imported on a node only when a judge's call is first linked)."""
    import ray

    return ray.cancel(pending)
