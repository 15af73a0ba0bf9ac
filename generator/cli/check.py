"""`judgegen check`: run the lint stage (ruff + judgegen's rules) on judge scripts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import click

from generator.lint import LintReport, lint_files
from toolkit.errors import InfraError, SpecError


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
@click.pass_context
def check(ctx: click.Context, files: tuple[Path, ...], as_json: bool) -> None:
    """Lint judge scripts: ruff format/check plus judgegen's JG rules.

    Prints one `path:line:col: RULE message` line per finding (lines refer to the
    ruff-formatted source); `--json` prints the full reports instead.

    \b
    Example:
      judgegen check generated_judges/llava_commit.py
    \b
    Exit codes: 0 no findings; 1 findings; 2 usage or input error (missing or
    non-UTF-8 file); 3 ruff could not run.
    """
    try:
        reports = check_files(files)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    except InfraError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(3)
    if as_json:
        payload = [report.model_dump(mode="json", exclude={"source"}) for report in reports]
        click.echo(json.dumps(payload, indent=2))
    else:
        for report in reports:
            if report.findings:
                click.echo(report.render())
    total = sum(len(report.findings) for report in reports)
    dirty = sum(1 for report in reports if report.findings)
    click.echo(f"{total} finding(s) in {dirty} of {len(reports)} file(s)", err=True)
    ctx.exit(1 if total else 0)
