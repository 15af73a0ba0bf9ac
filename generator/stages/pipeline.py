"""The generation pipeline: spec → context → draft → lint/debug/repair → reflect → publish.

Each stage is a function that appends `StageRecord`s to the run's history; the history, the
debug results and the reflection findings become the review record. The pipeline never
"repairs" an infrastructure failure: those propagate as `InfraError`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from generator.review.mutate import REWRITE_FIX, MutationStage, first_named
from generator.review.record import ReflectionPass, ReviewRecord, StageRecord
from generator.review.rubric import diff_trees, outline
from generator.stages.checking import (
    Checked,
    check_candidate,
    close_judge_runs,
    mutation_stage,
    uncompared_reason,
)
from generator.stages.context import GenerationContext, build_context
from generator.stages.debug import DebugReport
from generator.stages.draft import NoCodeBlock, draft_request, extract_code, repair_request
from generator.stages.publish import PublishResult, check_publishable, publish
from generator.stages.reflect import (
    ChecklistFinding,
    evidence_text,
    load_checklist,
    parse_reflection,
    reflect_request,
)
from generator.stages.run import GenerationFailed, GenerationRun, PipelineOptions, Progress
from generator.stages.spec import LoadedSpec
from toolkit.backends import LLMClientLike
from toolkit.llm.models import LLMRequest


class GenerationResult(BaseModel):
    """What `generate` produced for one task."""

    version: int = 1
    task_id: str
    record: ReviewRecord
    publish: PublishResult


async def ask_for_code(run: GenerationRun, request_kind: str, request: LLMRequest) -> str:
    """Send `request` and pull the judge module out of the reply (GenerationFailed if none)."""
    response = await run.tape.complete(request)
    try:
        return extract_code(response.text)
    except NoCodeBlock as exc:
        raise GenerationFailed(f"{request_kind}: {exc}", run.stages) from None


async def draft_stage(run: GenerationRun) -> str:
    """Ask for the first draft."""
    source = await ask_for_code(run, "draft", draft_request(run.context, run.options.model))
    run.record(StageRecord(stage="draft", status="ok", summary=f"{len(source.splitlines())} lines"))
    return source


async def repair_loop(run: GenerationRun, source: str) -> tuple[str, DebugReport]:
    """Lint, debug and accept; on a problem ask for a repair, at most `max_repairs` times.

    Stops early when a repair brings back the same error signature.
    """
    previous: str | None = None
    for round_number in range(run.options.max_repairs + 1):
        label = "draft" if round_number == 0 else f"repair {round_number}"
        checked = await check_candidate(run, source, round_number, label)
        source, problem = checked.source, checked.problem
        if problem is None and checked.report is not None:
            return source, checked.report
        assert problem is not None
        if problem.signature == previous:
            run.record(
                StageRecord(
                    stage="repair",
                    round=round_number,
                    status="stopped",
                    summary=f"the same error came back: {problem.signature}",
                )
            )
            raise GenerationFailed(
                f"repair stopped: the same error repeated ({problem.signature})", run.stages
            )
        if round_number == run.options.max_repairs:
            raise GenerationFailed(
                f"still failing after {round_number} repair rounds: {problem.signature}", run.stages
            )
        previous = problem.signature
        request = repair_request(run.context, run.options.model, source, problem, round_number + 1)
        source = await ask_for_code(run, "repair", request)
        run.record(
            StageRecord(
                stage="repair",
                round=round_number + 1,
                status="ok",
                summary=f"asked to fix {problem.stage}: {problem.signature[:300]}",
            )
        )
    raise AssertionError("unreachable")


def results_text(report: DebugReport) -> str:
    """The debug results as a small text table (for the reflect prompt)."""
    lines = []
    for answer, row in report.scores().items():
        cells = ", ".join(f"{p}={'error' if s is None else round(s, 3)}" for p, s in row.items())
        lines.append(f"{answer}: {cells}")
    return "\n".join(lines)


def revision_changes(
    old_source: str, new_source: str, old: DebugReport, new: DebugReport
) -> list[str]:
    """Rubric nodes added/removed/changed (all-pass skeletons), then a line count of the code."""
    changes: list[str] = []
    if old.skeleton_tree and new.skeleton_tree:
        changes = diff_trees(old.skeleton_tree, new.skeleton_tree).to_text().splitlines()
    diff = list(difflib.unified_diff(old_source.splitlines(), new_source.splitlines(), lineterm=""))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return [*changes, f"code: +{added} -{removed} lines"]


def _earlier(passes: list[ReflectionPass]) -> list[str]:
    """What the previous pass found and what became of it (only the last pass: bounded)."""
    if not passes:
        return []
    last = passes[-1]
    lines = [f"pass {last.pass_number}: {last.outcome.replace('_', ' ')}. {last.reason}".strip()]
    lines += [f"{f.item}: {f.evidence} -> {f.fix}" for f in last.findings if f.status == "problem"]
    return lines


async def reflect_stage(
    run: GenerationRun, source: str, report: DebugReport
) -> tuple[str, DebugReport, list[ReflectionPass]]:
    """Checklist passes with evidence; a revision is kept only if it passes every check again.

    Each pass sees the sample answers, what acceptance extracted and verified, the scores vs
    the intended ones, the mutations not killed (survived, error or inconclusive) and the
    previous pass's findings. A pass that changes nothing ends the stage.
    """
    checklist = load_checklist()
    passes: list[ReflectionPass] = []
    for number in range(1, run.options.max_reflections + 1):
        request = reflect_request(
            run.context,
            run.options.model,
            source=source,
            skeleton=outline(report.skeleton_tree) if report.skeleton_tree else "(no tree)",
            results=results_text(report),
            evidence=evidence_text(run.loaded, run.acceptance, run.mutation),
            checklist=checklist,
            pass_number=number,
            max_passes=run.options.max_reflections,
            earlier=_earlier(passes),
        )
        reflection = parse_reflection(await run.tape.complete(request))
        problems = [f"{f.item}: {f.evidence} -> {f.fix}" for f in reflection.problems()]
        revised = reflection.revised_source()
        if not problems or revised is None or revised == source:
            passes.append(
                ReflectionPass(
                    pass_number=number, findings=reflection.findings, outcome="no_change"
                )
            )
            summary = f"{len(problems)} problem(s), no revision"
            run.record(
                StageRecord(
                    stage="reflect",
                    round=number,
                    status="unchanged",
                    summary=summary,
                    details=problems,
                )
            )
            break
        kept = (run.acceptance, run.summaries)
        checked = await check_candidate(run, revised, number, f"reflection {number}")
        if checked.problem is not None or checked.report is None:
            run.acceptance, run.summaries = kept
            passes.append(_reverted(run, number, reflection.findings, checked, problems))
            continue
        changes = revision_changes(source, checked.source, report, checked.report)
        source, report = checked.source, checked.report
        reason = "The revision passed lint, debug and acceptance and was kept."
        passes.append(
            ReflectionPass(
                pass_number=number,
                findings=reflection.findings,
                outcome="kept",
                reason=reason,
                changes=changes,
            )
        )
        run.record(
            StageRecord(
                stage="reflect",
                round=number,
                status="kept",
                summary=f"{len(problems)} problem(s) fixed",
                details=problems,
            )
        )
    return source, report, passes


def _reverted(
    run: GenerationRun,
    number: int,
    findings: list[ChecklistFinding],
    checked: Checked,
    problems: list[str],
) -> ReflectionPass:
    problem = checked.problem
    what = f"{problem.stage} ({problem.signature[:200]})" if problem else "debug (no report)"
    reason = f"The revision was reverted: it failed {what}."
    run.record(
        StageRecord(
            stage="reflect", round=number, status="reverted", summary=reason, details=problems
        )
    )
    return ReflectionPass(pass_number=number, findings=findings, outcome="reverted", reason=reason)


def _open_pages(path: Path | None) -> Any:
    if path is None:
        return None
    from toolkit.pages.store import PageStore

    return PageStore(path, readonly=True)


async def prove(
    run: GenerationRun, source: str, report: DebugReport
) -> tuple[str, DebugReport, list[ReflectionPass]]:
    """Mutation-test the accepted judge, reflect with the evidence, re-test a revised judge."""
    mutation = await mutation_stage(run, source)
    revised, report, passes = await reflect_stage(run, source, report)
    if revised != source:
        mutation = await mutation_stage(run, revised)
    check_mutation(run, mutation)
    return revised, report, passes


def check_mutation(run: GenerationRun, mutation: MutationStage) -> None:
    """The gates of mutation testing on the judge `prove` keeps: every meaning-preserving
    rewrite keeps the score (`check_rewrites`), and the kill rate clears --min-kill-rate
    (`check_kill_rate`)."""
    check_rewrites(run, mutation)
    check_kill_rate(run, mutation)


def check_rewrites(run: GenerationRun, mutation: MutationStage) -> None:
    """Fail when a rewrite that keeps an accepted answer's meaning (a date written as ISO, a
    number without its thousands separators) changed the judge's score: the judge reads how a
    value is written, as one comparing a value copied from a sample answer as text does, and
    acceptance, scoring the very answers it was drafted from, cannot show it. Always on when
    mutation testing ran: unlike a kill rate, this is no matter of degree. A rewrite the judge
    failed on, or whose score changed while a cited page was missing, proves nothing either
    way and is listed in the stage's details, not failed on."""
    changed = mutation.rewrites_changed()
    if not changed:
        return
    raise GenerationFailed(
        "a rewrite that keeps the answer's meaning changed the judge's score: "
        f"{first_named(changed)}; "
        f"{REWRITE_FIX}",
        run.stages,
    )


def check_kill_rate(run: GenerationRun, mutation: MutationStage) -> None:
    """Fail when the kill rate is below --min-kill-rate, or when it could not be measured:
    a gate the user set must never pass just because mutation testing did not run, nor on
    mutations the judge failed on or scored lower only while a cited page was missing (they
    count as not killed, `kill_rate_of`). The message names them and what to do."""
    gate = run.options.min_kill_rate
    if gate is None:
        return
    fixes = "".join(f"; {fix}" for fix in mutation.unproven_fixes())
    if not mutation.ran or mutation.kill_rate is None:
        why = mutation.note if not mutation.ran else mutation.summary_line()
        raise GenerationFailed(
            f"--min-kill-rate {gate:.2f} could not be checked: mutation testing measured no "
            f"kill rate ({why}){fixes}",
            run.stages,
        )
    if mutation.kill_rate < gate:
        named = "; ".join((mutation.unproven() + mutation.survivors())[:3])
        raise GenerationFailed(
            f"mutation kill rate {mutation.kill_rate:.2f} is below --min-kill-rate "
            f"{gate:.2f}: {named}{fixes}",
            run.stages,
        )


def start_run(
    loaded: LoadedSpec,
    options: PipelineOptions,
    generation: LLMClientLike,
    extraction: LLMClientLike | None,
    progress: Progress,
    context: GenerationContext,
) -> GenerationRun:
    """A run with its page store open, for `generate` and `regenerate` alike.

    Fails before any LLM call when acceptance could not compare the intended scores.
    """
    reason = uncompared_reason(loaded, options)
    if reason is not None:
        raise GenerationFailed(reason, [])
    run = GenerationRun.start(loaded, options, generation, extraction, progress, context)
    run.pages = _open_pages(options.pages)
    return run


async def generate(
    loaded: LoadedSpec,
    generation: LLMClientLike,
    extraction: LLMClientLike | None,
    options: PipelineOptions,
    progress: Progress = lambda message: None,
) -> GenerationResult:
    """Generate, check, accept, mutation-test, reflect on and publish one task's judge.

    Fails before any LLM call when acceptance could not compare the intended scores.
    """
    check_publishable(options, loaded.task_id)
    context = build_context(
        loaded,
        judges_dir=options.repo / options.judges_dir,
        reviews_dir=options.repo / options.reviews_dir,
        max_examples=options.max_examples,
    )
    run = start_run(loaded, options, generation, extraction, progress, context)
    spec_summary = f"{len(loaded.answers)} sample answers, spec {loaded.sha256()[:19]}"
    run.record(StageRecord(stage="spec", status="ok", summary=spec_summary))
    names = [f"{e.task_id} ({e.origin})" for e in context.examples]
    examples = "examples: " + (", ".join(names) or "none")
    run.record(StageRecord(stage="context", status="ok", summary=examples))
    try:
        source = await draft_stage(run)
        source, report = await repair_loop(run, source)
        source, report, passes = await prove(run, source, report)
    finally:
        await close_judge_runs(run)
    result = publish(
        run_source=source,
        loaded=loaded,
        options=options,
        report=report,
        passes=passes,
        stages=run.stages,
        tape=run.tape,
        examples=names,
        progress=progress,
        acceptance=run.acceptance,
        mutation=run.mutation,
    )
    return GenerationResult(task_id=loaded.task_id, record=result.record, publish=result)
