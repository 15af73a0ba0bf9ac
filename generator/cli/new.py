"""`judgegen new`: scaffold tasks/<TASK_ID>/ with a commented task.yaml and an answers folder."""

from __future__ import annotations

from pathlib import Path

import click

from generator.spec import SPEC_FILE, scaffold_text
from toolkit.errors import SpecError


@click.command()
@click.argument("task_id")
@click.option("--tasks-dir", default="tasks", show_default=True, type=click.Path(path_type=Path))
def new(task_id: str, tasks_dir: Path) -> None:
    """Create tasks/TASK_ID/task.yaml (every field explained) and tasks/TASK_ID/answers/.

    Fill in the TODOs, add sample answers (good, partial and wrong ones, citing URLs) as
    answers/*.md, then run `judgegen generate TASK_ID`. Prints the spec's path on stdout.

    \b
    Example:
      judgegen new my_task

    \b
    Exit codes: 0 created; 2 invalid id or the task already exists.
    """
    try:
        text = scaffold_text(task_id)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    task_dir = tasks_dir / task_id
    spec_path = task_dir / SPEC_FILE
    if spec_path.exists():
        raise click.UsageError(f"{spec_path} already exists; edit it or choose another id")
    (task_dir / "answers").mkdir(parents=True, exist_ok=True)
    spec_path.write_text(text, encoding="utf-8")
    click.echo(str(spec_path))
    click.echo(
        f"next: fill in the TODOs, add {task_dir / 'answers'}/*.md, then run "
        f"`judgegen generate {task_id}`",
        err=True,
    )
