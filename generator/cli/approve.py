"""`judgegen approve`: bind a reviewer to the exact judge bytes they reviewed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from generator.review.approval_checks import approval_warnings, latest_kill_rate
from toolkit.errors import SpecError
from toolkit.runner.approval import approval_path
from toolkit.runner.approval import approve as record_approval


@click.command()
@click.argument("task_id")
@click.option("--reviewer", required=True, help="Name of the person who reviewed the judge.")
@click.option(
    "--judges",
    default="generated_judges",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--reviews", default="reviews", show_default=True, type=click.Path(path_type=Path))
@click.option(
    "--tasks",
    "tasks_dir",
    default="tasks",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the task specs are (to warn when the judge's spec changed since generation).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the approval record as JSON.")
def approve(
    task_id: str, reviewer: str, judges: Path, reviews: Path, tasks_dir: Path, as_json: bool
) -> None:
    """Approve JUDGES/TASK_ID.py: `judgegen run` then executes it until its bytes change.

    Writes REVIEWS/TASK_ID.approval.json (reviewer, date, judge sha256). Warns on stderr,
    naming the file and field, when REVIEWS/TASK_ID.json does not vouch for these bytes: no
    review record, a record of other bytes, failed or skipped acceptance, an unmeasured
    kill rate or one measured on other bytes or under other mutation kinds than judgegen
    applies now, mutations counted as not killed (errors, inconclusive), or a spec in TASKS
    changed since the judge was generated. Prints the kill rate of these bytes from the latest
    mutation testing: generate's, or a later `judgegen mutate --write-review` (marked stale
    when measured under other mutation kinds).

    \b
    Example:
      judgegen approve rust_2024_edition --reviewer "Ada Lovelace"

    \b
    Exit codes: 0 approved; 2 no such judge or empty reviewer; 3 the approval file cannot be
    written (a full disk, a read-only folder).
    """
    try:
        record = record_approval(task_id, reviewer=reviewer, judges_dir=judges, reviews_dir=reviews)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    except OSError as exc:  # nothing was approved: no partial file is left (atomic write)
        path = approval_path(reviews, task_id)
        click.echo(
            f"error: approval {path} cannot be written: {exc.strerror or exc}. Fix: free space "
            "on its disk or make the reviews folder writable (--reviews DIR), then approve again",
            err=True,
        )
        sys.exit(3)
    judge = judges / f"{task_id}.py"
    warnings = approval_warnings(task_id, judge, reviews, tasks_dir)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    measured = latest_kill_rate(task_id, judge, reviews)
    mutation = measured.shown() if measured else "not measured"
    if as_json:
        payload = {
            **record.model_dump(mode="json"),
            "mutation_testing": mutation,
            "warnings": warnings,
        }
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
        return
    click.echo(
        f"approved {task_id} ({record.judge_sha256}) by {record.reviewer} "
        f"-> {approval_path(reviews, task_id)}\nmutation testing of these bytes: {mutation}"
    )
