"""The debug stage: run a draft judge on every sample answer under stubbed verdict patterns.

Extraction is real (the LLM client, usually through the cache or a replay), verdicts are
stubbed (all pass, all fail, two seeded mixes) so every branch and short-circuit executes.
A run is judged by what the judge did, not by its score: exceptions, timeouts, empty trees,
leaves never verified on an all-pass run, node ids that change between identical runs,
summaries that do not serialize, and (over all runs) sample answers citing pages on which no
claim was checked against a page. Across patterns, an answer whose root score stays the same
when every claim the stub decided fails is reported: no verdict reaches its score; so is a
judge line whose verdicts alone move no answer's score (failing only its claims). One more
run, on an answer that says nothing (every extraction empty, every claim failing), must give
no credit and show no evidence finding: a check that passes on a missing value gives the
same credit to every answer that lacks it. Infrastructure failures are raised, never
"repaired".
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from generator.review.rubric import flatten
from generator.stages.debug_runs import (
    DebugJobs,
    Extracts,
    SharedExtractor,
    StubbedBackend,
    stub_reasoning,
    stub_verdict,
)
from generator.stages.draft import Problem, offending_lines
from generator.stages.evidence import (
    EVIDENCE_KINDS,
    citing_answers,
    evidence_findings,
    pages_never_read,
)
from generator.stages.spec import LoadedSpec, SampleAnswer
from toolkit.errors import InfraError, is_infra_failure
from toolkit.runner.builder import Isolation
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits

__all__ = [
    "DEFAULT_LIMITS",
    "PATTERNS",
    "DebugIssue",
    "DebugReport",
    "DebugRun",
    "SharedExtractor",
    "StubbedBackend",
    "clean_trace",
    "debug_stage",
    "inspect_outcome",
    "stub_verdict",
]

PATTERNS: tuple[str, ...] = ("all_pass", "all_fail", "mix_seed_1", "mix_seed_2")
# The probe answer: it says nothing, so every extraction of it is empty (asked of no model).
EMPTY_ANSWER = SampleAnswer(name="(empty answer)", path="", text="")
KIND_NAMES = MappingProxyType(
    {"timeout": "timeout", "summary_not_serializable": "unserializable_summary"}
)
DEFAULT_LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60)


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
        """Every distinct issue once, with how many runs showed it, as one repair problem.

        Identical errors collapse ("TypeError ... in 12 of 12 runs"); a call the toolkit
        rejected quotes the real signature, so the repair sees what it may pass.
        """
        if not self.issues:
            return None
        groups: dict[str, list[DebugIssue]] = {}
        for issue in self.issues:
            groups.setdefault(issue.signature(), []).append(issue)
        total = len(self.runs) or len(self.issues)
        first = self.issues[0]
        parts = []
        for same in groups.values():
            where = ", ".join(f"{i.answer}/{i.pattern}" for i in same[:4])
            more = f", +{len(same) - 4} more" if len(same) > 4 else ""
            line = f" (judge line {same[0].lines[-1]})" if same[0].lines else ""
            parts.append(
                f"- {same[0].kind}{line} in {len(same)} of {total} runs ({where}{more}): "
                f"{same[0].message}"
            )
        summary = "Running the judge on the sample answers found:\n" + "\n".join(parts)
        signature = quoted_signature(first.message)
        if signature:
            summary += f"\nThe real signature: `{signature}`"
        lines = sorted({n for issues in groups.values() for n in issues[0].lines[-1:]})
        return Problem(
            stage="debug",
            signature=" | ".join(sorted(groups)),
            summary=summary,
            details=first.trace,
            lines=offending_lines(source, lines or first.lines),
        )


_REJECTED_CALL = re.compile(r"\b(Evaluator\.\w+|\w+)\(\) got an unexpected keyword argument")


def quoted_signature(message: str) -> str | None:
    """The toolkit signature of the call a TypeError message names, or None."""
    from generator.stages.apiref import check_functions, evaluator_methods, render_signature

    match = _REJECTED_CALL.search(message)
    if match is None:
        return None
    name = match.group(1).split(".")[-1]
    function = evaluator_methods().get(name) or check_functions().get(name)
    if function is None:
        return None
    return " ".join(render_signature(function, drop_self=True).split()).replace("( ", "(")


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


def _issue(kind: str, answer: str, pattern: str, message: str, **kw: Any) -> DebugIssue:
    return DebugIssue(kind=kind, answer=answer, pattern=pattern, message=message, **kw)


def inspect_outcome(
    outcome: EvalOutcome, answer: str, pattern: str, judge_name: str
) -> list[DebugIssue]:
    """The issues one outcome shows; raises InfraError for infrastructure failures."""
    issues = []
    for error in outcome.errors:
        kind = str(error.get("kind", "exception"))
        if is_infra_failure(error):
            raise InfraError(f"debug run {answer}/{pattern}: {error.get('message')}", kind=kind)
        trace = clean_trace(str(error.get("traceback") or ""), judge_name)
        text = re.sub(r"\S*/" + re.escape(judge_name), judge_name, str(error.get("message", "")))
        message = f"{error.get('type', 'Error')}: {text}"  # no temporary path, as in the trace
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
        unverified = [n.id for n in flatten(tree) if n.leaf and n.status == "initialized"]
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


class _Session:
    """One debug stage's judge file and job runner."""

    def __init__(self, path: Path, task_id: str, jobs: DebugJobs) -> None:
        self.path, self.task_id, self.jobs = path, task_id, jobs
        self.logs: dict[str, list[dict[str, Any]]] = {}  # answer -> every run's verifications
        # (answer, pattern) -> the verifications of that run the stub decided
        self.decided: dict[tuple[str, str], list[dict[str, Any]]] = {}

    async def outcome(
        self,
        answer: SampleAnswer,
        pattern: str,
        *,
        failing: frozenset[str] = frozenset(),
        blank: bool = False,
    ) -> EvalOutcome:
        """One run of the judge on `answer` (see `DebugJobs.run`)."""
        job = EvalJob(
            judge_path=str(self.path),
            answer=answer.text,
            answer_name=answer.name,
            task_id=self.task_id,
        )
        return await self.jobs.run(job, pattern, failing=failing, blank=blank)

    async def once(
        self, answer: SampleAnswer, pattern: str, *, blank: bool = False
    ) -> tuple[list[DebugIssue], DebugRun, dict[str, Any]]:
        outcome = await self.outcome(answer, pattern, blank=blank)
        issues = inspect_outcome(outcome, answer.name, pattern, self.path.name)
        summary = outcome.summary or {}
        log = summary.get("verifications") or []
        self.logs.setdefault(answer.name, []).extend(log)
        reasoning = stub_reasoning(pattern)
        self.decided[(answer.name, pattern)] = [
            v for v in log if v.get("passed") is not None and v.get("reasoning") == reasoning
        ]
        if not issues:
            issues = [
                _issue(f.kind, answer.name, pattern, f.message, lines=[f.line] if f.line else [])
                for f in evidence_findings(summary, pattern, answer.text)
            ]
        tree = summary.get("eval_breakdown", [{}])[0].get("verification_tree") or {}
        run = DebugRun(
            answer=answer.name,
            pattern=pattern,
            status=issues[0].kind if issues else "ok",
            score=None if issues else summary.get("final_score"),
            node_ids=[n.id for n in flatten(tree)] if tree else [],
        )
        return issues, run, tree


async def debug_stage(
    source: str,
    loaded: LoadedSpec,
    extraction: Extracts | SharedExtractor | None,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    isolation: Isolation = "sandbox",
    patterns: tuple[str, ...] = PATTERNS,
) -> DebugReport:
    """Run `source` on every sample answer × verdict pattern, plus an identical all-pass rerun.

    `extraction` does the real extraction (None: every extraction is empty). Jobs run in one
    sandboxed job process, or in this process with `isolation="in_process"` (tests, benches).
    Called by `judgegen generate` and `judgegen check`.
    """
    report = DebugReport()
    extractor = (
        extraction if isinstance(extraction, SharedExtractor) else SharedExtractor(extraction)
    )
    with tempfile.TemporaryDirectory(prefix="judgegen-debug-") as tmp:
        path = Path(tmp) / f"{loaded.task_id}.py"
        path.write_text(source, "utf-8")
        async with DebugJobs(StubbedBackend(extractor), limits, isolation) as jobs:
            session = _Session(path, loaded.task_id, jobs)
            for answer in loaded.answers:
                await _debug_answer(report, session, answer, patterns)
            if report.ok:  # a judge otherwise sound: what only more runs can show
                report.issues.extend(await _lines_ignored(report, session, loaded))
                report.issues.extend(await _credit_for_nothing(session))
    if extractor.backend is not None:  # without extraction no cited URL reaches the judge
        report.issues.extend(_pages_never_read(report, session, loaded))
    return report


async def _credit_for_nothing(session: _Session) -> list[DebugIssue]:
    """Issues of the judge's run on an answer that says nothing, every claim failing.

    Such an answer must score 0, no non-critical leaf may pass on it (a check that passes on
    a missing value credits every answer that lacks it, even where a failed gate hides that
    here), and its run must show no evidence finding (a page claim verified with no link, say,
    when a missing link passed a check). Not reported as a run (the sample answers are the
    runs) and silent when the judge fails on it: the sample runs and mutation testing tell.
    """
    issues, _, tree = await session.once(EMPTY_ANSWER, "all_fail", blank=True)
    if any(issue.kind not in EVIDENCE_KINDS for issue in issues):
        return []
    prefix = "on an answer that says nothing (every extraction empty, every claim failing): "
    for issue in issues:
        issue.message = prefix + issue.message
    nodes = flatten(tree) if tree else []
    score = float(tree.get("score") or 0.0) if tree else 0.0
    credited = [n.id for n in nodes if n.leaf and not n.critical and n.status == "passed"]
    if score > 0 or credited:
        passing = f"; non-critical leaves pass: {', '.join(credited)}" if credited else ""
        message = (
            f"{prefix}the root scores {score:g}{passing}. A check must fail when the value "
            "it checks is missing (None, [], no link): never pass a leaf by default"
        )
        issues.append(_issue("credit_for_nothing", EMPTY_ANSWER.name, "all_fail", message))
    return issues


async def _lines_ignored(
    report: DebugReport, session: _Session, loaded: LoadedSpec
) -> list[DebugIssue]:
    """An issue for each judge line calling `verify` whose verdicts move no answer's score.

    Per sample answer scoring above 0 on the all-pass run, the claims each line verified
    there (as the stub decided them) are failed alone, every other claim passing; a failed
    leaf always lowers its groups, so a line whose failures leave every such answer's score
    unchanged has its verdicts dropped or outweighed (`verify(node=None)` whose result is
    or-ed with a check that passes anyway). `_verdicts_ignored` sees only a whole answer's
    verdicts ignored; this sees one kind of claim ignored among others that count.
    """
    scores = {run.answer: run.score for run in report.runs if run.pattern == "all_pass"}
    by_line: dict[int, list[tuple[SampleAnswer, frozenset[str]]]] = {}
    for answer in loaded.answers:
        if not scores.get(answer.name):
            continue
        claims: dict[int, set[str]] = {}
        for entry in session.decided.get((answer.name, "all_pass"), []):
            if entry.get("line"):
                claims.setdefault(int(entry["line"]), set()).add(str(entry.get("claim")))
        for line, claimed in claims.items():
            by_line.setdefault(line, []).append((answer, frozenset(claimed)))
    issues = []
    for line, tries in sorted(by_line.items()):
        moved = False
        for answer, failing in tries:
            outcome = await session.outcome(answer, "all_pass", failing=failing)
            score = (outcome.summary or {}).get("final_score")
            if outcome.errors or score is None or score < (scores[answer.name] or 0.0):
                moved = True
                break
        if not moved:
            names = ", ".join(answer.name for answer, _ in tries)
            message = (
                f"failing only the claims verified at line {line} (every other one passing) "
                f"leaves the score of {names} unchanged, so that line's verdicts never reach "
                "the score; decide a leaf with `verify(..., node=leaf)` and let its verdict "
                "count, never or it with a check that passes anyway"
            )
            issues.append(
                _issue("verdicts_ignored", tries[0][0].name, "all_pass", message, lines=[line])
            )
    return issues


def _pages_never_read(
    report: DebugReport, session: _Session, loaded: LoadedSpec
) -> list[DebugIssue]:
    """One issue per run on an answer citing pages when no run on one read a page.

    Judged only when every run completed (a crash leaves the log short); the finding is the
    judge's, so every run on a citing answer carries it and the repair sees "in N of N runs".
    """
    if any(issue.kind not in EVIDENCE_KINDS for issue in report.issues):
        return []
    citing = citing_answers((a.name, a.text) for a in loaded.answers)
    finding = pages_never_read({name: session.logs.get(name, []) for name in citing})
    if finding is None:
        return []
    lines = [finding.line] if finding.line else []
    return [
        _issue(finding.kind, run.answer, run.pattern, finding.message, lines=lines)
        for run in report.runs
        if run.answer in citing
    ]


async def _debug_answer(
    report: DebugReport, session: _Session, answer: SampleAnswer, patterns: tuple[str, ...]
) -> None:
    first: DebugRun | None = None
    by_pattern: dict[str, DebugRun] = {}
    for pattern in patterns:
        issues, run, tree = await session.once(answer, pattern)
        report.issues.extend(issues)
        report.runs.append(run)
        by_pattern[pattern] = run
        if pattern == "all_pass" and not issues:
            first = run
            if report.skeleton_tree is None and tree:
                report.skeleton_tree = tree
    if first is None:
        return
    ignored = _verdicts_ignored(first, by_pattern.get("all_fail"), session)
    report.issues.extend(ignored)
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


def _verdicts_ignored(
    all_pass: DebugRun, all_fail: DebugRun | None, session: _Session
) -> list[DebugIssue]:
    """An issue when failing every claim the stub decided leaves a positive score unchanged.

    A failed leaf always lowers its group (gate or average) up to the root, so an unchanged
    score means the verdicts never reach the tree: a `verify(node=None)` whose result is
    dropped, a hard-coded custom node, a verdict overwritten. A claim that fails for want of
    a link is not the stub's and does not count; an all-pass score of 0 has nothing to lose.
    """
    if all_fail is None or all_pass.score is None or all_fail.score is None:
        return []
    decided = session.decided.get((all_fail.answer, all_fail.pattern), [])
    if not decided or all_pass.score <= 0 or all_fail.score < all_pass.score:
        return []
    lines = sorted({int(v["line"]) for v in decided if v.get("line")})
    message = (
        f"the root scores {all_pass.score:g} whether every verification passes or fails: "
        f"{len(decided)} claim(s) failed in the all-fail run and the score did not move, so "
        "no verdict reaches the score; decide a leaf with `verify(..., node=leaf)` (or use "
        "the returned verdict), never hard-code a check's result or set a node's score"
    )
    return [_issue("verdicts_ignored", all_fail.answer, all_fail.pattern, message, lines=lines[:1])]


def _first_difference(a: list[str], b: list[str]) -> str:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"position {index}: '{x}' then '{y}'"
    return f"{len(a)} nodes then {len(b)} nodes"
