"""`judgegen diff`: what changed in a judge between two git revisions, as a reviewer cares.

Rubric nodes added, removed and changed come from the all-pass skeletons of both versions
(the same extraction settings as `judgegen tree`); top-level functions added, removed and
changed come from the sources, ignoring formatting. Git is only read (`git show REV:path`).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator.cli.common import (
    load_task,
    location_options,
    pick_answer,
    run_review,
    sandbox_options,
)
from generator.cli.llm_clients import CommandClients
from generator.cli.llm_options import llm_options
from generator.gitops import GitError, NotAtRevision, file_at, last_change
from generator.review.runs import RubricAndCodeDiff, extraction_backend, rubric_and_code_diff
from generator.stages.debug import SharedExtractor
from generator.stages.spec import SampleAnswer
from toolkit.llm.settings import LLMSettings

WORKTREE = "WORKTREE"

__all__ = ["WORKTREE", "diff", "judge_at", "rubric_and_code_diff"]


def judge_at(path: Path, rev: str) -> str | None:
    """The judge file's text at git revision `rev` (`WORKTREE`: the file on disk), or None
    when the revision exists but has no such file (a judge added or deleted since)."""
    if rev == WORKTREE:
        return path.read_text("utf-8") if path.is_file() else None
    try:
        return file_at(path, rev)
    except NotAtRevision:
        return None
    except GitError as exc:
        raise click.UsageError(str(exc)) from exc


def last_commit(path: Path) -> str:
    """The last commit that touched `path`."""
    try:
        commit = last_change(path)
    except GitError as exc:
        raise click.UsageError(str(exc)) from exc
    if commit is None:
        raise click.UsageError(f"{path} has no commit yet (give REV_A explicitly)")
    return commit


async def _diff(
    task_id: str,
    sources: tuple[str | None, str | None],
    answer: SampleAnswer,
    settings: LLMSettings,
    sandbox: bool,
    timeout_s: float,
    clients: CommandClients,
) -> RubricAndCodeDiff:
    backend, client = extraction_backend(settings)
    clients.add(client)
    try:
        return await rubric_and_code_diff(
            task_id,
            sources[0],
            sources[1],
            answer=answer,
            extraction=SharedExtractor(backend),
            sandbox=sandbox,
            timeout_s=timeout_s,
        )
    finally:
        await clients.aclose()


def render_text(result: RubricAndCodeDiff, rev_a: str, rev_b: str, note: str = "") -> str:
    """A header naming both revisions, then the provenance header, rubric, module-level and
    function listings (each with its counts, even when nothing changed)."""
    rubric, code = result.rubric, result.code
    return (
        f"judge {result.task_id}: {rev_a} -> {rev_b} "
        f"(all-pass skeletons on answer '{result.answer}')\n"
        + (f"{note}\n" if note else "")
        + _section("provenance header", code.counts("header"), code.header_lines())
        + f"rubric nodes: {len(rubric.added)} added, {len(rubric.removed)} removed, "
        f"{len(rubric.changed)} changed\n"
        + ("" if rubric.empty else rubric.to_text())
        + _section("module level", code.counts("module_level"), code.module_lines())
        + _section(
            "functions",
            (len(code.added), len(code.removed), len(code.changed)),
            code.definition_lines(),
        )
    )


def _section(title: str, counts: tuple[int, int, int], lines: list[str]) -> str:
    added, removed, changed = counts
    head = f"{title}: {added} added, {removed} removed, {changed} changed\n"
    return head + "".join(line + "\n" for line in lines)


@click.command()
@click.argument("task")
@click.argument("rev_a", required=False)
@click.argument("rev_b", required=False, default=WORKTREE)
@click.option("--answer", "answer_name", help="Sample answer to run on (default: the first).")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@location_options
@sandbox_options
@llm_options
def diff(
    task: str,
    rev_a: str | None,
    rev_b: str,
    answer_name: str | None,
    as_json: bool,
    judges: Path,
    tasks_dir: Path,
    no_sandbox: bool,
    timeout_s: float,
    llm_settings: LLMSettings,
) -> None:
    """What changed in generated_judges/TASK.py between revisions: provenance header, rubric
    nodes, module-level statements and functions.

    REV_A defaults to the judge's last commit, REV_B to the working tree (or give the
    literal WORKTREE). Rubric changes come from all-pass runs of both versions (stubbed
    verdicts, real extraction through the configured LLM client, as in `judgegen tree`).
    The provenance header (the spec, prompts, model it claims) is compared field by field
    with old and new values; module-level statements (imports, constants such as TASK_ID,
    TASK_DESCRIPTION, GROUND_TRUTH) are named with old and new values; function changes
    ignore formatting and comments. Top-level statements in another order are reported too,
    so nothing is listed only when both versions parse to the same module under the same
    header. A judge that does not exist in REV_A (a pull request adding it) shows everything
    as added; one deleted by REV_B, everything as removed.

    \b
    Example:
      judgegen diff nobel_physics_2023 --provider replay:recordings/nobel_physics_2023
      judgegen diff rust_2024_edition HEAD WORKTREE --json --provider replay:recordings/rust_2024_edition

    \b
    Exit codes: 0 ok (whether or not anything changed); 1 a version of the judge failed on
    the answer; 2 usage or input error (unknown revision, not a git repository);
    3 infrastructure failure.
    """
    loaded = load_task(task, tasks_dir)
    path = judges / f"{loaded.task_id}.py"
    rev_a = rev_a or last_commit(path)
    sources = (judge_at(path, rev_a), judge_at(path, rev_b))
    if sources == (None, None):
        raise click.UsageError(f"no judge {path} at {rev_a} nor at {rev_b}")
    note = _presence_note(path, sources, rev_a, rev_b)
    answer = pick_answer(loaded, answer_name)
    clients = CommandClients()
    result = run_review(
        _diff(loaded.task_id, sources, answer, llm_settings, not no_sandbox, timeout_s, clients),
        "diff",
        llm_settings.cache_mode,
        clients,
    )
    if as_json:
        presence = {"new": sources[0] is None, "deleted": sources[1] is None}
        payload = {**result.model_dump(mode="json"), "rev_a": rev_a, "rev_b": rev_b, **presence}
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(result, rev_a, rev_b, note), nl=False)


def _presence_note(
    path: Path, sources: tuple[str | None, str | None], rev_a: str, rev_b: str
) -> str:
    if sources[0] is None:
        return f"new judge: {path} does not exist at {rev_a}, so everything is added"
    if sources[1] is None:
        return f"deleted judge: {path} does not exist at {rev_b}, so everything is removed"
    return ""
