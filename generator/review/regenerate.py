"""Regenerating a reviewed judge after its spec changed, keeping the reviewed code where it can.

The model gets the reviewed judge, the spec diff and orders to change only what the edit
requires; the result goes through the pipeline's own lint/debug/acceptance/repair, mutation
and reflect stages, then every top-level definition that did not really change is spliced
back byte-identical.
Publishing writes the new provenance (spec sha256), a review record carrying the rubric and
function diff, and moves the old approval aside: the judge's bytes changed, so it needs a new
review. When the regenerated judge's bytes are identical to the approved ones (same sha256:
a forced regeneration that changed nothing), the approval still holds and stays where it is.
A regeneration that still fails after the repairs publishes nothing and leaves the old judge
and its approval as they were.
"""

from __future__ import annotations

import difflib
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from generator.gitops import GitError, format_message, versions
from generator.review.codediff import diff_functions, splice
from generator.review.record import ReviewRecord, StageRecord
from generator.review.runs import JudgeRunError, RubricAndCodeDiff, rubric_and_code_diff
from generator.review.staleness import Staleness, staleness
from generator.stages.checking import close_judge_runs
from generator.stages.context import GenerationContext, api_reference, mistakes_catalog
from generator.stages.draft import judge_request
from generator.stages.lint import lint_source
from generator.stages.pipeline import ask_for_code, prove, repair_loop, start_run
from generator.stages.provenance import strip_header
from generator.stages.publish import (
    Move,
    PublishResult,
    Trailers,
    check_publishable,
    publish,
    published_judge_sha256,
)
from generator.stages.run import GenerationRun, PipelineOptions, Progress
from generator.stages.spec import MARKDOWN_SPEC_FILE, SPEC_FILE, LoadedSpec, parse_spec
from generator.stages.spec import spec_sha256 as hash_spec
from prompts import render
from toolkit.backends import LLMClientLike
from toolkit.errors import SpecError
from toolkit.llm.models import LLMRequest
from toolkit.runner.approval import approval_path, load_approval

REGENERATE_VERSION = 2
MAX_SPEC_COMMITS = 500
STALE_APPROVAL_SUFFIX = ".approval.stale.json"


def reviewed_body(state: Staleness) -> str:
    """The current judge's source without its provenance header."""
    return strip_header(Path(state.judge_path).read_text("utf-8"))


class SpecChange(BaseModel):
    """The spec edit a regeneration answers: old and new hash, and the old text if recovered."""

    version: int = REGENERATE_VERSION
    old_sha256: str | None
    new_sha256: str
    spec_file: str
    new_text: str
    old_text: str | None = None
    recovered_from: str = Field(default="", description="`<commit>:<path>` of the old text.")

    def unified_diff(self) -> str:
        """Unified diff of the old spec file against the new one ('' when not recovered)."""
        if self.old_text is None:
            return ""
        name = Path(self.spec_file).name
        lines = difflib.unified_diff(
            self.old_text.splitlines(keepends=True),
            self.new_text.splitlines(keepends=True),
            fromfile=f"a/{name} ({self.recovered_from})",
            tofile=f"b/{name} (now)",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def summary(self) -> str:
        """One line for progress and the review record."""
        old = (self.old_sha256 or "unknown")[:19]
        if self.old_sha256 == self.new_sha256:
            return f"spec unchanged ({old}); regeneration forced"
        where = (
            f"old text from {self.recovered_from}"
            if self.old_text is not None
            else "old text not recoverable from git; the prompt gives the new spec in full"
        )
        return f"spec changed {old} -> {self.new_sha256[:19]}; {where}"


def _spec_file(loaded: LoadedSpec) -> Path:
    folder = Path(loaded.task_dir)
    yaml_file = folder / SPEC_FILE
    return yaml_file if yaml_file.is_file() else folder / MARKDOWN_SPEC_FILE


def _matches(text: str, name: str, wanted: str) -> bool:
    try:
        spec = parse_spec(text, name, markdown=name.endswith(MARKDOWN_SPEC_FILE))
    except SpecError:
        return False
    return hash_spec(spec) == wanted


def recover_old_spec(loaded: LoadedSpec, old_sha256: str | None) -> SpecChange:
    """The spec change, with the old spec's text found in git by its hash when possible.

    The index, then every commit (on any ref) that touched the task's `task.yaml` or `task.md`,
    newest first, is searched for a version whose canonical hash equals the judge's
    provenance: matching by hash makes the diff exactly against the spec the judge came from.
    """
    spec_file = _spec_file(loaded)
    change = SpecChange(
        old_sha256=old_sha256,
        new_sha256=loaded.sha256(),
        spec_file=str(spec_file),
        new_text=spec_file.read_text("utf-8"),
    )
    if old_sha256 is None:
        return change
    try:
        for where, text in versions(
            Path(loaded.task_dir), (SPEC_FILE, MARKDOWN_SPEC_FILE), MAX_SPEC_COMMITS
        ):
            if _matches(text, where.rpartition(":")[2], old_sha256):
                return change.model_copy(update={"old_text": text, "recovered_from": where})
    except GitError:
        pass
    return change


def regenerate_request(
    context: GenerationContext, model: str, source: str, change: SpecChange
) -> LLMRequest:
    """The request to update the reviewed judge `source` for the spec `change`."""
    text = render(
        "generator/regenerate.j2",
        spec=context.loaded.spec,
        spec_diff=change.unified_diff(),
        recovered=change.old_text is not None,
        old_sha256=change.old_sha256 or "unknown",
        new_sha256=change.new_sha256,
        source=source,
    )
    return judge_request(context, model, text, purpose="regenerate", label="regenerate")


class ApprovalChange(BaseModel):
    """What happened to the approval of the judge that was replaced."""

    version: int = REGENERATE_VERSION
    had_approval: bool
    reviewer: str = ""
    approved_sha256: str = ""
    moved_to: str = Field(default="", description="Where it was moved; '' when it was not.")
    still_valid: bool = Field(
        default=False,
        description="The regenerated judge's bytes are the approved ones (same sha256), so "
        "the approval was kept in place.",
    )

    def message(self, task_id: str) -> str:
        """What the user is told."""
        if not self.had_approval:
            return "no approval to invalidate"
        if self.still_valid:
            return (
                f"approval by {self.reviewer} ({self.approved_sha256[:19]}…) still holds: the "
                "regenerated judge's bytes are identical to the approved ones (same sha256); "
                "kept"
            )
        return (
            f"approval by {self.reviewer} ({self.approved_sha256[:19]}…) no longer matches the "
            f"judge; moved to {self.moved_to}. Review the changes, then `judgegen approve "
            f"{task_id}`"
        )


class RegenerationResult(BaseModel):
    """What `regenerate` did for one task."""

    version: int = REGENERATE_VERSION
    task_id: str
    status: Literal["published", "skipped"]
    message: str
    spec_change: SpecChange | None = None
    diff: RubricAndCodeDiff | None = None
    diff_text: str = ""
    approval: ApprovalChange | None = None
    publish: PublishResult | None = None


def _splice_checked(old_body: str, checked: str, task_id: str) -> tuple[str, str]:
    """`checked` with unchanged definitions restored byte-identical, and a note on how."""
    spliced = splice(old_body, checked)
    lint = lint_source(spliced, f"{task_id}.py")
    if lint.ok and lint.source == spliced and diff_functions(spliced, checked).empty:
        return spliced, "unchanged top-level definitions kept byte-identical"
    return checked, "splicing would change behaviour or formatting; the checked module is kept"


async def _diff(
    run: GenerationRun, old_body: str, new_body: str, sandbox: bool
) -> tuple[RubricAndCodeDiff | None, str]:
    loaded = run.loaded
    try:
        diff = await rubric_and_code_diff(
            loaded.task_id,
            old_body,
            new_body,
            answer=loaded.answers[0],
            extraction=run.extractor,
            sandbox=sandbox,
        )
    except JudgeRunError as exc:
        code = diff_functions(old_body, new_body)
        return None, f"rubric: unavailable ({exc})\n" + code.to_text()
    return diff, diff.to_text()


def _approval_change(options: PipelineOptions, task_id: str, judge_sha256: str) -> ApprovalChange:
    """What will happen to the approval: one of other bytes than the judge about to be
    published (`judge_sha256`) moves aside; one of exactly these bytes still holds."""
    record = load_approval(options.repo / options.reviews_dir, task_id)
    if record is None:
        return ApprovalChange(had_approval=False)
    if record.task_id == task_id and record.judge_sha256 == judge_sha256:
        return ApprovalChange(
            had_approval=True,
            reviewer=record.reviewer,
            approved_sha256=record.judge_sha256,
            still_valid=True,
        )
    return ApprovalChange(
        had_approval=True,
        reviewer=record.reviewer,
        approved_sha256=record.judge_sha256,
        moved_to=str(options.reviews_dir / f"{task_id}{STALE_APPROVAL_SUFFIX}"),
    )


def _commit_message(
    change: SpecChange,
    diff_text: str,
    approval: ApprovalChange,
    record: ReviewRecord,
    trailers: Trailers,
) -> str:
    repairs = sum(1 for s in record.stages if s.stage == "repair" and s.status == "ok")
    kept = (
        "the approval still holds (identical judge bytes)"
        if approval.still_valid
        else "the old approval was moved aside"
    )
    body = (
        f"`judgegen regenerate {record.task_id}` updated the reviewed judge for an edited spec "
        f"({change.summary()}): {repairs} repair round(s); unchanged functions are kept "
        f"byte-identical and {kept}. Review record: "
        f"reviews/{record.task_id}.md\n\n{diff_text.rstrip()}\n\n{record.usage_line}"
    )
    return format_message(
        f"Regenerate judge for {record.task_id} after a spec change", body, trailers
    )


async def regenerate(
    loaded: LoadedSpec,
    generation: LLMClientLike,
    extraction: LLMClientLike | None,
    options: PipelineOptions,
    *,
    force: bool = False,
    sandbox: bool | None = None,
    progress: Progress = lambda message: None,
) -> RegenerationResult:
    """Update the reviewed judge of `loaded` for its changed spec, check it and publish it.

    A judge whose provenance already names the current spec is skipped unless `force`.
    The rubric diff runs in the sandbox unless `sandbox` is False (default: where
    `options.isolation` runs the debug stage).
    The update goes through `generate`'s gates (lint, debug, acceptance with `options.pages`,
    mutation testing, --min-kill-rate) with the same repairs and reflection.
    Raises `GenerationFailed` (nothing written) when the update still fails one of them, or
    before any LLM call when acceptance could not compare the intended scores.
    """
    task_id = loaded.task_id
    state = staleness(loaded, options.repo / options.judges_dir)
    if not state.has_judge:
        raise SpecError(
            state.judge_path,
            "judge",
            "no judge to regenerate",
            f"run `judgegen generate {task_id}`",
        )
    if not state.stale and not force:
        message = "up to date (its provenance names the current spec); --force regenerates it"
        progress(f"[{task_id}] skipped: {message}")
        return RegenerationResult(task_id=task_id, status="skipped", message=message)
    check_publishable(options, task_id)
    load_approval(options.repo / options.reviews_dir, task_id)
    old_body = reviewed_body(state)
    change = recover_old_spec(loaded, state.judge_spec_sha256)
    context = GenerationContext(
        loaded=loaded,
        api_reference=api_reference(),
        mistakes_catalog=mistakes_catalog(),
        examples=[],
    )
    run = start_run(loaded, options, generation, extraction, progress, context)
    run.record(
        StageRecord(
            stage="spec",
            status="ok",
            summary=change.summary(),
            details=change.unified_diff().splitlines(),
        )
    )
    request = regenerate_request(context, options.model, old_body, change)
    source = await ask_for_code(run, "regenerate", request)
    changed = diff_functions(old_body, source)
    run.record(
        StageRecord(
            stage="draft",
            status="ok",
            summary=f"regenerated from the reviewed judge: {len(source.splitlines())} lines",
            details=changed.to_text().splitlines(),
        )
    )
    try:
        source, report = await repair_loop(run, source)
        source, report, passes = await prove(run, source, report)
    finally:
        await close_judge_runs(run)
    final, how = _splice_checked(old_body, source, task_id)
    progress(f"[{task_id}] splice: {how}")
    sandboxed = options.isolation == "sandbox" if sandbox is None else sandbox
    diff, diff_text = await _diff(run, old_body, final, sandboxed)
    approval = _approval_change(options, task_id, published_judge_sha256(final, loaded, options))
    stages = [
        *run.stages,
        StageRecord(
            stage="publish",
            status="ok",
            summary=f"changes against the reviewed judge (rubric nodes, then code); {how}",
            details=diff_text.splitlines(),
        ),
    ]
    moves = []
    if approval.had_approval and not approval.still_valid:
        current = approval_path(options.reviews_dir, task_id)
        moves.append(Move(source=current, target=Path(approval.moved_to)))
    published = publish(
        run_source=final,
        loaded=loaded,
        options=options,
        report=report,
        passes=passes,
        stages=stages,
        tape=run.tape,
        examples=[],
        progress=progress,
        summary="judge and review written; " + approval.message(task_id),
        moves=moves,
        message=partial(_commit_message, change, diff_text, approval),
        acceptance=run.acceptance,
        mutation=run.mutation,
    )
    progress(f"[{task_id}] approval: {approval.message(task_id)}")
    return RegenerationResult(
        task_id=task_id,
        status="published",
        message=f"regenerated; {approval.message(task_id)}",
        spec_change=change,
        diff=diff,
        diff_text=diff_text,
        approval=approval,
        publish=published,
    )
