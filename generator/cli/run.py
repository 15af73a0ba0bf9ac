"""`judgegen run`: score answers or webeval trajectories with the reviewed judges."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from generator.cli.common import backend_options, load_backend_factory, open_pages
from generator.cli.llm_options import llm_options
from toolkit.errors import InfraError, JudgegenError, SpecError
from toolkit.runner.inputs import (
    DEFAULT_MAX_ANSWER_BYTES,
    AnswerInput,
    discover_answers,
    discover_trajectories,
)

if TYPE_CHECKING:  # the runner loads when a run starts, not for `run --help`
    from toolkit.backends import JudgingBackend
    from toolkit.llm.settings import LLMSettings
    from toolkit.runner.report import RunReport
    from toolkit.runner.results import EvaluationResult
    from toolkit.runner.scheduler import RunOptions


def _discover(
    answers: Path | None, trajectories: Path | None, tasks: set[str] | None, max_bytes: int
) -> list[AnswerInput]:
    if (answers is None) == (trajectories is None):
        raise click.UsageError("give exactly one of --answers DIR or --trajectories DIR")
    if answers is not None:
        return discover_answers(answers, tasks=tasks, max_bytes=max_bytes)
    assert trajectories is not None
    return discover_trajectories(trajectories, tasks=tasks, max_bytes=max_bytes)


def _progress(total: int) -> Callable[[str, EvaluationResult | None], None]:
    done = 0

    def report(event: str, result: EvaluationResult | None) -> None:
        nonlocal done
        done += 1
        if result is None:
            return
        where = f"{result.agent_name}/{result.task_id}/{result.answer_name}"
        if result.status == "complete":
            detail = f"score {result.final_score:.2f}"
        elif result.status == "excluded":
            detail = result.reason or ""
        else:
            first = result.errors[0] if result.errors else {}
            detail = f"{first.get('type', 'error')}: {first.get('message', '')}"[:200]
        verb = "reused" if event == "reused" else result.status
        click.echo(
            f"[{done}/{total}] {where}: {verb} {detail} ({result.duration_s:.1f}s)", err=True
        )

    return report


async def _execute(
    inputs: list[AnswerInput],
    *,
    backend: JudgingBackend,
    options: RunOptions,
    pages: Any,
    timeout_s: float,
    sandbox: bool,
    client: Any,
) -> RunReport:
    try:
        return await _run_with(inputs, backend, options, pages, timeout_s, sandbox)
    finally:
        if client is not None:
            await client.aclose()


async def _run_with(
    inputs: list[AnswerInput],
    backend: JudgingBackend,
    options: RunOptions,
    pages: Any,
    timeout_s: float,
    sandbox: bool,
) -> RunReport:
    from toolkit.runner.scheduler import run_evaluations
    from toolkit.sandbox.protocol import SandboxLimits

    return await run_evaluations(
        inputs,
        backend=backend,
        options=options,
        isolation="sandbox" if sandbox else "in_process",
        pages=pages,
        tools=_tools(),
        limits=SandboxLimits(timeout_s=timeout_s),
        progress=_progress(len(inputs)),
    )


def _tools() -> dict[str, Any]:
    """Tools judges may call through the broker: maps (Google when its key is set)."""
    from toolkit.tools.maps import API_KEY_ENV, GoogleMapsProvider, maps_tools

    return maps_tools(GoogleMapsProvider() if os.environ.get(API_KEY_ENV) else None)


def _build_backend(backend_spec: str | None, settings: LLMSettings) -> tuple[Any, Any]:
    """(metered judging backend, metered LLM client or None when a --backend is given)."""
    from toolkit.runner.metering import MeteredBackend, MeteredClient

    if backend_spec:
        return MeteredBackend(load_backend_factory(backend_spec)), None
    from toolkit.backends import LLMBackend
    from toolkit.llm import build_client

    client = MeteredClient(build_client(settings, "judge"))
    model = client.model or settings.judge_model
    return MeteredBackend(LLMBackend(client, model=model)), client


def _llm_identity(backend: Any, settings: LLMSettings) -> str:
    """The fingerprint's backend identity for the LLM backend: provider, server and models."""
    model = backend.model
    parts = [f"llm provider={settings.provider_for(model)}", f"model={model}"]
    if backend.extract_model != model:
        parts.append(f"extract_model={backend.extract_model}")
    if settings.base_url:
        parts.append(f"base_url={settings.base_url}")
    return " ".join([*parts, f"trials={backend.trials}"])


@click.command()
@click.option(
    "--answers",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Mind2Web 2 answers: DIR/<agent>/<task_id>/*.md (or one agent's folder).",
)
@click.option(
    "--trajectories",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A webeval run: DIR/traj/<task_id>/*_final_answer.json.",
)
@click.option("--task", "tasks", multiple=True, help="Only these task ids (repeatable).")
@click.option("--jobs", default=4, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--judges",
    default="generated_judges",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--results", default="results", show_default=True, type=click.Path(path_type=Path))
@click.option(
    "--reviews",
    default="reviews",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where `judgegen approve` records approvals.",
)
@backend_options
@click.option("--include-unreviewed", is_flag=True, help="Also run judges without approval.")
@click.option("--overwrite", is_flag=True, help="Redo every result, fresh or not.")
@click.option(
    "--timeout",
    "timeout_s",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per evaluation; a judge still running is stopped and reported incomplete.",
)
@click.option("--max-answer-bytes", default=DEFAULT_MAX_ANSWER_BYTES, show_default=True, type=int)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run judges in this process: no isolation, and a judge that blocks cannot be stopped.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
@llm_options
def run(
    answers: Path | None,
    trajectories: Path | None,
    tasks: tuple[str, ...],
    jobs: int,
    judges: Path,
    results: Path,
    reviews: Path,
    backend_spec: str | None,
    pages: Path | None,
    include_unreviewed: bool,
    overwrite: bool,
    timeout_s: float,
    max_answer_bytes: int,
    no_sandbox: bool,
    as_json: bool,
    llm_settings: LLMSettings,
) -> None:
    """Score every answer with its task's reviewed judge; write results and metrics.

    Results go to RESULTS/<agent>/<task_id>/<answer>.json (for trajectories also
    <traj dir>/scores/judgegen_<task_id>.json) and RESULTS/<agent>/summary.json. A rerun
    redoes only missing, incomplete or stale results (--overwrite: all).

    Only judges approved for their current bytes run (`judgegen approve`), unless
    --include-unreviewed. Inputs: an empty answer (or webeval's over-budget empty
    final_answer) scores 0 without the judge; invalid UTF-8 is decoded with replacement
    characters (noted in the result); binary or oversized answers, aborted trajectories and
    malformed trajectory folders are excluded with a reason. Incomplete and excluded
    evaluations are left out of the metrics and listed.

    \b
    Example:
      judgegen run --answers answers/ --pages pages/ --jobs 8
      judgegen run --trajectories runs/fara-7b --backend mypkg.backends:scripted

    \b
    Exit codes: 0 every evaluation complete; 1 some incomplete (or malformed inputs);
    2 usage or input error; 3 an infrastructure failure (e.g. budget) stopped the run.
    """
    from toolkit.runner.scheduler import RunOptions

    if not judges.is_dir():
        raise click.UsageError(f"no judges directory {judges} (use --judges DIR)")
    try:
        inputs = _discover(answers, trajectories, set(tasks) or None, max_answer_bytes)
    except OSError as exc:
        raise click.UsageError(f"cannot read inputs: {exc}") from exc
    if not inputs:
        raise click.UsageError("no answers found (check --answers/--trajectories and --task)")
    try:
        page_store = open_pages(pages)
        backend, client = _build_backend(backend_spec, llm_settings)
    except (SpecError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from exc
    options = RunOptions(
        judges_dir=judges,
        results_dir=results,
        reviews_dir=reviews,
        include_unreviewed=include_unreviewed,
        overwrite=overwrite,
        jobs=jobs,
        backend_spec=backend_spec or _llm_identity(backend, llm_settings),
    )
    try:
        report = asyncio.run(
            _execute(
                inputs,
                backend=backend,
                options=options,
                pages=page_store,
                timeout_s=timeout_s,
                sandbox=not no_sandbox,
                client=client,
            )
        )
    except (InfraError, OSError) as exc:
        click.echo(f"error: infrastructure failure stopped the run: {exc}", err=True)
        sys.exit(3)
    except JudgegenError as exc:
        raise click.UsageError(str(exc)) from exc
    _print(report, as_json, client)
    sys.exit(report.exit_code)


def _print(report: RunReport, as_json: bool, client: Any) -> None:
    from toolkit.runner.metrics import format_table

    for skipped in report.skipped_judges:
        click.echo(f"skipped judge {skipped.task_id}: {skipped.reason}", err=True)
    if report.stopped:
        click.echo(
            f"stopped: {report.stopped}; {report.not_started} evaluation(s) not started "
            "(rerun to continue)",
            err=True,
        )
    click.echo(
        f"{report.evaluated} evaluated, {report.reused} up to date, "
        f"{len(report.incomplete)} incomplete, {report.usage.backend_calls} backend calls",
        err=True,
    )
    if client is not None:
        click.echo(client.summary_line(), err=True)
    if as_json:
        click.echo(report.to_record().model_dump_json(indent=2))
        return
    for summary in report.summaries.values():
        click.echo(format_table(summary))
        click.echo("")
