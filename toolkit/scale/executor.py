"""The driver's executor for a cluster run: the scheduler's evaluations, done on the nodes.

It has the interface of every executor (`evaluate(job) -> EvalOutcome`, never raising), so
the scheduler — fingerprints, reuse, the one results writer, budget stops, summaries — is
the same code as in a local run. What a node reports is charged to the evaluation's meter and
page-read log here, so results record the same usage and pages as locally.

An attempt lost with its node reports nothing, but the LLM calls the gateway answered for it
were paid for (and those still running there go on): the gateway tallies each attempt's
calls, and what a lost attempt spent is charged to its evaluation too, with a note saying so;
the LLM calls its calls cancelled there left running are followed as an ended attempt's.
So a result's usage is what judging its answer cost, and the results add up to the gateway's
ledger, whichever nodes were lost.

An attempt its node reported is ended at the gateway (`Gateway.end`), which holds the LLM
client: what all its calls cost there is charged (an answer its node no longer read too), and
the LLM calls its judge left running (it timed out, or returned without them) are handed to
the scheduler's tracker of abandoned calls, filled in as the gateway learns what they cost
(`Gateway.settle`). The scheduler then waits for them, charges them and notes them exactly as
for a local evaluation (`toolkit.runner.metering.charge_abandoned`), its slot already free.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from toolkit.llm.abandoned import CallRow, current_abandoned
from toolkit.runner.judging import UserImports
from toolkit.runner.metering import current_meter
from toolkit.runner.page_reads import current_page_reads
from toolkit.sandbox.protocol import EvalJob, EvalOutcome
from toolkit.scale.errors import ClusterError, is_ray_failure
from toolkit.scale.messages import AttemptEnd, AttemptSpend, LeftRunning, NodeResult
from toolkit.scale.nodes import NodeSet, Runner

DEFAULT_WAIT_S = 600.0
"""How long the gateway waits for a lost attempt's calls still running before cancelling them:
by default a judge's time limit (`SandboxLimits.timeout_s`), by when its judge would have been
stopped anyway."""


class ClusterExecutor:
    """Sends each evaluation to a node runner; a node lost for good makes it incomplete.

    `gateway` is the gateway actor, asked what each attempt lost with its node spent (waiting
    up to `wait_s` for its calls still running); without one, that spend is noted as unknown.
    It also ends each attempt its node reported, and follows the LLM calls it left running
    for up to `abandoned_wait_s` (`RunOptions.abandoned_wait_s`, as the scheduler waits).
    """

    def __init__(
        self,
        nodes: NodeSet,
        gateway: Any = None,
        wait_s: float = DEFAULT_WAIT_S,
        abandoned_wait_s: float = DEFAULT_WAIT_S,
    ) -> None:
        self.nodes = nodes
        self.gateway = gateway
        self.wait_s = wait_s
        self.abandoned_wait_s = abandoned_wait_s
        self._following: set[asyncio.Future[None]] = set()
        self._imports = UserImports()

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        """Run `job` on the least-loaded live node (retried elsewhere if that node dies)."""
        try:
            job = job.bound()  # the code travels in the job: nodes need no copy of the judges
        except (OSError, UnicodeDecodeError) as exc:
            return EvalOutcome.failure(job, "judge_load", f"cannot read the judge: {exc}")
        refused = self._imports.refusal(job)  # here, where the user's modules are
        if refused is not None:
            return refused
        what = f"the evaluation of {job.agent_name}/{job.task_id}/{job.answer_name}"
        lost: list[tuple[Runner, asyncio.Future[AttemptSpend | None]]] = []
        names: list[str] = []

        def on_lost(attempt: str, runner: Runner) -> None:  # asked now: the retry goes on
            lost.append((runner, asyncio.ensure_future(self._spent(attempt))))
            names.append(attempt)

        result: NodeResult | None = None
        try:
            result = await self.nodes.call(
                "evaluate", job, what=what, tag=uuid.uuid4().hex, on_lost=on_lost
            )
        except ClusterError as exc:
            outcome = EvalOutcome.failure(job, exc.kind, str(exc), error_type="ClusterError")
        ended: AttemptEnd | None = None
        if result is not None:
            outcome = result.outcome
            ended = await self._end(result.attempt)
        spends = [(runner, await spend) for runner, spend in lost]
        for attempt, (_, spent) in zip(names, spends, strict=True):
            if spent is not None and spent.left_running:
                self._follow(attempt, spent.left_running)
        meter = current_meter.get()
        if meter is not None:
            if result is not None:
                meter.usage = meter.usage + (result.usage if ended is None else ended.usage)
                meter.clipped.update(result.clipped)
                meter.infra.extend(result.infra)
                meter.tool_calls += result.tool_calls
                meter.notes.extend(result.notes)
            for runner, spent in spends:
                if spent is not None:
                    meter.usage = meter.usage + spent.usage
                meter.notes.append(lost_attempt_note(runner.node_id, spent))
        log = current_page_reads.get()
        if log is not None and result is not None:
            log.merge(result.reads)
        return outcome

    async def _spent(self, attempt: str) -> AttemptSpend | None:
        """What the lost `attempt` spent at the gateway (None: not known, no gateway)."""
        if self.gateway is None:
            return None
        try:
            spent: AttemptSpend = await self.gateway.spent.remote(attempt, self.wait_s)
        except Exception as exc:
            if not is_ray_failure(exc):
                raise
            return None
        return spent

    async def _end(self, attempt: str) -> AttemptEnd | None:
        """End `attempt`, whose node reported, at the gateway: what its calls cost there
        (None: not known, no gateway; the node's report stands), the LLM calls it left running
        followed into the evaluation's tracker of abandoned calls, and those of other attempts
        it was waiting for counted there."""
        if self.gateway is None or not attempt:
            return None
        try:
            ended: AttemptEnd = await self.gateway.end.remote(attempt, self.abandoned_wait_s)
        except Exception as exc:  # a gateway lost: the run stops, as its calls say
            if not is_ray_failure(exc):
                raise
            return None
        if ended.left_running:
            self._follow(attempt, ended.left_running)
        tracker = current_abandoned.get()
        if ended.followed and tracker is not None:
            tracker.follow(ended.followed)
        return ended

    def _follow(self, attempt: str, calls: int) -> None:
        """Hand the `calls` LLM calls `attempt` left running at the gateway to the
        evaluation's tracker of abandoned calls, filled in as the gateway learns their cost."""
        tracker = current_abandoned.get()
        rows = [tracker.add() for _ in range(calls)] if tracker else []
        following = asyncio.ensure_future(self._settle(attempt, rows))
        self._following.add(following)
        following.add_done_callback(self._following.discard)

    async def _settle(self, attempt: str, rows: list[asyncio.Future[CallRow | None]]) -> None:
        """Fill in `rows`, the futures the evaluation's tracker waits on for the LLM calls
        `attempt` left running, as the gateway learns what they cost; those still running
        when it stops waiting, or all if the gateway is lost, stay unknown (the scheduler
        counts them as calls whose cost is not known)."""
        try:
            left: LeftRunning = await self.gateway.settle.remote(attempt, self.abandoned_wait_s)
        except Exception as exc:
            if not is_ray_failure(exc):
                raise
            return
        ended: list[CallRow | None] = [*left.rows, *([None] * left.unrecorded)]
        for future, row in zip(rows, ended, strict=False):
            if not future.done():
                future.set_result(row)

    async def aclose(self) -> None:
        """Wait for the calls still followed at the gateway (its wait is the scheduler's:
        they are over, or nearly), so none is cut off when the gateway closes."""
        if self._following:
            await asyncio.gather(*self._following, return_exceptions=True)


def lost_attempt_note(node_id: str, spent: AttemptSpend | None) -> str:
    """A result's note on an attempt lost with its node `node_id`, and what it spent."""
    where = f"an attempt lost with its Ray node {node_id[:12]}"
    if spent is None:
        return (
            f"{where} spent an unknown amount: the gateway that made its calls could not say "
            "(see the LLM ledger); this result's usage leaves it out"
        )
    usage = spent.usage
    tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    text = (
        f"{where} spent {usage.llm_calls} LLM call(s) ({usage.backend_calls} backend "
        f"request(s)), {tokens} input / {usage.output_tokens} output tokens, "
        f"${usage.cost_usd:.4f}: counted in this result's usage"
    )
    if spent.cancelled:
        text += (
            f"; {spent.cancelled} of its call(s) still running were cancelled: the LLM calls "
            "they made are counted as for any call left running"
        )
    return text
