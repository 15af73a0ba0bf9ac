"""The checks a candidate judge must pass before the pipeline keeps it: lint, debug, acceptance.

`check_candidate` lints the source; when the code can run (it parses and has its entry point)
it is debugged even if lint found something, so lint and debug problems reach the model in
one repair round. A candidate that runs cleanly is then scored for real on the sample answers
(acceptance) and compared with the intended scores. `mutation_stage` damages the accepted
answers one fact at a time, and rewrites them keeping their meaning (a judge must keep those
scores). Every outcome is recorded on the run as a `StageRecord`.
"""

from __future__ import annotations

import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.review.cost import LLMSpend
from generator.review.labels import intended_labels
from generator.review.mutate import MutationStage, mutate_answer
from generator.review.record import StageRecord, StageStatus
from generator.review.runs import ReviewRuns
from generator.stages.acceptance import (
    AcceptanceBackend,
    AcceptanceReport,
    BudgetedClient,
    acceptance_stage,
)
from generator.stages.debug import DebugIssue, DebugReport, SharedExtractor, debug_stage
from generator.stages.draft import Problem, offending_lines
from generator.stages.lint import lint_source
from generator.stages.spec import cites_pages
from toolkit.backends import LLMBackend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from generator.review.labels import AnswerLabels
    from generator.stages.run import GenerationRun, PipelineOptions
    from generator.stages.spec import LoadedSpec

# Findings after which running the module shows nothing useful: it cannot run (syntax, no
# entry point) or its runs are not reproducible (clock, randomness: JG008).
BLOCKING_RULES = frozenset({"JG000", "invalid-syntax", "JG001", "JG008"})


@dataclass
class Checked:
    """What the checks of one candidate found."""

    source: str
    problem: Problem | None = None
    report: DebugReport | None = None
    acceptance: AcceptanceReport | None = None
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)


def lint_problem(source: str, task_id: str) -> tuple[str, Problem | None, list[str], bool]:
    """(formatted source, problem, finding lines, can the code run) of the lint stage."""
    report = lint_source(source, f"{task_id}.py")
    formatted = report.source
    if report.ok:
        return formatted, None, [], True
    details = [f"line {f.line}: {f.rule} {f.message}" for f in report.findings]
    problem = Problem(
        stage="lint",
        signature="lint:" + "; ".join(sorted({f"{f.rule} {f.message}" for f in report.findings})),
        summary=f"The linter found {len(report.findings)} problem(s):\n" + "\n".join(details),
        details=report.render(guidance=True),
        lines=offending_lines(formatted, [f.line for f in report.findings], context=0),
    )
    runs = not any(f.rule in BLOCKING_RULES for f in report.findings)
    return formatted, problem, details, runs


def merge_problems(first: Problem, second: Problem) -> Problem:
    """One repair problem holding both (lint findings and what running the code showed)."""
    return Problem(
        stage=f"{first.stage}+{second.stage}",
        signature=f"{first.signature} || {second.signature}",
        summary=f"{first.summary}\n\nRunning the code also showed:\n{second.summary}",
        details="\n\n".join(d for d in (first.details, second.details) if d),
        lines=sorted(set(first.lines) | set(second.lines), key=_line_number),
    )


def _line_number(numbered: str) -> int:
    head = numbered.split("|", 1)[0].strip()
    return int(head) if head.isdigit() else 0


def _debug_record(run: GenerationRun, report: DebugReport, number: int, label: str) -> None:
    runs = len(report.runs)
    if report.ok:
        run.record(
            StageRecord(
                stage="debug", round=number, status="ok", summary=f"{label}: {runs} runs, no issue"
            )
        )
        return
    groups: dict[str, list[str]] = {}
    for issue in report.issues:
        groups.setdefault(issue.signature(), []).append(f"{issue.answer}/{issue.pattern}")
    details = []
    for same in groups.values():
        issue = next(i for i in report.issues if f"{i.answer}/{i.pattern}" == same[0])
        line = f" (line {issue.lines[-1]})" if issue.lines else ""
        details.append(f"{issue.kind}{line} in {len(same)}/{runs} runs: {issue.message}")
    run.record(
        StageRecord(
            stage="debug",
            round=number,
            status="failed",
            summary=f"{label}: {len(report.issues)} issue(s) in {runs} runs",
            details=details,
        )
    )


def uncompared_reason(loaded: LoadedSpec, options: PipelineOptions) -> str | None:
    """Why acceptance could not compare the judge with the intended scores (None: it can,
    none are given, or --no-acceptance declined it).

    Without a page store every cited page would be missing, which no intended score assumes,
    so acceptance cannot run; a judge must then not be published as if it had agreed.
    """
    if not options.acceptance or not intended_labels(loaded):
        return None
    if options.pages is None and cites_pages(loaded.answers):
        return (
            "the sample answers cite pages and no page store was given, so acceptance cannot "
            "compare the judge's scores with the intended ones: pass --pages DIR (see "
            "`judgegen cache-pages`), or --no-acceptance to publish without comparing them"
        )
    return None


# The verdict pattern that bounds the judge's score, the kind of issue past it, and the word.
_BOUNDS = (
    ("all_pass", "intended_above_all_pass", "above", "passes"),
    ("all_fail", "intended_below_all_fail", "below", "fails"),
)


def unreachable_intended_issues(
    report: DebugReport, labels: dict[str, AnswerLabels]
) -> list[DebugIssue]:
    """An issue for each sample answer whose intended score no verdict can reach: above its
    all-pass score, or below its all-fail score.

    The all-pass run is the most the judge can give an answer and the all-fail run the least
    (a failed leaf only ever lowers its groups), so past either bound the judge disagrees with
    the author whatever the pages say: a check missing, or a critical flag off so a failed
    claim cannot sink the answer. Needs no verification model: `check_candidate` applies it
    when acceptance does not run (when it does, comparing the real scores catches this).
    """
    issues = []
    for run in report.runs:
        label = labels.get(run.answer)
        intended = label.root_score if label else None
        bound = next((b for b in _BOUNDS if b[0] == run.pattern), None)
        if bound is None or run.score is None or intended is None:
            continue
        pattern, kind, side, verdicts = bound
        past = intended - run.score if side == "above" else run.score - intended
        if past > 1e-9:
            message = (
                f"intended score {intended:g} is {side} {run.score:g}, what the judge gives "
                f"this answer when every verification {verdicts}, so no verdict can reach it"
            )
            issues.append(
                DebugIssue(kind=kind, answer=run.answer, pattern=pattern, message=message)
            )
    return issues


async def check_candidate(run: GenerationRun, source: str, number: int, label: str) -> Checked:
    """Lint, debug (when the code can run) and acceptance (when it runs cleanly)."""
    source, lint, details, runnable = lint_problem(source, run.loaded.task_id)
    status: StageStatus = "ok" if lint is None else "failed"
    summary = f"{label}: clean" if lint is None else f"{label}: {len(details)} finding(s)"
    run.record(
        StageRecord(stage="lint", round=number, status=status, summary=summary, details=details)
    )
    if not runnable:
        return Checked(source, lint)
    report = await debug_stage(
        source,
        run.loaded,
        run.extractor,
        limits=run.options.limits,
        isolation=run.options.isolation,
    )
    if report.ok and acceptance_skip(run) is not None:
        report.issues.extend(unreachable_intended_issues(report, intended_labels(run.loaded)))
    _debug_record(run, report, number, label)
    debug = report.problem(source)
    if lint is not None:
        return Checked(source, merge_problems(lint, debug) if debug else lint, report)
    if debug is not None:
        return Checked(source, debug, report)
    acceptance, summaries = await run_acceptance(run, source, number, label)
    problem = acceptance.problem(source) if acceptance.ran else None
    return Checked(source, problem, report, acceptance, summaries)


def acceptance_backend(run: GenerationRun) -> AcceptanceBackend | None:
    """The real judging backend, its verification and extraction budgeted, or None when the run
    has no verification model."""
    judge = run.extractor.backend
    if not isinstance(judge, LLMBackend):
        return None
    if run.acceptance_backend is None:
        run.budgeted = BudgetedClient(
            judge.client, run.options.acceptance_budget_usd, replayed=run.tape.replayed
        )
        budgeted = LLMBackend(
            run.budgeted,
            model=judge.model,
            extract_model=judge.extract_model,
            trials=judge.trials,
            provider=judge.provider,
        )
        # Extraction debug already asked is free; what acceptance and mutation newly ask is
        # charged to the budget like their verifications.
        extractor = SharedExtractor(budgeted)
        extractor.memo = run.extractor.memo
        run.acceptance_backend = AcceptanceBackend(extractor, budgeted)
    return run.acceptance_backend


@asynccontextmanager
async def judge_runs(
    run: GenerationRun, source: str, backend: Any
) -> AsyncIterator[tuple[ReviewRuns, Path]]:
    """The judge written to the run's scratch file, and the run's one pool of judge runs.

    Acceptance and mutation share one `ReviewRuns` (one sandboxed worker, started once per
    generation) over the same backend and pages; `close_judge_runs` ends it.
    """
    if run.judge_runs is None:
        run.scratch = tempfile.TemporaryDirectory(prefix="judgegen-accept-")
        runs = ReviewRuns(
            backend,
            pages=run.pages,
            sandbox=run.options.isolation == "sandbox",
            timeout_s=run.options.limits.timeout_s,
        )
        run.judge_runs = await runs.__aenter__()
    assert run.scratch is not None
    path = Path(run.scratch.name) / f"{run.loaded.task_id}.py"
    path.write_text(source, "utf-8")
    yield run.judge_runs, path


async def close_judge_runs(run: GenerationRun) -> None:
    """Stop the run's judge runs and remove its scratch directory (no-op when never started)."""
    if run.judge_runs is not None:
        await run.judge_runs.__aexit__(None, None, None)
        run.judge_runs = None
    if run.scratch is not None:
        run.scratch.cleanup()
        run.scratch = None


def acceptance_skip(run: GenerationRun) -> str | None:
    """Why acceptance will not run on this run's candidates (None: it will)."""
    if not run.options.acceptance:
        return "--no-acceptance"
    if acceptance_backend(run) is None:
        return "no verification model"
    if run.pages is None and cites_pages(run.loaded.answers):
        return "no page store for the cited pages (--pages)"
    return None


async def run_acceptance(
    run: GenerationRun, source: str, number: int, label: str
) -> tuple[AcceptanceReport, dict[str, dict[str, Any]]]:
    """The acceptance stage on `source`, recorded; skipped (and said so) when disabled."""
    backend = acceptance_backend(run)
    note = acceptance_skip(run)
    if note is not None:
        report = AcceptanceReport.skipped(note)
        run.acceptance, run.summaries = report, {}
        run.record(StageRecord(stage="acceptance", status="skipped", summary=note))
        return report, {}
    assert backend is not None and run.budgeted is not None
    labels = intended_labels(run.loaded)
    run.budgeted.part = "acceptance"
    async with judge_runs(run, source, backend) as (runs, path):
        report, summaries = await acceptance_stage(path, run.loaded, runs, labels)
    spent = run.budgeted.spend("acceptance")  # every round so far; mutation's apart
    report.calls, report.cost_usd = spent.calls, spent.cost_usd
    report.estimated_live_usd = spent.estimated_live_usd
    report.budget_usd = run.options.acceptance_budget_usd
    run.acceptance, run.summaries = report, summaries
    details = [
        f"{a.answer}: intended {a.intended}, actual {a.actual} ({a.status})" for a in report.answers
    ] + [f"{a.answer}: {f.message}" for a in report.answers for f in a.findings]
    run.record(
        StageRecord(
            stage="acceptance",
            round=number,
            status="ok" if report.ok else "failed",
            summary=f"{label}: {report.summary_line()}",
            details=details,
        )
    )
    return report, summaries


async def mutation_stage(run: GenerationRun, source: str) -> MutationStage:
    """Mutation-test `source` on every sample answer acceptance scored 1, and run it on their
    meaning-preserving rewrites; recorded on the run (failed below --min-kill-rate, or when a
    rewrite changed the score)."""
    backend = acceptance_backend(run)
    if not run.options.mutation or backend is None or run.acceptance is None:
        note = "--no-mutation" if not run.options.mutation else "acceptance did not run"
        stage = MutationStage(ran=False, note=note)
    elif not run.acceptance.ran:
        stage = MutationStage(ran=False, note=f"acceptance skipped ({run.acceptance.note})")
    else:
        stage = MutationStage()
        accepted = [a for a in run.acceptance.answers if a.actual is not None and a.actual >= 1]
        texts = {a.name: a.text for a in run.loaded.answers}
        assert run.budgeted is not None
        run.budgeted.part = "mutation"
        try:
            async with judge_runs(run, source, backend) as (runs, path):
                for item in accepted:
                    stage.reports.append(
                        await mutate_answer(
                            runs,
                            path,
                            run.loaded.task_id,
                            item.answer,
                            texts[item.answer],
                            1.0,
                            original_missing=item.missing_pages,
                        )
                    )
        finally:
            run.budgeted.part = "acceptance"
        if not accepted:
            stage = MutationStage(ran=False, note="no sample answer scores 1")
    # every pass so far, whether or not this one ran (no budgeted client: nothing was asked)
    spent = run.budgeted.spend("mutation") if run.budgeted is not None else LLMSpend()
    stage.calls, stage.cost_usd = spent.calls, spent.cost_usd
    stage.estimated_live_usd = spent.estimated_live_usd
    run.mutation = stage
    status: StageStatus = "skipped" if not stage.ran else "ok"
    gate = run.options.min_kill_rate
    if gate is not None and (stage.kill_rate is None or stage.kill_rate < gate):
        status = "failed"  # below the gate, or the gate could not be measured
    changed = stage.rewrites_changed()
    if changed:
        status = "failed"  # a rewrite keeping the meaning changed the score (`check_rewrites`)
    summary = stage.summary_line() if stage.ran else stage.note
    details = [f"rewrite changed the score: {line}" for line in changed]
    details += stage.survivors() + stage.unproven()
    details += [f"rewrite {line}" for line in stage.rewrites_unproven()]
    run.record(StageRecord(stage="mutation", status=status, summary=summary, details=details))
    return stage
