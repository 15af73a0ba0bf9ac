"""Running reviewed judges over many answers: skip what is fresh, redo the rest, write metrics.

For each answer the scheduler computes the fingerprint its result would have; a stored result
with that fingerprint (complete or excluded) is kept, anything else — missing, incomplete,
stale — is redone on an executor (`toolkit.runner.builder`: sandboxed by default). A budget
failure, or a provider that is down (`outage`), stops the run cleanly: jobs not yet started
are left for the next run. An
evaluation's LLM answers are committed to the response cache in the background and waited
for once, before its result is written (`toolkit.llm.commits`); a failed store makes the
result incomplete and stops the run.
`run_evaluations` is the library entry point.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.errors import CodeChanged, PageStoreError, ResultsError
from toolkit.evaluator import PageSource
from toolkit.llm.abandoned import tracking_abandoned
from toolkit.llm.commits import CommitBarrier, deferring_commits
from toolkit.runner.builder import Isolation, judge_executor
from toolkit.runner.executors import Executor
from toolkit.runner.fingerprint import Fingerprint, judge_templates_sha256, toolkit_code
from toolkit.runner.freshness import (
    JudgeInfo,
    carried_attempts,
    fingerprint_for,
    judged_tasks,
    kept_result,
    needs_repair,
    outdated_results,
    resolve_judges,
    skipped_judges,
    skips_answer,
    unreviewed_mark,
    write_summaries,
)
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.judging import with_errors
from toolkit.runner.metering import (
    Meter,
    MeteredBackend,
    charge_abandoned,
    current_meter,
    end_calls,
    origin_notes,
    unreported,
)
from toolkit.runner.options import RunOptions
from toolkit.runner.page_reads import recording_page_reads
from toolkit.runner.report import Progress, RunReport
from toolkit.runner.results import (
    EarlierAttempts,
    EvaluationResult,
    ResultHead,
    ResultStore,
    ScoreFiles,
    check_input_roots,
    free_score_files,
    has_score,
)
from toolkit.runner.score_names import (
    record_score_names,
    score_files_for,
    withdraw_earlier_names,
)
from toolkit.runner.trust import trusted_outcome
from toolkit.sandbox.broker import ToolProvider
from toolkit.sandbox.confinement import REQUIRED_KIND
from toolkit.sandbox.launch import Launch
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits, error_dict

STOP_KINDS = frozenset(
    {
        "budget",
        "cache",
        "page_store",
        "ledger",
        "cluster",
        "auth",
        "not_found",
        "rejected",
        "config",
        "outage",
        "code_changed",
        REQUIRED_KIND,
    }
)
"""Kinds of the infrastructure errors the runner saw (`Meter.infra`) that stop a run (exit 3):
every later evaluation would fail the same way. `cluster`: a cluster run lost its gateway
(`GatewayLost`); a node lost is not noted so, its evaluations go to the other nodes. `auth`
(the API answered 401/403), `not_found` (404/405/501: no such endpoint or model, e.g. a
--base-url without its /v1 or a misspelt model), `rejected` (the same 400 for several different
requests in a row: a parameter every request carries, e.g. a response_format the server does
not take; `toolkit.llm.rejection`) and `config` (no credentials, an unpriced model under a
cap): `LLMError`s no retry or later call can fix. `outage`: the provider failed so many calls in a
row that the LLM client calls it no more (`toolkit.llm.outage`); the evaluations that failed
before stay incomplete, for the rerun. `code_changed`: a file of judgegen's code changed after the
run hashed it (`CodeChanged`): every later evaluation could run code its result does not name."""


def used_models(
    backend: Any, summary: Mapping[str, Any]
) -> tuple[str | None, str | None, list[str]]:
    """(judge model, extraction model, notes) of one result: the models the run's backend
    judged with, and a note for each model the judge asked for instead.

    A judge only names models (Mind2Web 2's `initialize(verify_model=..., extract_model=...)`);
    every request goes to the run's backend, so its models are what the result and the metrics
    report. The summary's names stand in only for a backend that exposes none.
    """
    used_judge = getattr(backend, "model", None)
    used_extract = getattr(backend, "extract_model", None) or used_judge
    asked_judge, asked_extract = summary.get("judge_model"), summary.get("extract_model")
    if used_judge is None and used_extract is None:
        return asked_judge, asked_extract or asked_judge, []
    notes = [
        f"the judge asked for {role} model '{asked}' but the run's backend used '{used}' "
        "(the run's --model or LLM settings choose the model, not the judge)"
        for role, asked, used in (
            ("verification", asked_judge, used_judge),
            ("extraction", asked_extract, used_extract),
        )
        if asked and used and asked != used
    ]
    return used_judge or used_extract, used_extract, notes


def earlier_attempts_note(earlier: EarlierAttempts) -> str:
    """A result's note on the earlier incomplete attempts it redid, and what they cost."""
    usage = earlier.usage
    unknown = usage.unknown_cost_calls
    return (
        f"redone after {earlier.attempts} earlier incomplete attempt(s) of this judgement "
        "(same answer, judge and configuration), which cost "
        f"{usage.backend_calls} backend request(s), {usage.llm_calls} LLM call(s), "
        f"${usage.cost_usd:.4f}"
        + (f" (+ {unknown} call(s) of unknown cost)" if unknown else "")
        + ": in `earlier_attempts` and `usage_all_attempts`, not in `usage` (this attempt's)"
    )


def _noop(event: str, result: ResultHead | None) -> None:
    return None


class Scheduler:
    """One run over a set of inputs: decides what to redo, runs it on the executor, records it."""

    def __init__(
        self,
        *,
        backend: JudgingBackend,
        executor: Executor,
        options: RunOptions,
        progress: Progress = _noop,
        pages: PageSource | None = None,
    ) -> None:
        self.backend = backend
        self.executor = executor
        self.options = options
        self.progress = progress
        self.pages = pages  # what the executor's judges read, to tell if stored reads still hold
        self.store = ResultStore(options.results_dir)
        self.scores = ScoreFiles.of(options.results_dir, options.score_name)
        self.report = RunReport()
        self._stop = asyncio.Event()
        # stamped before the templates are hashed, so an edit between the two shows
        self._code = toolkit_code()
        self._templates_digest = judge_templates_sha256()
        self._summaries_withdrawn: set[str] = set()

    def fingerprint(self, item: AnswerInput, judge: JudgeInfo | None) -> Fingerprint:
        """The fingerprint the current judge and configuration give this answer."""
        options = self.options
        return fingerprint_for(
            item, judge, self.backend, options.backend_spec, self._templates_digest, options.tools
        )

    async def run(self, inputs: list[AnswerInput]) -> RunReport:
        """Evaluate `inputs`, write their results and each agent's summary. A trajectory
        whose judge may not run loses its score file (an earlier judge's); its result stays,
        listed as not counted. Before anything is written (under the CLI's results lock, and
        for library callers), refuses an agent's results folder holding another input's
        results (`ResultsOfAnotherInput`) and score files another results folder wrote."""
        options = self.options
        check_input_roots(options.results_dir, inputs, by_task=options.inputs_by_task)
        judges = resolve_judges((i.task_id for i in inputs), options)
        self.report.skipped_judges = skipped_judges(judges)
        try:
            self._take_score_name(inputs)
        except ResultsError as exc:  # no score file may be written under an unrecorded name
            self.report.stopped = _reason(exc)
            return self.report
        for agent in sorted({i.agent_name for i in inputs}):
            self.store.remove_stray_temp_files(agent)
        pending: list[tuple[AnswerInput, JudgeInfo, Fingerprint, EarlierAttempts | None]] = []
        planned: list[tuple[AnswerInput, Fingerprint]] = []
        for item in inputs:
            judge = judges.get(item.task_id)
            needs_judge = item.excluded is None and not item.empty
            try:
                if skips_answer(item, judge):
                    self.report.skipped_answers += 1
                    if item.traj_dir is not None:  # webeval would read it as current
                        self.scores.remove(item.traj_dir, item.task_id)
                    continue
                fp = self.fingerprint(item, judge)
                planned.append((item, fp))
                stored = self._stored(item)
                if await self._reuse(item, judge, fp, stored):
                    continue
                earlier = carried_attempts(stored, fp)
                if needs_judge and judge is not None:
                    pending.append((item, judge, fp, earlier))
                else:
                    self._record(item, self._decided_result(item, judge, fp, earlier))
                    self.report.decided += 1
            except ResultsError as exc:  # no evaluation starts (each would pay, then fail)
                self.report.not_started += 1  # its result is left for the next run
                self._halt(_reason(exc))
            except PageStoreError as exc:  # its pages cannot be checked: left for the next run
                self.report.not_started += 1
                self._halt(f"{type(exc).__name__}: {exc}")
        semaphore = asyncio.Semaphore(max(1, self.options.jobs))
        await asyncio.gather(*(self._evaluate(semaphore, *job) for job in pending))
        self.report.outdated = await outdated_results(self.store, planned, self.report, self.pages)
        try:
            self._withdraw_outdated_scores(planned)
            write_summaries(
                self.store,
                inputs,
                self.report,
                include_unreviewed=self.options.include_unreviewed,
                tasks=self.options.tasks,
                scores=self.scores,
                judged=judged_tasks(self.options),
                read_from=(self.options.judges_dir, self.options.pages_dir),
                max_answer_bytes=self.options.max_answer_bytes,
            )
        except ResultsError as exc:  # reported with the run, after any earlier stop's reason
            reason = _reason(exc)
            stopped = self.report.stopped
            self.report.stopped = f"{stopped}; then {reason}" if stopped else reason
        return self.report

    def _take_score_name(self, inputs: list[AnswerInput]) -> None:
        """Refuse (`ScoreFilesTaken`) score files another results folder still there wrote,
        as the CLI does before it takes the results lock: checked again here, under it, and
        for library callers. Then record the run's score name among those the folder wrote
        under, and withdraw the folder's files under the others for the run's trajectories:
        they would keep scores it no longer holds (the run's own are written under its name)."""
        trajectories = [(i.traj_dir, i.task_id) for i in inputs if i.traj_dir is not None]
        if not trajectories:
            return
        results_dir = self.options.results_dir
        free_score_files(trajectories, ScoreFiles.of(results_dir, self.options.score_name))
        self.scores = score_files_for(results_dir, self.options.score_name, trajectories)
        record_score_names(results_dir, self.scores)
        self.report.withdrawn_scores = withdraw_earlier_names(self.scores, trajectories)

    def _withdraw_outdated_scores(self, planned: list[tuple[AnswerInput, Fingerprint]]) -> None:
        """Remove the webeval score files of results the run left outdated (it stopped before
        redoing them): webeval would read them as current. Their result files stay, listed
        as outdated in the summary; the next run redoes them and writes the score files."""
        outdated = {(r.agent, r.task_id, r.answer_name) for r in self.report.outdated}
        for item, _ in planned:
            key = (item.agent_name, item.task_id, item.answer_name)
            if item.traj_dir is not None and key in outdated:
                self.scores.remove(item.traj_dir, item.task_id)

    def _stored(self, item: AnswerInput) -> EvaluationResult | None:
        """The stored result of `item` a run may keep or must carry the spend of (with
        --overwrite, only an incomplete one: its spend is carried, nothing is kept)."""
        read = self.store.read_incomplete if self.options.overwrite else self.store.read
        return read(item.agent_name, item.task_id, item.answer_name)

    async def _reuse(
        self,
        item: AnswerInput,
        judge: JudgeInfo | None,
        fp: Fingerprint,
        stored: EvaluationResult | None,
    ) -> bool:
        """Keep `stored` if fresh (same inputs and pages, not incomplete); False to redo."""
        if self.options.overwrite:
            return False
        stored = await kept_result(stored, item, fp, self.pages)
        if stored is None:
            return False
        if needs_repair(stored, item, judge, self.scores):  # the mark, or a score file
            stored = stored.model_copy(update={"unreviewed_judge": unreviewed_mark(judge)})
            self._write_files(item, stored)
        head = ResultHead.of(stored)
        self.report.reused += 1
        self.report.results.append(head)
        if item.input_error:
            self.report.input_errors.append(head)
        self.progress("reused", head)
        return True

    def _base(
        self,
        item: AnswerInput,
        judge: JudgeInfo | None,
        fp: Fingerprint,
        earlier: EarlierAttempts | None = None,
    ) -> dict:
        return {
            "task_id": item.task_id,
            "agent_name": item.agent_name,
            "answer_name": item.answer_name,
            "notes": [*item.notes, *([earlier_attempts_note(earlier)] if earlier else [])],
            "input_kind": item.kind,
            "input_path": str(item.path.absolute()),  # which input root it came from
            "unreviewed_judge": bool(judge and judge.unreviewed),
            "fingerprint": fp,
            "earlier_attempts": earlier,
        }

    def _decided_result(
        self,
        item: AnswerInput,
        judge: JudgeInfo | None,
        fp: Fingerprint,
        earlier: EarlierAttempts | None = None,
    ) -> EvaluationResult:
        """Result of an answer whose outcome the input alone decides (excluded or empty): no
        judge ran, so it called no tool. It carries the `earlier` attempts it replaces."""
        fp = fp.model_copy(update={"tools": None})
        if item.excluded is not None:
            return EvaluationResult(
                **self._base(item, judge, fp, earlier),
                status="excluded",
                final_score=None,
                reason=item.excluded,
            )
        judge_model = getattr(self.backend, "model", None)
        tree = {
            "id": "root",
            "desc": "Empty answer: scored 0 without running the judge.",
            "critical": False,
            "score": 0.0,
            "status": "failed",
            "strategy": "parallel",
            "children": [],
        }
        return EvaluationResult(
            **self._base(item, judge, fp, earlier),
            status="complete",
            final_score=0.0,
            judge_model=judge_model,
            extract_model=getattr(self.backend, "extract_model", None) or judge_model,
            eval_breakdown=[
                {"info": [{"empty_answer": "no answer text"}], "verification_tree": tree}
            ],
            tree_statistics={"depth": 0, "total_nodes": 1, "leaf_nodes": 1},
        )

    async def _evaluate(
        self,
        semaphore: asyncio.Semaphore,
        item: AnswerInput,
        judge: JudgeInfo,
        fp: Fingerprint,
        earlier: EarlierAttempts | None,
    ) -> None:
        """Run `item`'s judge in one of the `--jobs` slots and record its result. A judge that
        left LLM calls running (timed out, killed) frees its slot before its result waits for
        them (up to the abandoned-call wait), or it would hold the slot for up to twice
        --timeout; a stop its evaluation met is taken before the slot is free."""
        await semaphore.acquire()
        holding = True
        try:
            if self._stop.is_set():
                self.report.not_started += 1
                return
            meter = Meter()
            token = current_meter.set(meter)
            job = EvalJob(
                judge_path=str(judge.path),
                judge_source=judge.source,
                judge_sha256=judge.sha256,
                answer=item.text or "",
                agent_name=item.agent_name,
                answer_name=item.answer_name,
                task_id=item.task_id,
            )
            try:
                with (
                    recording_page_reads() as page_log,
                    deferring_commits() as commits,
                    tracking_abandoned() as abandoned,
                ):
                    outcome = await self.executor.evaluate(job)
            except Exception as exc:
                outcome = EvalOutcome.failure(
                    job,
                    getattr(exc, "kind", None) or "runner",
                    str(exc),
                    error_type=type(exc).__name__,
                )
                meter.infra.extend(outcome.errors)
            finally:
                current_meter.reset(token)
            outcome = self._judged_by_named_code(job, outcome, meter)
            wait_s = self.options.abandoned_wait_s
            await end_calls(meter, wait_s)
            self._halt_on_stop_error(meter)
            if abandoned.running():
                semaphore.release()
                holding = False
            charge_abandoned(meter, await abandoned.settle(wait_s), wait_s)
            meter.infra.extend(await _unstored(commits))
            outcome = trusted_outcome(outcome, judge.sha256)
            outcome = with_errors(outcome, unreported(meter.infra, outcome))
            missing = (outcome.summary or {}).get("missing_sources") or []
            tools = fp.tools if meter.tool_calls else None  # what the result depends on
            fp = fp.model_copy(update={"pages": page_log.reads(missing), "tools": tools})
            clipped = sorted(meter.clipped)
            result = self._outcome_result(item, judge, fp, outcome, meter, clipped, earlier)
            self.report.evaluated += 1
            try:
                await self._record_async(item, result)
            except ResultsError as exc:  # evaluations in flight finish; none starts
                self.report.usage = self.report.usage + result.usage  # its calls were made
                self._halt(_reason(exc))
                return
            self._halt_on_stop_error(meter)
        finally:
            if holding:
                semaphore.release()

    def _judged_by_named_code(
        self, job: EvalJob, outcome: EvalOutcome, meter: Meter
    ) -> EvalOutcome:
        """`outcome`, unless a file of judgegen's code changed since the run hashed it for the
        fingerprints (`ToolkitCode.changed`, a stat per file): code loaded since — a module or
        template first loaded mid-run, a fork server started after the edit — may not be the
        code the result would name. Then an incomplete outcome in its place, nothing of what
        that code judged kept, its `CodeChanged` error noted as a stop."""
        if any(error.get("kind") == "code_changed" for error in meter.infra):
            return outcome  # the sandbox refused the job already
        changed = self._code.changed()
        if changed is None:
            return outcome
        failure = EvalOutcome.failure(job, "code_changed", changed, error_type=CodeChanged.__name__)
        meter.infra.extend(failure.errors)
        return failure

    def _halt_on_stop_error(self, meter: Meter) -> None:
        """Halt on the first infrastructure error of a kind every later evaluation would meet."""
        stop = next((e for e in meter.infra if e.get("kind") in STOP_KINDS), None)
        if stop is not None:
            self._halt(f"{stop.get('type', 'error')}: {stop.get('message', '')}")

    def _halt(self, reason: str) -> None:
        """Start no more evaluations; the first reason is the run's (exit 3)."""
        if not self._stop.is_set():
            self.report.stopped = reason
            self._stop.set()

    def _outcome_result(
        self,
        item: AnswerInput,
        judge: JudgeInfo,
        fp: Fingerprint,
        outcome: EvalOutcome,
        meter: Meter,
        clipped: list[str],
        earlier: EarlierAttempts | None = None,
    ) -> EvaluationResult:
        summary = outcome.summary or {}
        errors = list(summary.get("errors") or []) + list(outcome.errors)
        complete = outcome.status == "complete" and not errors
        score = summary.get("final_score")
        judge_model, extract_model, model_notes = used_models(self.backend, summary)
        base = self._base(item, judge, fp, earlier)
        base["notes"] += model_notes + meter.notes + origin_notes(meter.usage)
        return EvaluationResult(
            **base,
            status="complete" if complete else "incomplete",
            final_score=float(score) if complete and score is not None else None,
            partial_score=None if complete or score is None else float(score),
            errors=errors,
            judge_model=judge_model,
            extract_model=extract_model,
            eval_breakdown=list(summary.get("eval_breakdown") or []),
            tree_statistics=dict(summary.get("tree_statistics") or {}),
            verifications=list(summary.get("verifications") or []),
            missing_sources=list(summary.get("missing_sources") or []),
            clipped_pages=clipped,
            usage=meter.usage,
            duration_s=round(outcome.duration_s, 3),
            judge_cpu_s=None if outcome.cpu_s is None else round(outcome.cpu_s, 4),
            sandbox_guards=list(outcome.guards),
        )

    def _write_files(self, item: AnswerInput, result: EvaluationResult) -> None:
        """Write `result` and a trajectory's score file. The old score file goes first, so a
        failure at any point leaves none that disagrees with the stored result (the next run
        writes a missing one); so does the agent's summary, before its first result is
        rewritten (the run writes a new one at its end)."""
        if item.agent_name not in self._summaries_withdrawn:
            self.store.withdraw_summary(item.agent_name)
            self._summaries_withdrawn.add(item.agent_name)
        if item.traj_dir is not None:
            self.scores.remove(item.traj_dir, item.task_id)
        self.store.write(result)
        if item.traj_dir is not None and has_score(result):
            self.scores.write(item.traj_dir, item.task_id, result)

    def _record(self, item: AnswerInput, result: EvaluationResult) -> None:
        self._write_files(item, result)
        self._account(item, result)

    async def _record_async(self, item: AnswerInput, result: EvaluationResult) -> None:
        """Write off the event loop (the fsync would stall every other evaluation)."""
        await asyncio.to_thread(self._write_files, item, result)
        self._account(item, result)

    def _account(self, item: AnswerInput, result: EvaluationResult) -> None:
        """Count `result`, now in its files, keeping only its head (the report of a long run
        would otherwise hold every evaluation's tree)."""
        head = ResultHead.of(result)
        if item.input_error:
            self.report.input_errors.append(head)
        self.report.results.append(head)
        self.report.usage = self.report.usage + head.usage
        if head.earlier_attempts is not None:
            report = self.report
            report.earlier_attempts = report.earlier_attempts + head.earlier_attempts
        self.progress(head.status, head)


def _reason(error: ResultsError) -> str:
    """How a results failure reads as the run's stop reason."""
    return f"{type(error).__name__}: {error}"


async def _unstored(commits: CommitBarrier) -> list[dict[str, Any]]:
    """Wait until the evaluation's answers are in the response cache; the error of a
    store that failed (an infrastructure failure: the result must not look complete)."""
    try:
        await commits.settled()
    except Exception as exc:
        kind = getattr(exc, "kind", None) or "cache"
        return [error_dict(type(exc).__name__, kind, str(exc))]
    return []


async def run_evaluations(
    inputs: list[AnswerInput],
    *,
    backend: JudgingBackend,
    options: RunOptions,
    executor: Executor | None = None,
    isolation: Isolation = "sandbox",
    pages: PageSource | None = None,
    tools: Mapping[str, ToolProvider] | None = None,
    limits: SandboxLimits | None = None,
    progress: Progress = _noop,
    launch: Launch | None = None,
) -> RunReport:
    """Evaluate `inputs` and write their results and each agent's summary.

    Judges run sandboxed (`isolation="in_process"` to run them here) with at most
    `options.jobs` at a time, unless an `executor` is given; `launch` is a fork server the
    caller started early (`toolkit.sandbox.launch.launch_sandbox`). With
    `options.require_sandbox`, an evaluation missing a sandbox guard is incomplete, its
    judge's code never loaded, and stops the run.
    """
    metered = backend if isinstance(backend, MeteredBackend) else MeteredBackend(backend)
    if executor is not None:
        if launch is not None:
            launch.kill()
        scheduler = Scheduler(
            backend=metered, executor=executor, options=options, progress=progress, pages=pages
        )
        return await scheduler.run(inputs)
    async with judge_executor(
        metered,
        isolation=isolation,
        pages=pages,
        tools=tools,
        limits=limits,
        require_sandbox=options.require_sandbox,
        launch=launch,
    ) as built:
        scheduler = Scheduler(
            backend=metered, executor=built, options=options, progress=progress, pages=pages
        )
        return await scheduler.run(inputs)
