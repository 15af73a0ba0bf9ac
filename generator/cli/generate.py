"""`judgegen generate`: draft, check, reflect on and publish the judge of one or more tasks."""

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
from generator.stages.pipeline import GenerationResult
from generator.stages.pipeline import generate as run_generation
from generator.stages.run import PipelineOptions
from generator.stages.spec import LoadedSpec, load_spec
from toolkit.llm.settings import LLMSettings


def _generate_all(
    specs: list[LoadedSpec], settings: LLMSettings, options: PipelineOptions
) -> tuple[list[GenerationResult], list[tuple[str, str]]]:
    return for_each_spec(
        specs,
        settings,
        lambda loaded, generation, extraction: run_generation(
            loaded, generation, extraction, options, lambda m: click.echo(m, err=True)
        ),
    )


@click.command()
@click.argument("task_ids", nargs=-1, required=True)
@pipeline_options
@click.option("--examples", "max_examples", default=2, show_default=True, type=click.IntRange(1, 3))
@gate_options
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@llm_options
@click.pass_context
def generate_cmd(
    ctx: click.Context,
    task_ids: tuple[str, ...],
    tasks_dir: Path,
    judges: Path,
    reviews: Path,
    no_commit: bool,
    max_repairs: int,
    max_reflections: int,
    max_examples: int,
    pages: Path | None,
    no_acceptance: bool,
    acceptance_budget_usd: float,
    no_mutation: bool,
    min_kill_rate: float | None,
    as_json: bool,
    llm_settings: LLMSettings,
) -> None:
    """Generate the judge of each TASK_ID from tasks/<TASK_ID>/task.yaml.

    Stages: spec, context, draft, lint, debug (sample answers × stubbed verdict patterns),
    acceptance (the sample answers scored with the real judging model and --pages, compared
    with the intended scores in task.yaml or labels/), up to 3 repair rounds, mutation
    testing of the accepted answers, checklist reflection with that evidence (up to 2
    passes), publish. Writes
    generated_judges/<id>.py and reviews/<id>.md + .json, and commits them on branch
    judge/<id> without touching your index, HEAD or other files (--no-commit: files only).
    Progress and the LLM usage summary go to stderr; the published paths to stdout.

    \b
    Example:
      judgegen generate rust_2024_edition --no-commit --pages pages \
        --provider replay:recordings/rust_2024_edition

    \b
    Exit codes: 0 every judge published; 1 a judge still failed lint/debug/acceptance after
    the repairs, or its kill rate is below --min-kill-rate or could not be measured (nothing
    published for it); 2 invalid spec, flags or not a git repository
    (use --no-commit); 3 infrastructure failure (LLM, budget, replay miss, sandbox, or the
    branch moved while publishing).
    """
    with generation_errors(ctx, "generate", llm_settings):
        specs = [load_spec(task_id, tasks_dir) for task_id in task_ids]
        settings = llm_settings
        options = PipelineOptions(
            model=settings.model_for("generation"),
            extract_model=settings.judge_model,
            judges_dir=judges,
            reviews_dir=reviews,
            commit=not no_commit,
            max_repairs=max_repairs,
            max_reflections=max_reflections,
            max_examples=max_examples,
            **responses_source(settings.provider),
            **gates(pages, no_acceptance, acceptance_budget_usd, no_mutation, min_kill_rate),
        )
        check_comparable(specs, options)
        done, failed = _generate_all(specs, settings, options)
    _print(done, failed, as_json)
    ctx.exit(1 if failed else 0)


def _print(done: list[GenerationResult], failed: list[tuple[str, str]], as_json: bool) -> None:
    if as_json:
        payload = {
            "version": 1,
            "published": [
                r.model_dump(mode="json", exclude={"record": True, "publish": {"record"}})
                for r in done
            ],
            "failed": [{"task_id": t, "error": e} for t, e in failed],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    for result in done:
        commit = result.publish.commit
        where = f" (commit {commit.commit[:12]} on {commit.branch})" if commit else ""
        click.echo(f"{result.publish.judge_path}{where}")


generate = generate_cmd
