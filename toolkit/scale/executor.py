"""The driver's executor for a cluster run: the scheduler's evaluations, done on the nodes.

It has the interface of every executor (`evaluate(job) -> EvalOutcome`, never raising), so
the scheduler — fingerprints, reuse, the one results writer, budget stops, summaries — is
the same code as in a local run. What a node reports is charged to the evaluation's meter and
page-read log here, so results record the same usage and pages as locally.
"""

from __future__ import annotations

from toolkit.runner.metering import current_meter
from toolkit.runner.page_reads import current_page_reads
from toolkit.sandbox.protocol import EvalJob, EvalOutcome
from toolkit.scale.errors import ClusterError
from toolkit.scale.messages import NodeResult
from toolkit.scale.nodes import NodeSet


class ClusterExecutor:
    """Sends each evaluation to a node runner; a node lost for good makes it incomplete."""

    def __init__(self, nodes: NodeSet) -> None:
        self.nodes = nodes

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        """Run `job` on the least-loaded live node (retried elsewhere if that node dies)."""
        try:
            job = job.bound()  # the code travels in the job: nodes need no copy of the judges
        except (OSError, UnicodeDecodeError) as exc:
            return EvalOutcome.failure(job, "judge_load", f"cannot read the judge: {exc}")
        what = f"the evaluation of {job.agent_name}/{job.task_id}/{job.answer_name}"
        try:
            result: NodeResult = await self.nodes.call("evaluate", job, what=what)
        except ClusterError as exc:
            return EvalOutcome.failure(job, exc.kind, str(exc), error_type="ClusterError")
        meter = current_meter.get()
        if meter is not None:
            meter.usage = meter.usage + result.usage
            meter.clipped.update(result.clipped)
            meter.infra.extend(result.infra)
            meter.tool_calls += result.tool_calls
        log = current_page_reads.get()
        if log is not None:
            log.merge(result.reads)
        return result.outcome
