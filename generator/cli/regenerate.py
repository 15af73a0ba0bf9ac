"""`judgegen regenerate`: update reviewed judges after their specs changed, keeping reviewed code."""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator.cli.generation import (
    check_comparable,
    for_each_spec,
    gate_options,
    gates,
    generation_errors,
    pipeline_options,
    responses_source,
)
from generator.cli.llm_options import llm_options
from generator.review.regenerate import RegenerationResult
from generator.review.regenerate import regenerate as run_regeneration
from generator.review.staleness import find_stale, judge_file
from generator.stages.run import PipelineOptions
from generator.stages.spec import LoadedSpec, load_spec
from toolkit.errors import SpecError
from toolkit.llm.settings import LLMSettings


def _regenerate_all(
    specs: list[LoadedSpec], settings: LLMSettings, options: PipelineOptions, force: bool
) -> tuple[list[RegenerationResult], list[tuple[str, str]]]:
    return for_each_spec(
        specs,
        settings,
        lambda loaded, generation, extraction: run_regeneration(
            loaded,
            generation,
            extraction,
            options,
            force=force,
            progress=lambda m: click.echo(m, err=True),
        ),
        kept="; nothing published, the old judge and its approval are unchanged",
    )


def _select(task_ids: tuple[str, ...], stale: bool, tasks_dir: Path, judges: Path) -> list[str]:
    """The TASKs given, plus every stale task with --stale (each once, in order)."""
    if not task_ids and not stale:
        raise click.UsageError("name one or more TASKs, or pass --stale")
    selected = list(dict.fromkeys(task_ids))
    if stale:
        found = [item.task_id for item in find_stale(tasks_dir, judges)]
        click.echo(f"stale: {', '.join(found) or 'none'}", err=True)
        selected += [task for task in found if task not in selected]
    return selected


@click.command()
@click.argument("task_ids", nargs=-1)
@click.option("--stale", is_flag=True, help="Also select every task whose spec changed.")
@click.option("--force", is_flag=True, help="Regenerate a named TASK even if it is up to date.")
@pipeline_options
@gate_options
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@llm_options
@click.pass_context
def regenerate_cmd(
    ctx: click.Context,
    task_ids: tuple[str, ...],
    stale: bool,
    force: bool,
    tasks_dir: Path,
    judges: Path,
    reviews: Path,
    no_commit: bool,
    max_repairs: int,
    max_reflections: int,
    pages: Path | None,
    no_acceptance: bool,
    acceptance_budget_usd: float,
    no_mutation: bool,
    min_kill_rate: float | None,
    as_json: bool,
    llm_settings: LLMSettings,
) -> None:
    """Update the reviewed judge of each TASK (or every --stale one) for its edited spec.

    A judge is stale when its provenance header names another spec sha256 than the spec's
    current one; a named TASK that is up to date is skipped unless --force. The model gets
    the reviewed judge, the spec diff (the old spec is found in git by its hash) and orders
    to change only what the edit requires and keep node ids. The result goes through lint,
    debug, acceptance (with --pages; repairs for all three), mutation testing and reflection
    like `generate`; then every top-level function that did not really change is restored
    byte-identical. Publishing writes the new provenance,
    a review record with the rubric and function diff, moves reviews/<id>.approval.json to
    reviews/<id>.approval.stale.json (the approval no longer matches the judge) and commits
    on judge/<id> without touching your index, HEAD or other files (--no-commit: files only).
    A regenerated judge whose bytes are identical to the approved ones (same sha256, e.g.
    --force on an unchanged spec) keeps its approval, and says so.

    \b
    Example:
      judgegen regenerate --stale --pages pages --provider replay:recordings/rust_2024_edition

    \b
    Exit codes: 0 every selected judge regenerated or up to date; 1 a regeneration still
    failed lint/debug/acceptance after the repairs, or its kill rate is below --min-kill-rate
    or could not be measured (nothing published for it; old judge and approval unchanged);
    2 no TASK and no --stale, invalid spec or flags (cited pages and intended scores without
    --pages or --no-acceptance), no judge to regenerate, or not a git repository (use
    --no-commit); 3 infrastructure failure (LLM, budget, replay miss,
    sandbox, or the branch moved while publishing).
    """
    with generation_errors(ctx, "regenerate", llm_settings):
        selected = _select(task_ids, stale, tasks_dir, judges)
        specs = [load_spec(task_id, tasks_dir) for task_id in selected]
        for loaded in specs:
            if not judge_file(judges, loaded.task_id).is_file():
                raise SpecError(
                    str(judge_file(judges, loaded.task_id)),
                    "judge",
                    "no judge to regenerate",
                    f"run `judgegen generate {loaded.task_id}`",
                )
        options = PipelineOptions(
            model=llm_settings.model_for("generation"),
            extract_model=llm_settings.judge_model,
            judges_dir=judges,
            reviews_dir=reviews,
            commit=not no_commit,
            max_repairs=max_repairs,
            max_reflections=max_reflections,
            **responses_source(llm_settings.provider),
            **gates(pages, no_acceptance, acceptance_budget_usd, no_mutation, min_kill_rate),
        )
        check_comparable(specs, options)
        done, failed = _regenerate_all(specs, llm_settings, options, force) if specs else ([], [])
    _print(done, failed, as_json)
    ctx.exit(1 if failed else 0)


def _print(done: list[RegenerationResult], failed: list[tuple[str, str]], as_json: bool) -> None:
    if as_json:
        payload = {
            "version": 1,
            "results": [
                r.model_dump(
                    mode="json",
                    exclude={"publish": {"record"}, "spec_change": {"old_text", "new_text"}},
                )
                for r in done
            ],
            "failed": [{"task_id": t, "error": e} for t, e in failed],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    for result in done:
        if result.status == "skipped" or result.publish is None:
            click.echo(f"{result.task_id}: skipped: {result.message}")
            continue
        commit = result.publish.commit
        where = f" (commit {commit.commit[:12]} on {commit.branch})" if commit else ""
        click.echo(f"{result.publish.judge_path}{where}")
        click.echo("  " + result.diff_text.rstrip().replace("\n", "\n  "))
        if result.approval is not None:
            click.echo(f"  {result.approval.message(result.task_id)}")


regenerate = regenerate_cmd
