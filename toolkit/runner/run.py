"""Running reviewed judges over many answers: skip what is fresh, redo the rest, write metrics.

For each answer the runner computes the fingerprint its result would have; a stored result with
that fingerprint (complete or excluded) is kept, anything else — missing, incomplete, stale — is
redone. Judges run through an executor: the sandboxed `WorkerPool` by default, or
`InProcessExecutor` (same interface, no isolation) for debugging. A budget failure stops the
run cleanly: jobs not yet started are left for the next run.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from prompts import prompts_sha256
from toolkit.backends import ExtractRequest, JudgingBackend, Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.evaluator import PageSource
from toolkit.runner.approval import approval_problem
from toolkit.runner.fingerprint import Fingerprint, make_fingerprint
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.loader import Judge, load_judge
from toolkit.runner.metrics import SkippedJudge, Summary, compute_summary
from toolkit.runner.protocol import EvalJob, EvalOutcome, error_dict
from toolkit.runner.results import (
    SUMMARY_FILE,
    EvaluationResult,
    ResultStore,
    UsageTotals,
    score_file_path,
    write_score_file,
)
from toolkit.tools import ToolCaller
from toolkit.util.files import write_atomic
from toolkit.util.hashing import sha256_file

STOP_KINDS = frozenset({"budget"})
RUN_RECORD_VERSION = 1


class Executor(Protocol):
    """Runs one judge on one answer; never raises for a judge's failure."""

    async def evaluate(self, job: EvalJob) -> EvalOutcome: ...


# -- usage metering --------------------------------------------------------------------------


@dataclass
class Meter:
    """Usage charged to one evaluation."""

    usage: UsageTotals = field(default_factory=UsageTotals)


current_meter: ContextVar[Meter | None] = ContextVar("judgegen_meter", default=None)


class MeteredBackend:
    """Wraps a judging backend and charges each request to the current evaluation's meter."""

    def __init__(self, inner: JudgingBackend, run_meter: Meter | None = None) -> None:
        self.inner = inner
        self.run_meter = run_meter or Meter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _charge(self, kind: str) -> None:
        for meter in {id(m): m for m in (current_meter.get(), self.run_meter) if m}.values():
            meter.usage.backend_calls += 1
            if kind == "extract":
                meter.usage.extract_calls += 1
            else:
                meter.usage.verify_calls += 1

    async def extract(self, request: ExtractRequest) -> Any:
        self._charge("extract")
        return await self.inner.extract(request)

    async def verify(self, request: VerifyRequest) -> Verdict:
        self._charge("verify")
        return await self.inner.verify(request)


class MeteredClient:
    """Wraps an LLM client (`complete`) and charges tokens, cost and cache hits to the meter."""

    def __init__(self, inner: Any, run_meter: Meter | None = None) -> None:
        self.inner = inner
        self.run_meter = run_meter or Meter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: Any) -> Any:
        response = await self.inner.complete(request)
        for meter in {id(m): m for m in (current_meter.get(), self.run_meter) if m}.values():
            u = meter.usage
            u.llm_calls += 1
            u.cache_hits += int(bool(getattr(response, "cache_hit", False)))
            usage = getattr(response, "usage", None)
            if usage is not None:
                u.input_tokens += usage.input_tokens
                u.output_tokens += usage.output_tokens
                u.cache_read_tokens += usage.cache_read_tokens
                u.cache_write_tokens += usage.cache_write_tokens
            u.cost_usd += float(getattr(response, "cost_usd", 0.0) or 0.0)
        return response


# -- in-process execution --------------------------------------------------------------------


class InProcessExecutor:
    """Runs judges in this process (no isolation): for debugging and for trusted judges."""

    def __init__(
        self,
        backend: JudgingBackend,
        pages: PageSource | None = None,
        tools: ToolCaller | None = None,
        timeout_s: float = 600.0,
    ) -> None:
        self.backend = backend
        self.pages = pages
        self.tools = tools
        self.timeout_s = timeout_s
        self._judges: dict[tuple[str, str], asyncio.Future[Judge]] = {}

    async def _judge(self, path: str) -> Judge:
        """Load each judge revision once, off the event loop (compiling blocks other calls)."""
        key = (path, sha256_file(path))
        if key not in self._judges:
            self._judges[key] = asyncio.ensure_future(asyncio.to_thread(load_judge, path))
        return await self._judges[key]

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        """Load and run the judge; exceptions and timeouts become an incomplete outcome."""
        started = time.monotonic()
        outcome = EvalOutcome(
            status="complete",
            task_id=job.task_id,
            agent_name=job.agent_name,
            answer_name=job.answer_name,
        )
        try:
            judge = await self._judge(job.judge_path)
            summary, _ = await asyncio.wait_for(
                judge.run(
                    backend=self.backend,
                    answer=job.answer,
                    pages=self.pages,
                    agent_name=job.agent_name,
                    answer_name=job.answer_name,
                    tools=self.tools,
                ),
                timeout=self.timeout_s,
            )
            outcome.summary = summary
        except TimeoutError as exc:
            outcome.summary = _partial_summary(exc)
            message = f"judge timed out after {self.timeout_s:g}s"
            outcome.errors.append(error_dict("TimeoutError", "timeout", message))
        except Exception as exc:
            outcome.summary = _partial_summary(exc)
            outcome.errors.append(
                error_dict(
                    type(exc).__name__,
                    getattr(exc, "kind", None) or "judge_exception",
                    str(exc)[:2000],
                    traceback.format_exc(limit=8)[-4000:],
                )
            )
        summary_status = (outcome.summary or {}).get("status", "complete")
        if outcome.errors or summary_status != "complete" or outcome.summary is None:
            outcome.status = "incomplete"
        outcome.duration_s = time.monotonic() - started
        return outcome


class ToolTable:
    """A `ToolCaller` over named tool functions (e.g. `maps_tools(...)`), for in-process runs;
    the sandbox's broker serves the same mapping to worker processes."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.tools = dict(tools)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call tool `name`; an unknown tool is an InfraError (node `error`), never a crash."""
        function = self.tools.get(name)
        if function is None:
            raise InfraError(f"tool '{name}' is not available: no provider for it", kind="tool")
        result = function(**args)
        return await result if inspect.isawaitable(result) else result


class LazyExecutor:
    """Starts an executor (the worker pool) on the first job, so a run with nothing to redo
    starts no processes; use as `async with LazyExecutor(lambda: WorkerPool(...)) as ex:`."""

    def __init__(self, factory: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self._factory = factory
        self._context: AbstractAsyncContextManager[Any] | None = None
        self._executor: Executor | None = None
        self._lock = asyncio.Lock()

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        """Start the executor if needed, then run `job` on it."""
        async with self._lock:
            if self._executor is None:
                context = self._factory()
                self._executor = await context.__aenter__()
                self._context = context
        return await self._executor.evaluate(job)

    async def __aenter__(self) -> LazyExecutor:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._context is not None:
            await self._context.__aexit__(*exc_info)
        self._context = self._executor = None


def _partial_summary(exc: BaseException) -> dict[str, Any] | None:
    """The partial tree of a native judge that raised (the loader attaches its evaluator)."""
    seen: BaseException | None = exc
    while seen is not None:
        evaluator = getattr(seen, "__evaluator__", None)
        if evaluator is not None:
            try:
                return evaluator.get_summary()
            except Exception:
                return None
        seen = seen.__cause__ or seen.__context__
    return None


# -- the run ---------------------------------------------------------------------------------


@dataclass
class RunOptions:
    """Where things live and how the run behaves."""

    judges_dir: Path = Path("generated_judges")
    results_dir: Path = Path("results")
    reviews_dir: Path = Path("reviews")
    include_unreviewed: bool = False
    overwrite: bool = False
    jobs: int = 4
    backend_spec: str | None = None


@dataclass
class JudgeInfo:
    """The judge that serves one task, and whether it may run."""

    task_id: str
    path: Path
    sha256: str | None
    problem: str | None = None
    unreviewed: bool = False


@dataclass
class RunReport:
    """What a run did: every result it holds, what it redid, skipped and why it stopped."""

    results: list[EvaluationResult] = field(default_factory=list)
    evaluated: int = 0
    reused: int = 0
    not_started: int = 0
    skipped_judges: list[SkippedJudge] = field(default_factory=list)
    skipped_answers: int = 0
    stopped: str | None = None
    summaries: dict[str, Summary] = field(default_factory=dict)
    input_errors: list[EvaluationResult] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)

    @property
    def incomplete(self) -> list[EvaluationResult]:
        """Results of this run that are incomplete."""
        return [r for r in self.results if r.status == "incomplete"]

    @property
    def exit_code(self) -> int:
        """3 infrastructure stop; 1 incomplete results or malformed inputs; else 0."""
        if self.stopped:
            return 3
        return 1 if self.incomplete or self.input_errors else 0

    def to_record(self) -> RunRecord:
        """The machine-readable form of this report."""

        def ref(result: EvaluationResult) -> ResultRef:
            return ResultRef(
                agent=result.agent_name,
                task_id=result.task_id,
                answer_name=result.answer_name,
                reason=result.reason,
            )

        return RunRecord(
            exit_code=self.exit_code,
            evaluated=self.evaluated,
            reused=self.reused,
            not_started=self.not_started,
            skipped_answers=self.skipped_answers,
            stopped=self.stopped,
            skipped_judges=self.skipped_judges,
            incomplete=[ref(r) for r in self.incomplete],
            input_errors=[ref(r) for r in self.input_errors],
            usage=self.usage,
            summaries=self.summaries,
        )


class ResultRef(BaseModel):
    """Which result, and (for malformed inputs) why."""

    agent: str
    task_id: str
    answer_name: str
    reason: str | None = None


class RunRecord(BaseModel):
    """`judgegen run --json`: what the run did, and the summary of every agent it touched."""

    version: int = RUN_RECORD_VERSION
    exit_code: int
    evaluated: int = Field(description="Evaluations run now (judge executed).")
    reused: int = Field(description="Fresh results kept from earlier runs.")
    not_started: int = Field(description="Left for the next run after an infrastructure stop.")
    skipped_answers: int = Field(description="Answers of tasks whose judge may not run.")
    stopped: str | None = Field(default=None, description="Why the run stopped early.")
    skipped_judges: list[SkippedJudge] = Field(default_factory=list)
    incomplete: list[ResultRef] = Field(default_factory=list)
    input_errors: list[ResultRef] = Field(default_factory=list)
    usage: UsageTotals = Field(description="Usage of the evaluations run now.")
    summaries: dict[str, Summary] = Field(default_factory=dict)


Progress = Callable[[str, EvaluationResult | None], None]


def _noop(event: str, result: EvaluationResult | None) -> None:
    return None


def resolve_judges(task_ids: Iterable[str], options: RunOptions) -> dict[str, JudgeInfo]:
    """The judge of each task, with the reason it may not run (missing, unreviewed, changed)."""
    judges: dict[str, JudgeInfo] = {}
    for task_id in sorted(set(task_ids)):
        path = (Path(options.judges_dir) / f"{task_id}.py").resolve()
        if not path.is_file():
            judges[task_id] = JudgeInfo(task_id, path, None, f"no judge at {path}")
            continue
        info = JudgeInfo(task_id, path, sha256_file(path))
        problem = approval_problem(path, options.reviews_dir, task_id)
        if problem and options.include_unreviewed:
            info.unreviewed = True
        elif problem:
            info.problem = f"{problem}; run `judgegen approve {task_id}` or --include-unreviewed"
        judges[task_id] = info
    return judges


class Runner:
    """One run over a set of inputs with one backend and executor."""

    def __init__(
        self,
        *,
        backend: JudgingBackend,
        executor: Executor,
        options: RunOptions,
        progress: Progress = _noop,
    ) -> None:
        self.backend = backend
        self.executor = executor
        self.options = options
        self.progress = progress
        self.store = ResultStore(options.results_dir)
        self.report = RunReport()
        self._stop = asyncio.Event()
        self._prompts_digest = prompts_sha256()

    def fingerprint(self, item: AnswerInput, judge: JudgeInfo | None) -> Fingerprint:
        """The fingerprint the current judge and configuration give this answer."""
        return make_fingerprint(
            judge_sha256=judge.sha256 if judge else None,
            answer_sha256=item.answer_sha256,
            backend=getattr(self.backend, "inner", self.backend),
            backend_spec=self.options.backend_spec,
            prompts_digest=self._prompts_digest,
        )

    async def run(self, inputs: list[AnswerInput]) -> RunReport:
        """Evaluate `inputs`, write their results and each agent's summary."""
        judges = resolve_judges((i.task_id for i in inputs), self.options)
        self.report.skipped_judges = [
            SkippedJudge(task_id=j.task_id, reason=j.problem) for j in judges.values() if j.problem
        ]
        for agent in sorted({i.agent_name for i in inputs}):
            self.store.remove_stray_temp_files(agent)
        pending: list[tuple[AnswerInput, JudgeInfo, Fingerprint]] = []
        for item in inputs:
            judge = judges.get(item.task_id)
            needs_judge = item.excluded is None and not item.empty
            if not item.input_error and (judge is None or judge.problem):
                self.report.skipped_answers += 1
                continue
            fp = self.fingerprint(item, judge)
            if self._reuse(item, judge, fp):
                continue
            if needs_judge and judge is not None:
                pending.append((item, judge, fp))
            else:
                self._record(item, self._decided_result(item, judge, fp))
        semaphore = asyncio.Semaphore(max(1, self.options.jobs))
        await asyncio.gather(*(self._evaluate(semaphore, *job) for job in pending))
        self._write_summaries(inputs, judges)
        return self.report

    def _reuse(self, item: AnswerInput, judge: JudgeInfo | None, fp: Fingerprint) -> bool:
        """Keep a fresh stored result (same fingerprint, not incomplete); False to redo it."""
        if self.options.overwrite:
            return False
        stored = self.store.read(item.agent_name, item.task_id, item.answer_name)
        if stored is None or stored.status == "incomplete" or stored.fingerprint != fp:
            return False
        if stored.unreviewed_judge and judge is not None and not judge.unreviewed:
            stored = stored.model_copy(update={"unreviewed_judge": False})
            self.store.write(stored)  # the same bytes were approved since
        traj = item.traj_dir
        if (
            traj
            and stored.status == "complete"
            and not score_file_path(traj, item.task_id).exists()
        ):
            write_score_file(traj, item.task_id, stored)
        self.report.reused += 1
        self.report.results.append(stored)
        if item.input_error:
            self.report.input_errors.append(stored)
        self.progress("reused", stored)
        return True

    def _base(self, item: AnswerInput, judge: JudgeInfo | None, fp: Fingerprint) -> dict:
        return {
            "task_id": item.task_id,
            "agent_name": item.agent_name,
            "answer_name": item.answer_name,
            "notes": list(item.notes),
            "input_kind": item.kind,
            "input_path": str(item.path),
            "unreviewed_judge": bool(judge and judge.unreviewed),
            "fingerprint": fp,
        }

    def _decided_result(
        self, item: AnswerInput, judge: JudgeInfo | None, fp: Fingerprint
    ) -> EvaluationResult:
        """Result of an answer whose outcome the input alone decides (excluded or empty)."""
        if item.excluded is not None:
            return EvaluationResult(
                **self._base(item, judge, fp),
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
            **self._base(item, judge, fp),
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
    ) -> None:
        async with semaphore:
            if self._stop.is_set():
                self.report.not_started += 1
                return
            meter = Meter()
            token = current_meter.set(meter)
            job = EvalJob(
                judge_path=str(judge.path),
                answer=item.text or "",
                agent_name=item.agent_name,
                answer_name=item.answer_name,
                task_id=item.task_id,
            )
            try:
                outcome = await self.executor.evaluate(job)
            except Exception as exc:
                outcome = EvalOutcome.failure(
                    job,
                    getattr(exc, "kind", None) or "runner",
                    str(exc),
                    error_type=type(exc).__name__,
                )
            finally:
                current_meter.reset(token)
            result = self._outcome_result(item, judge, fp, outcome, meter.usage)
            self.report.evaluated += 1
            await self._record_async(item, result)
            stop = next((e for e in result.errors if e.get("kind") in STOP_KINDS), None)
            if stop is not None and not self._stop.is_set():
                self.report.stopped = f"{stop.get('type', 'error')}: {stop.get('message', '')}"
                self._stop.set()

    def _outcome_result(
        self,
        item: AnswerInput,
        judge: JudgeInfo,
        fp: Fingerprint,
        outcome: EvalOutcome,
        usage: UsageTotals,
    ) -> EvaluationResult:
        summary = outcome.summary or {}
        errors = list(summary.get("errors") or []) + list(outcome.errors)
        complete = outcome.status == "complete" and not errors
        score = summary.get("final_score")
        judge_model = summary.get("judge_model") or getattr(self.backend, "model", None)
        return EvaluationResult(
            **self._base(item, judge, fp),
            status="complete" if complete else "incomplete",
            final_score=float(score) if complete and score is not None else None,
            partial_score=None if complete or score is None else float(score),
            errors=errors,
            judge_model=judge_model,
            extract_model=summary.get("extract_model") or judge_model,
            eval_breakdown=list(summary.get("eval_breakdown") or []),
            tree_statistics=dict(summary.get("tree_statistics") or {}),
            verifications=list(summary.get("verifications") or []),
            missing_sources=list(summary.get("missing_sources") or []),
            usage=usage,
            duration_s=round(outcome.duration_s, 3),
        )

    def _write_files(self, item: AnswerInput, result: EvaluationResult) -> None:
        self.store.write(result)
        if item.traj_dir is not None:
            if result.status == "complete":
                write_score_file(item.traj_dir, item.task_id, result)
            else:
                score_file_path(item.traj_dir, item.task_id).unlink(missing_ok=True)

    def _record(self, item: AnswerInput, result: EvaluationResult) -> None:
        self._write_files(item, result)
        self._account(item, result)

    async def _record_async(self, item: AnswerInput, result: EvaluationResult) -> None:
        """Write off the event loop (the fsync would stall every other evaluation)."""
        await asyncio.to_thread(self._write_files, item, result)
        self._account(item, result)

    def _account(self, item: AnswerInput, result: EvaluationResult) -> None:
        if item.input_error:
            self.report.input_errors.append(result)
        self.report.results.append(result)
        self.report.usage = self.report.usage + result.usage
        self.progress(result.status, result)

    def _write_summaries(self, inputs: list[AnswerInput], judges: dict[str, JudgeInfo]) -> None:
        tasks_by_agent: dict[str, set[str]] = defaultdict(set)
        for item in inputs:
            tasks_by_agent[item.agent_name].add(item.task_id)
        for agent, tasks in sorted(tasks_by_agent.items()):
            skipped = [s for s in self.report.skipped_judges if s.task_id in tasks]
            summary = compute_summary(
                agent,
                self.store.iter_agent(agent),
                skipped_judges=skipped,
                include_unreviewed=self.options.include_unreviewed,
            )
            path = self.store.root / agent / SUMMARY_FILE
            write_atomic(path, summary.model_dump_json(indent=2) + "\n")
            self.report.summaries[agent] = summary


async def run_evaluations(
    inputs: list[AnswerInput],
    *,
    backend: JudgingBackend,
    options: RunOptions,
    executor: Executor | None = None,
    pages: PageSource | None = None,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    timeout_s: float = 600.0,
    progress: Progress = _noop,
) -> RunReport:
    """Evaluate `inputs` (in-process unless an executor is given) and write results/summaries."""
    metered = backend if isinstance(backend, MeteredBackend) else MeteredBackend(backend)
    caller = ToolTable(tools) if tools is not None else None
    executor = executor or InProcessExecutor(
        metered, pages=pages, tools=caller, timeout_s=timeout_s
    )
    runner = Runner(backend=metered, executor=executor, options=options, progress=progress)
    return await runner.run(inputs)
