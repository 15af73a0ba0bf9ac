"""`judgegen run --ray`: the scheduler of a local run, with evaluations done on a cluster.

The driver keeps everything that decides or records (fingerprints, reuse, the results files,
budget stops, summaries); the gateway serves the LLM, pages and tools; node runners run the
judges. A budget or cache stop travels back as the evaluation's error kind, as locally; a lost
gateway stops the run too (exit 3), whether an evaluation or the end of the run finds it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.evaluator import PageSource
from toolkit.llm.usage import UsageSummary
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.report import Progress, RunReport
from toolkit.runner.scheduler import RunOptions, run_evaluations
from toolkit.scale.cluster import cluster_session
from toolkit.scale.errors import GatewayLost, is_ray_failure, raised_in_actor
from toolkit.scale.executor import ClusterExecutor
from toolkit.scale.gateway import ServicesFactory
from toolkit.scale.messages import GatewayInfo, RunnerSettings
from toolkit.scale.nodes import DEFAULT_ATTEMPTS


class GatewayModels:
    """The driver's stand-in for the gateway's backend: its models, for results and keys.

    The scheduler reads the models; judging happens on the nodes, never through this.
    """

    def __init__(self, info: GatewayInfo) -> None:
        self.model = info.model
        self.extract_model = info.extract_model

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        raise RuntimeError("a cluster run's driver does not judge: evaluations run on nodes")

    async def verify(self, request: VerifyRequest) -> Verdict:
        raise RuntimeError("a cluster run's driver does not judge: evaluations run on nodes")


@dataclass
class ClusterRun:
    """What a cluster run reports besides the run report."""

    report: RunReport
    llm_line: str | None
    cluster_line: str
    lost_nodes: Mapping[str, str]
    llm: UsageSummary | None = None
    """The gateway client's LLM totals (what `llm_line` says)."""

    def summary(self) -> UsageSummary | None:
        """The run's LLM totals, counted by the gateway's client."""
        return self.llm

    def summary_line(self) -> str:
        """The `LLM:` line (the gateway's client saw every call), then the cluster's line."""
        return "\n".join(line for line in (self.llm_line, self.cluster_line) if line)


async def run_on_cluster(
    inputs: list[AnswerInput],
    *,
    address: str,
    services: ServicesFactory,
    options: RunOptions,
    runner: RunnerSettings,
    pages: PageSource | None = None,
    progress: Progress,
    attempts: int = DEFAULT_ATTEMPTS,
) -> ClusterRun:
    """Evaluate `inputs` on the cluster at `address`; results written here, as locally.

    `services` builds the backend, pages and tools at the gateway; `pages` is the driver's
    read-only view of the same page store (to tell if stored results' pages still hold).
    """
    async with cluster_session(address) as session:
        gateway = session.create_gateway(services)
        try:
            started = session.start_runners(gateway, runner, attempts=attempts)
            info, nodes = await asyncio.gather(session.start_gateway(gateway), started)
            executor = ClusterExecutor(
                nodes,
                gateway,
                wait_s=runner.limits.timeout_s,
                abandoned_wait_s=options.abandoned_wait_s,
            )
            try:
                report = await run_evaluations(
                    inputs,
                    backend=GatewayModels(info),
                    options=replace(options, backend_spec=options.backend_spec or info.identity),
                    executor=executor,
                    pages=pages,
                    progress=progress,
                )
            finally:
                await executor.aclose()
                await session.stop_runners(nodes)
            await _close_gateway(session, gateway)  # its calls left running get their rows
            llm_line, llm = await _gateway_totals(gateway, report)
        finally:
            await _close_gateway(session, gateway)  # (once: a second close does nothing)
            session.ray.kill(gateway, no_restart=True)
        lost = {r.node_id: r.lost for r in nodes.runners if r.lost}
        return ClusterRun(report, llm_line, nodes.line("evaluations"), lost, llm)


async def _close_gateway(session: Any, gateway: Any) -> None:
    """Close the gateway's services before its actor is killed (`Gateway.aclose`); a gateway
    lost by then is found so by `_gateway_totals`. What closing them raised there (a late
    ledger row that could not be written: `LedgerError`) is raised here, as a local run's
    close raises it: the command stops saying so (exit 3)."""
    try:
        await gateway.aclose.remote()
    except session.ray.exceptions.RayError as exc:
        raised = raised_in_actor(exc)
        if raised is not None:
            raise raised from None


async def _gateway_totals(
    gateway: Any, report: RunReport
) -> tuple[str | None, UsageSummary | None]:
    """The gateway's `LLM:` line and totals. A gateway lost by now took them with it, and
    perhaps ledger rows and cache entries not yet flushed: the run stops (exit 3) saying so,
    its results kept, instead of ending in Ray's traceback."""
    try:
        return await gateway.summary_line.remote(), await gateway.summary.remote()
    except Exception as exc:
        if not is_ray_failure(exc):
            raise
        lost = GatewayLost.of(exc)
    reason = f"{type(lost).__name__}: {lost}"
    if not report.stopped:
        report.stopped = reason
    elif type(lost).__name__ not in report.stopped:  # stopped for another reason first
        report.stopped = f"{report.stopped}; then {reason}"
    return f"LLM: totals unknown, {lost}", None
