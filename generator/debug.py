"""The debug stage: run a draft judge on every sample answer under stubbed verdict patterns.

Extraction is real (the LLM client, usually through the cache or a replay), verdicts are
stubbed (all pass, all fail, two seeded mixes) so every branch and short-circuit executes.
A run is judged by what the judge did, not by its score: exceptions, timeouts, empty trees,
leaves never verified on an all-pass run, node ids that change between identical runs, and
summaries that do not serialize. Infrastructure failures are raised, never "repaired".
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from pydantic import BaseModel, Field

from generator.draft import Problem, offending_lines
from generator.spec import LoadedSpec, SampleAnswer
from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.runner.protocol import EvalJob, EvalOutcome, SandboxLimits

PATTERNS: tuple[str, ...] = ("all_pass", "all_fail", "mix_seed_1", "mix_seed_2")
INFRA_KINDS = frozenset({"llm", "replay_miss", "budget", "infra", "tool", "sandbox", "protocol"})
INFRA_TYPES = frozenset({"LLMError", "ReplayMiss", "BudgetExceeded", "InfraError"})
KIND_NAMES = MappingProxyType(
    {"timeout": "timeout", "summary_not_serializable": "unserializable_summary"}
)
DEFAULT_LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)

Runner = Callable[..., Any]


def stub_verdict(pattern: str, claim: str) -> bool:
    """The stubbed outcome of verifying `claim` under `pattern` (seeded mixes hash the claim)."""
    if pattern == "all_pass":
        return True
    if pattern == "all_fail":
        return False
    seed = pattern.rsplit("_", 1)[-1]
    return hashlib.sha256(f"{seed}:{claim}".encode()).digest()[0] % 2 == 0


class Extracts(Protocol):
    """What extraction needs: `LLMBackend` or any object with its `extract`."""

    async def extract(self, request: ExtractRequest) -> Any: ...


class SharedExtractor:
    """Real extraction through the LLM layer, asked once per distinct request in a stage."""

    def __init__(self, backend: Extracts | None) -> None:
        self.backend = backend
        self.memo: dict[str, Any] = {}

    async def extract(self, request: ExtractRequest) -> Any:
        if self.backend is None:
            return {}
        key = request.model_dump_json(exclude={"template_class"})
        if key not in self.memo:
            self.memo[key] = await self.backend.extract(request)
        return self.memo[key]


class StubbedBackend:
    """A judging backend: real (shared) extraction, verdicts from a named pattern."""

    def __init__(self, extractor: SharedExtractor, pattern: str = "all_pass") -> None:
        self.extractor = extractor
        self.pattern = pattern  # switched between jobs; one job runs at a time
        self.model = "debug-stub"

    async def extract(self, request: ExtractRequest) -> Any:
        return await self.extractor.extract(request)

    async def verify(self, request: VerifyRequest) -> Verdict:
        passed = stub_verdict(self.pattern, request.claim)
        return Verdict(passed=passed, reasoning=f"stub: {self.pattern}")


class DebugRun(BaseModel):
    """One judge run on one sample answer under one verdict pattern."""

    answer: str
    pattern: str
    status: str = Field(description="`ok`, or the kind of the first issue found.")
    score: float | None = None
    node_ids: list[str] = Field(default_factory=list)


class DebugIssue(BaseModel):
    """One problem the debug stage found."""

    kind: str
    answer: str
    pattern: str
    message: str
    trace: str = ""
    lines: list[int] = Field(default_factory=list)

    def signature(self) -> str:
        """Identity used to stop repairing when the same error comes back."""
        return f"{self.kind}:{self.message.splitlines()[0][:160] if self.message else ''}"


class DebugReport(BaseModel):
    """Every run and issue of one debug stage, plus the all-pass tree for the review record."""

    version: int = 1
    runs: list[DebugRun] = Field(default_factory=list)
    issues: list[DebugIssue] = Field(default_factory=list)
    skeleton_tree: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when no issue was found."""
        return not self.issues

    def scores(self) -> dict[str, dict[str, float | None]]:
        """answer -> pattern -> score."""
        table: dict[str, dict[str, float | None]] = {}
        for run in self.runs:
            table.setdefault(run.answer, {})[run.pattern] = run.score
        return table

    def problem(self, source: str) -> Problem | None:
        """The first issue as a repair-prompt problem (with the others listed), or None."""
        if not self.issues:
            return None
        first = self.issues[0]
        others = [f"- {i.kind} on {i.answer}/{i.pattern}: {i.message}" for i in self.issues[1:6]]
        summary = (
            f"Running the judge on sample answer '{first.answer}' with verdict pattern "
            f"'{first.pattern}' failed: {first.kind}: {first.message}"
        )
        if others:
            summary += "\nOther issues:\n" + "\n".join(others)
        return Problem(
            stage="debug",
            signature=first.signature(),
            summary=summary,
            details=first.trace,
            lines=offending_lines(source, first.lines),
        )


def _judge_lines(trace: str, judge_name: str) -> list[int]:
    pattern = re.compile(r'File "[^"]*' + re.escape(judge_name) + r'", line (\d+)')
    return [int(n) for n in pattern.findall(trace)]


def clean_trace(trace: str, judge_name: str) -> str:
    """The traceback with only the judge's own frames, its path shown as `judge_name`.

    Toolkit and sandbox frames say nothing the repair needs, and temporary paths would make
    identical failures look different (to the repeat check and to a response cache).
    """
    path = re.compile(r'"[^"]*' + re.escape(judge_name) + '"')
    out: list[str] = []
    keep = True
    for line in trace.splitlines():
        stripped = line.lstrip()
        if stripped.startswith('File "'):
            keep = judge_name in line
            if keep:
                out.append(path.sub(f'"{judge_name}"', line))
        elif not line.startswith(" "):
            keep = True
            out.append(re.sub(r"\S*/" + re.escape(judge_name), judge_name, line))
        elif keep:
            out.append(line)
    return "\n".join(out)


def _tree_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.get("children", [])))
    return out


def _issue(kind: str, answer: str, pattern: str, message: str, **kw: Any) -> DebugIssue:
    return DebugIssue(kind=kind, answer=answer, pattern=pattern, message=message, **kw)


def inspect_outcome(
    outcome: EvalOutcome, answer: str, pattern: str, judge_name: str
) -> list[DebugIssue]:
    """The issues one outcome shows; raises InfraError for infrastructure failures."""
    issues = []
    for error in outcome.errors:
        kind = str(error.get("kind", "exception"))
        if kind in INFRA_KINDS or error.get("type") in INFRA_TYPES:
            raise InfraError(f"debug run {answer}/{pattern}: {error.get('message')}", kind=kind)
        trace = clean_trace(str(error.get("traceback") or ""), judge_name)
        message = f"{error.get('type', 'Error')}: {error.get('message', '')}"
        issues.append(
            _issue(
                KIND_NAMES.get(kind, "exception"),
                answer,
                pattern,
                message,
                trace=trace,
                lines=_judge_lines(trace, judge_name),
            )
        )
    tree = (outcome.summary or {}).get("eval_breakdown", [{}])[0].get("verification_tree")
    if issues or not tree:
        return issues or [_issue("empty_tree", answer, pattern, "the judge produced no tree")]
    if not tree.get("children"):
        return [_issue("empty_tree", answer, pattern, "the root has no children")]
    if pattern == "all_pass":
        unverified = [
            n["id"]
            for n in _tree_nodes(tree)
            if not n.get("children") and n.get("status") == "initialized"
        ]
        if unverified:
            issues.append(
                _issue(
                    "unverified_leaf",
                    answer,
                    pattern,
                    "leaves never verified on an all-pass run: " + ", ".join(unverified),
                )
            )
    try:
        json.dumps(outcome.summary, allow_nan=False)
    except (TypeError, ValueError) as exc:
        issues.append(_issue("unserializable_summary", answer, pattern, str(exc)))
    return issues


async def run_local(job: EvalJob, backend: Any, pages: Any, limits: SandboxLimits) -> EvalOutcome:
    """In-process fallback for the sandbox (same outcome shape, a timeout, no isolation)."""
    import asyncio
    import traceback

    from toolkit.runner.loader import load_judge

    try:
        judge = load_judge(job.judge_path)
        summary, _ = await asyncio.wait_for(
            judge.run(backend=backend, answer=job.answer, pages=pages, answer_name=job.answer_name),
            timeout=limits.timeout_s,
        )
    except TimeoutError:
        return EvalOutcome.failure(
            job, "timeout", f"no result after {limits.timeout_s:g}s", error_type="Timeout"
        )
    except Exception as exc:
        evaluator = getattr(exc, "__evaluator__", None)
        outcome = EvalOutcome.failure(
            job,
            getattr(exc, "kind", "exception"),
            str(exc),
            error_type=type(exc).__name__,
        )
        outcome.errors[0]["traceback"] = traceback.format_exc()
        outcome.summary = evaluator.get_summary() if evaluator is not None else None
        return outcome
    status = "incomplete" if summary.get("status") == "incomplete" else "complete"
    return EvalOutcome(
        status=status,
        task_id=job.task_id,
        answer_name=job.answer_name,
        summary=summary,
        errors=list(summary.get("errors", [])),
    )


class _Jobs:
    """Runs debug jobs one at a time: in one sandboxed worker pool, or through `runner`."""

    def __init__(
        self, backend: StubbedBackend, limits: SandboxLimits, runner: Runner | None
    ) -> None:
        self.backend, self.limits, self.runner = backend, limits, runner
        self.pool: Any = None

    async def __aenter__(self) -> _Jobs:
        if self.runner is None:
            from toolkit.runner.pool import WorkerPool

            self.pool = await WorkerPool(1, self.limits, self.backend).__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.pool is not None:
            await self.pool.aclose()

    async def run(self, job: EvalJob, pattern: str) -> EvalOutcome:
        self.backend.pattern = pattern
        if self.pool is not None:
            return await self.pool.evaluate(job)
        assert self.runner is not None
        return await self.runner(job, self.backend, None, self.limits)


class _Session:
    """One debug stage's judge file and job runner."""

    def __init__(self, path: Path, task_id: str, jobs: _Jobs) -> None:
        self.path, self.task_id, self.jobs = path, task_id, jobs

    async def once(
        self, answer: SampleAnswer, pattern: str
    ) -> tuple[list[DebugIssue], DebugRun, dict[str, Any]]:
        job = EvalJob(
            judge_path=str(self.path),
            answer=answer.text,
            answer_name=answer.name,
            task_id=self.task_id,
        )
        outcome = await self.jobs.run(job, pattern)
        issues = inspect_outcome(outcome, answer.name, pattern, self.path.name)
        summary = outcome.summary or {}
        tree = summary.get("eval_breakdown", [{}])[0].get("verification_tree") or {}
        run = DebugRun(
            answer=answer.name,
            pattern=pattern,
            status=issues[0].kind if issues else "ok",
            score=None if issues else summary.get("final_score"),
            node_ids=[n["id"] for n in _tree_nodes(tree)] if tree else [],
        )
        return issues, run, tree


async def debug_stage(
    source: str,
    loaded: LoadedSpec,
    extraction: Extracts | SharedExtractor | None,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    runner: Runner | None = None,
    patterns: tuple[str, ...] = PATTERNS,
) -> DebugReport:
    """Run `source` on every sample answer × verdict pattern, plus an identical all-pass rerun.

    `extraction` does the real extraction (None: every extraction is empty). Jobs run in one
    sandboxed worker pool, or through `runner(job, backend, pages, limits)` when given (e.g.
    `run_local`). Called by `judgegen generate` and `judgegen check`.
    """
    report = DebugReport()
    extractor = (
        extraction if isinstance(extraction, SharedExtractor) else SharedExtractor(extraction)
    )
    with tempfile.TemporaryDirectory(prefix="judgegen-debug-") as tmp:
        path = Path(tmp) / f"{loaded.task_id}.py"
        path.write_text(source, "utf-8")
        async with _Jobs(StubbedBackend(extractor), limits, runner) as jobs:
            session = _Session(path, loaded.task_id, jobs)
            for answer in loaded.answers:
                await _debug_answer(report, session, answer, patterns)
    return report


async def _debug_answer(
    report: DebugReport, session: _Session, answer: SampleAnswer, patterns: tuple[str, ...]
) -> None:
    first: DebugRun | None = None
    for pattern in patterns:
        issues, run, tree = await session.once(answer, pattern)
        report.issues.extend(issues)
        report.runs.append(run)
        if pattern == "all_pass" and not issues:
            first = run
            if report.skeleton_tree is None and tree:
                report.skeleton_tree = tree
    if first is None:
        return
    issues, again, _ = await session.once(answer, "all_pass")
    if not issues and again.node_ids != first.node_ids:
        message = "node ids differ between two identical all-pass runs: "
        report.issues.append(
            _issue(
                "unstable_ids",
                answer.name,
                "all_pass",
                message + _first_difference(first.node_ids, again.node_ids),
            )
        )


def _first_difference(a: list[str], b: list[str]) -> str:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"position {index}: '{x}' then '{y}'"
    return f"{len(a)} nodes then {len(b)} nodes"
