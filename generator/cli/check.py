"""`judgegen check`: run the lint stage (ruff + judgegen's rules) on judge scripts, and with
`--task` the debug stage too (sample answers × stubbed verdict patterns, in the sandbox)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import click

from generator.cli.llm_clients import CommandClients
from generator.cli.llm_options import llm_options
from generator.cli.rerun import cache_after, rerun_note
from generator.review.runs import extraction_backend
from generator.stages.debug import DebugReport, debug_stage
from generator.stages.lint import LintReport, lint_files
from generator.stages.spec import LoadedSpec, load_spec
from toolkit.errors import InfraError, SpecError
from toolkit.llm.settings import LLMSettings


def check_files(paths: Iterable[str | Path]) -> list[LintReport]:
    """The checks `judgegen check` runs on each file, in order (the lint stage for now).

    This is the hook later stages (e.g. debug runs with `--task`) extend.
    """
    return lint_files(paths)


@click.command()
@click.argument(
    "files",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON on stdout.")
@click.option(
    "--task",
    default=None,
    help="Also run the debug stage on this task's sample answers (tasks/<TASK>/).",
)
@click.option(
    "--tasks-dir",
    default="tasks",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@llm_options
@click.pass_context
def check(
    ctx: click.Context,
    files: tuple[Path, ...],
    as_json: bool,
    task: str | None,
    tasks_dir: Path,
    llm_settings: LLMSettings,
) -> None:
    """Lint judge scripts: ruff format/check plus judgegen's JG rules.

    Prints one `path:line:col: RULE message` line per finding (lines refer to the
    ruff-formatted source); `--json` prints the full reports instead. With `--task`, each
    lint-clean file is also run, sandboxed, on the task's sample answers under stubbed
    verdicts (all pass, all fail, two seeded mixes) with real extraction (response cache
    or `--provider replay:DIR`), as `generate` does: exceptions, timeouts, empty trees,
    unverified leaves, unstable node ids, unserializable summaries, overwritten verdicts
    and scores no verdict moves are reported.

    \b
    Example:
      judgegen check generated_judges/rust_2024_edition.py
      judgegen check generated_judges/rust_2024_edition.py --task rust_2024_edition \
        --provider replay:recordings/rust_2024_edition
    \b
    Exit codes: 0 no findings; 1 findings; 2 usage or input error (missing or
    non-UTF-8 file, invalid task); 3 infrastructure failure (ruff, LLM, sandbox).
    """
    try:
        reports = check_files(files)
        loaded = load_spec(task, tasks_dir) if task else None
        clients = CommandClients()
        debug = (
            clients.run(_debug_files(files, reports, loaded, llm_settings, clients))
            if loaded
            else {}
        )
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    except InfraError as exc:
        click.echo(f"error: {exc}", err=True)
        mode = cache_after(exc, llm_settings.cache_mode) if task else None
        click.echo(rerun_note("check", mode), err=True)
        ctx.exit(3)
    _print(files, reports, debug, as_json)
    total = sum(len(report.findings) for report in reports)
    total += sum(len(report.issues) for report in debug.values())
    dirty = sum(1 for report in reports if report.findings)
    click.echo(f"{total} finding(s) in {dirty} of {len(reports)} file(s)", err=True)
    ctx.exit(1 if total else 0)


async def _debug_files(
    files: tuple[Path, ...],
    reports: list[LintReport],
    loaded: LoadedSpec,
    settings: LLMSettings,
    clients: CommandClients,
) -> dict[Path, DebugReport]:
    """The debug stage on each lint-clean file (a file with findings would only crash)."""
    backend, client = extraction_backend(settings)
    clients.add(client)
    try:
        return {
            path: await debug_stage(report.source, loaded, backend)
            for path, report in zip(files, reports, strict=True)
            if report.ok
        }
    finally:
        await clients.aclose()


def _print(
    files: tuple[Path, ...],
    reports: list[LintReport],
    debug: dict[Path, DebugReport],
    as_json: bool,
) -> None:
    if as_json:
        payload = []
        for path, report in zip(files, reports, strict=True):
            entry = report.model_dump(mode="json", exclude={"source"})
            if path in debug:
                entry["debug"] = debug[path].model_dump(mode="json")
            payload.append(entry)
        click.echo(json.dumps(payload, indent=2))
        return
    for path, report in zip(files, reports, strict=True):
        if report.findings:
            click.echo(report.render())
        for issue in debug[path].issues if path in debug else []:
            click.echo(
                f"{path}: debug: {issue.kind} on {issue.answer}/{issue.pattern}: "
                f"{issue.message.splitlines()[0] if issue.message else ''}"
            )
