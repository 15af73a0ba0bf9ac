"""Regenerating a reviewed judge after its spec changed, keeping the reviewed code where it can.

The model gets the reviewed judge, the spec diff and orders to change only what the edit
requires; the result goes through the pipeline's own lint/debug/repair and reflect stages,
then every top-level definition that did not really change is spliced back byte-identical.
Publishing writes the new provenance (spec sha256), a review record carrying the rubric and
function diff, and moves the old approval aside: the judge's bytes changed, so it needs a new
review. A regeneration that still fails after the repairs publishes nothing and leaves the
old judge and its approval as they were.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from generator.codediff import diff_functions, splice
from generator.context import GenerationContext, api_reference, mistakes_catalog
from generator.debug import DebugReport, SharedExtractor
from generator.draft import DEFAULT_MAX_TOKENS, NoCodeBlock, extract_code
from generator.gitops import (
    CommitResult,
    GitError,
    PreparedCommit,
    format_message,
    prepare_commit,
    repo_root,
    update_branch,
)
from generator.lint import lint_source
from generator.pipeline import (
    GenerationFailed,
    GenerationRun,
    PipelineOptions,
    Progress,
    reflect_stage,
    repair_loop,
)
from generator.provenance import Provenance, strip_header, with_header
from generator.publish import PublishResult, check_publishable, in_repo, toolkit_version
from generator.review import ReflectionPass, ReviewRecord, StageRecord, render_json, render_markdown
from generator.review_runs import JudgeRunError, RubricAndCodeDiff, rubric_and_code_diff
from generator.spec import MARKDOWN_SPEC_FILE, SPEC_FILE, LoadedSpec, load_spec, parse_spec
from generator.spec import spec_sha256 as hash_spec
from generator.tape import CallTape
from prompts import prompts_sha256, render
from toolkit.backends import LLMBackend, LLMClientLike
from toolkit.errors import SpecError
from toolkit.llm.models import LLMRequest, Message, RequestMeta
from toolkit.runner.approval import approval_path, load_approval
from toolkit.util.files import write_atomic
from toolkit.util.hashing import sha256_text

REGENERATE_VERSION = 1
MAX_SPEC_COMMITS = 500
STALE_APPROVAL_SUFFIX = ".approval.stale.json"


class Staleness(BaseModel):
    """Whether a task's judge was generated from the task's current spec."""

    version: int = REGENERATE_VERSION
    task_id: str
    judge_path: str
    has_judge: bool
    judge_spec_sha256: str | None = Field(description="From the judge's provenance header.")
    spec_sha256: str = Field(description="Of the spec as it is now.")

    @property
    def stale(self) -> bool:
        """True when a judge exists and its header names another spec (or no spec at all)."""
        return self.has_judge and self.judge_spec_sha256 != self.spec_sha256


def judge_file(judges_dir: str | Path, task_id: str) -> Path:
    """Where the judge of `task_id` lives."""
    return Path(judges_dir) / f"{task_id}.py"


def staleness(loaded: LoadedSpec, judges_dir: str | Path) -> Staleness:
    """Compare the spec's sha256 with the one in the judge's provenance header."""
    path = judge_file(judges_dir, loaded.task_id)
    provenance = Provenance.from_header(path.read_text("utf-8")) if path.is_file() else None
    return Staleness(
        task_id=loaded.task_id,
        judge_path=str(path),
        has_judge=path.is_file(),
        judge_spec_sha256=provenance.spec_sha256 if provenance else None,
        spec_sha256=loaded.sha256(),
    )


def reviewed_body(state: Staleness) -> str:
    """The current judge's source without its provenance header."""
    return strip_header(Path(state.judge_path).read_text("utf-8"))


def task_folders(tasks_dir: str | Path) -> list[Path]:
    """Every folder under `tasks_dir` holding a spec, sorted by name."""
    root = Path(tasks_dir)
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and ((p / SPEC_FILE).is_file() or (p / MARKDOWN_SPEC_FILE).is_file())
    )


def find_stale(tasks_dir: str | Path, judges_dir: str | Path) -> list[Staleness]:
    """The stale tasks under `tasks_dir`: a judge exists and was made from another spec."""
    found = [
        staleness(load_spec(folder, tasks_dir), judges_dir) for folder in task_folders(tasks_dir)
    ]
    return [item for item in found if item.stale]


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


def _git(cwd: Path, *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, check=False)
    return proc.stdout.decode("utf-8", errors="replace") if proc.returncode == 0 else None


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
    folder = Path(loaded.task_dir).resolve()
    top = _git(folder, "rev-parse", "--show-toplevel")
    if old_sha256 is None or top is None:
        return change
    root = Path(top.strip())
    relative = folder.relative_to(root.resolve()).as_posix()
    paths = [f"{relative}/{SPEC_FILE}", f"{relative}/{MARKDOWN_SPEC_FILE}"]
    listing = _git(
        root, "log", "--all", f"--max-count={MAX_SPEC_COMMITS}", "--format=%H", "--", *paths
    )
    for commit in ["", *(listing or "").split()]:
        for path in paths:
            text = _git(root, "show", f"{commit}:{path}")
            if text is not None and _matches(text, path, old_sha256):
                where = f"{commit[:12]}:{path}" if commit else f"the index:{path}"
                return change.model_copy(update={"old_text": text, "recovered_from": where})
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
    return LLMRequest(
        model=model,
        system=[context.system_block()],
        messages=[Message.user(text)],
        max_tokens=DEFAULT_MAX_TOKENS,
        metadata=RequestMeta(
            purpose="regenerate", task_id=context.loaded.task_id, label="regenerate"
        ),
    )


class ApprovalChange(BaseModel):
    """What happened to the approval of the judge that was replaced."""

    version: int = REGENERATE_VERSION
    had_approval: bool
    reviewer: str = ""
    approved_sha256: str = ""
    moved_to: str = ""

    def message(self, task_id: str) -> str:
        """What the user is told."""
        if not self.had_approval:
            return "no approval to invalidate"
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


def _git_checked(
    root: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"} | (env or {})
    proc = subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, env=full_env, check=False
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {detail}")
    return proc.stdout.decode().strip()


def _without(prepared: PreparedCommit, removals: list[str], message: str) -> PreparedCommit:
    """The prepared commit rebuilt without `removals` (same parent), when its tree has them."""
    root = Path(prepared.repo)
    present = _git_checked(root, "ls-tree", "--name-only", prepared.commit, *removals)
    if not present:
        return prepared
    with tempfile.TemporaryDirectory(prefix="judgegen-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git_checked(root, "read-tree", prepared.commit, env=env)
        _git_checked(root, "update-index", "--force-remove", "--", *present.splitlines(), env=env)
        tree = _git_checked(root, "write-tree", env=env)
    parents = ["-p", prepared.parent] if prepared.parent else []
    commit = _git_checked(root, "commit-tree", tree, *parents, "-F", "-", stdin=message.encode())
    return prepared.model_copy(update={"commit": commit, "changed": True})


def commit_regeneration(
    root: Path, branch: str, files: dict[str, bytes], removals: list[str], message: str
) -> CommitResult:
    """Commit `files` on `branch` and drop `removals` from its tree, checkout untouched.

    Builds on `gitops.prepare_commit` and moves the branch with its compare-and-swap
    `update_branch`; only the removal of the invalidated approval file is done here.
    """
    prepared = prepare_commit(root, branch, files, message)
    return update_branch(_without(prepared, removals, message))


def _approval_change(options: PipelineOptions, task_id: str) -> ApprovalChange:
    """What will happen to the approval: it names the judge being replaced, so it moves aside."""
    record = load_approval(options.repo / options.reviews_dir, task_id)
    if record is None:
        return ApprovalChange(had_approval=False)
    return ApprovalChange(
        had_approval=True,
        reviewer=record.reviewer,
        approved_sha256=record.judge_sha256,
        moved_to=str(options.reviews_dir / f"{task_id}{STALE_APPROVAL_SUFFIX}"),
    )


def _move_approval(options: PipelineOptions, task_id: str, change: ApprovalChange) -> None:
    """Rename `reviews/<id>.approval.json` to the stale name (after the new judge is written)."""
    if change.had_approval:
        current = approval_path(options.repo / options.reviews_dir, task_id)
        os.replace(current, options.repo / change.moved_to)


def _commit_message(record: ReviewRecord, change: SpecChange, diff_text: str) -> str:
    repairs = sum(1 for s in record.stages if s.stage == "repair" and s.status == "ok")
    body = (
        f"`judgegen regenerate {record.task_id}` updated the reviewed judge for an edited spec "
        f"({change.summary()}): {repairs} repair round(s); unchanged functions are kept "
        f"byte-identical and the old approval was moved aside. Review record: "
        f"reviews/{record.task_id}.md\n\n{diff_text.rstrip()}\n\n{record.usage_line}"
    )
    trailers = [*record.provenance.trailers(), ("Judgegen-Judge-Sha256", record.judge_sha256 or "")]
    return format_message(
        f"Regenerate judge for {record.task_id} after a spec change", body, trailers
    )


def _publish(
    run: GenerationRun,
    source: str,
    report: DebugReport,
    passes: list[ReflectionPass],
    change: SpecChange,
    diff_text: str,
    splice_note: str,
) -> tuple[PublishResult, ApprovalChange]:
    """Write judge, review record and approval change; commit them on `judge/<task_id>`."""
    options, task_id = run.options, run.loaded.task_id
    provenance = Provenance(
        task_id=task_id,
        spec_sha256=change.new_sha256,
        prompts_sha256=prompts_sha256(),
        model=options.model,
        toolkit_version=toolkit_version(),
    )
    judge_text = with_header(source, provenance)
    judge_sha = sha256_text(judge_text)
    approval = _approval_change(options, task_id)
    stages = [
        *run.stages,
        StageRecord(
            stage="publish",
            status="ok",
            summary=f"changes against the reviewed judge (rubric nodes, then code); {splice_note}",
            details=diff_text.splitlines(),
        ),
        StageRecord(
            stage="publish",
            status="ok",
            summary="judge and review written; " + approval.message(task_id),
        ),
    ]
    record = ReviewRecord(
        task_id=task_id,
        status="published",
        provenance=provenance,
        judge_sha256=judge_sha,
        skeleton_tree=report.skeleton_tree,
        results=report.scores(),
        reflections=passes,
        stages=stages,
        usage=run.tape.usage_rows(),
        usage_line=run.tape.summary_line(),
        fixtures=run.tape.fixture_names(options.fixtures_dir),
    )
    outputs = {
        options.judges_dir / f"{task_id}.py": judge_text,
        options.reviews_dir / f"{task_id}.md": render_markdown(record),
        options.reviews_dir / f"{task_id}.json": render_json(record),
    }
    root = repo_root(options.repo) if options.commit else None
    for relative, text in outputs.items():
        write_atomic(options.repo / relative, text)
    _move_approval(options, task_id, approval)
    run.progress(f"[{task_id}] publish: wrote {', '.join(str(p) for p in outputs)}")
    run.progress(f"[{task_id}] approval: {approval.message(task_id)}")
    commit = None
    if root is not None:
        files = {in_repo(root, options.repo / rel): t.encode() for rel, t in outputs.items()}
        removals = []
        if approval.had_approval:
            stale = options.repo / approval.moved_to
            files[in_repo(root, stale)] = stale.read_bytes()
            removals.append(
                in_repo(root, approval_path(options.repo / options.reviews_dir, task_id))
            )
        message = _commit_message(record, change, diff_text)
        commit = commit_regeneration(root, f"judge/{task_id}", files, removals, message)
        run.progress(f"[{task_id}] publish: committed {commit.commit[:12]} on judge/{task_id}")
    paths = [str(options.repo / rel) for rel in outputs]
    result = PublishResult(
        judge_path=paths[0],
        review_path=paths[1],
        sidecar_path=paths[2],
        record=record,
        commit=commit,
    )
    return result, approval


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
    The rubric diff runs in the sandbox unless `sandbox` is False (default: sandboxed unless
    `options.runner` replaces the debug stage's sandbox).
    Raises `GenerationFailed` (nothing written) when the update still fails lint or debug.
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
    tape = CallTape(generation)
    extract_tape = (
        tape
        if extraction is None or extraction is generation
        else CallTape(extraction, shared=tape)
    )
    backend = LLMBackend(extract_tape, model=options.extract_model)
    context = GenerationContext(
        loaded=loaded,
        api_reference=api_reference(),
        mistakes_catalog=mistakes_catalog(),
        examples=[],
    )
    run = GenerationRun(loaded, options, tape, SharedExtractor(backend), progress, context)
    run.record(
        StageRecord(
            stage="spec",
            status="ok",
            summary=change.summary(),
            details=change.unified_diff().splitlines(),
        )
    )
    response = await tape.complete(regenerate_request(context, options.model, old_body, change))
    try:
        source = extract_code(response.text)
    except NoCodeBlock as exc:
        raise GenerationFailed(f"regenerate: {exc}", run.stages) from None
    changed = diff_functions(old_body, source)
    run.record(
        StageRecord(
            stage="draft",
            status="ok",
            summary=f"regenerated from the reviewed judge: {len(source.splitlines())} lines",
            details=changed.to_text().splitlines(),
        )
    )
    source, report = await repair_loop(run, source)
    source, report, passes = await reflect_stage(run, source, report)
    final, how = _splice_checked(old_body, source, task_id)
    progress(f"[{task_id}] splice: {how}")
    sandboxed = options.runner is None if sandbox is None else sandbox
    diff, diff_text = await _diff(run, old_body, final, sandboxed)
    published, approval = _publish(run, final, report, passes, change, diff_text, how)
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
