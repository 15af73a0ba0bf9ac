"""`judgegen import`: port Mind2Web 2 judges by rewriting their imports (see generator.importer)."""

from __future__ import annotations

from pathlib import Path

import click

from generator.importer import format_report, import_judges
from toolkit.errors import SpecError


@click.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    default="generated_judges",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory the rewritten judges are written to, as <name>.py.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; fail when a judge cannot be mapped or its output is missing or stale.",
)
def import_cmd(paths: tuple[Path, ...], out_dir: Path, as_json: bool, check: bool) -> None:
    """Import Mind2Web 2 judges: rewrite their `mind2web2` imports to judgegen's toolkit.

    Only import statements change; every other byte of each judge stays the same. A
    directory PATH means its *.py files. Imports of modules or names judgegen does not
    provide are left as they are and reported as `file:line: error: ...`; such a judge is
    not written.

    \b
    Example:
      judgegen import tests/fixtures/m2w2/judges/portland_bookstores.py --out imported

    \b
    Exit codes: 0 every judge mapped (and, with --check, up to date); 1 something could
    not be mapped (or, with --check, an output is missing or stale); 2 usage or input
    error (missing file, not Python, two judges with one name).
    """
    try:
        report = import_judges(list(paths), out_dir, check=check)
    except SpecError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(format_report(report))
    problems = sum(len(judge.problems) for judge in report.judges)
    click.echo(f"imported {len(report.judges)} judge(s); {problems} problem(s)", err=True)
    if not report.ok:
        raise SystemExit(1)
