"""`judgegen tree`: a judge's rubric skeleton (the tree of an all-pass run), as a reviewer reads it.

Also home of the small pieces the review commands (tree, diff, validate, mutate) share: the
sandbox options, locating a task's spec, judge and sample answer, and turning failures into
exit codes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from generator.cli.llm_options import llm_options
from generator.debug import SharedExtractor
from generator.review_runs import (
    DEFAULT_TIMEOUT_S,
    JudgeRunError,
    extraction_backend,
    skeleton_summary,
)
from generator.rubric import outline, statistics, tree_of
from generator.spec import LoadedSpec, SampleAnswer, load_spec
from toolkit.errors import InfraError, SpecError
from toolkit.llm.settings import LLMSettings

TREE_VERSION = 1
T = TypeVar("T")


def sandbox_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --no-sandbox and --timeout (seconds per judge run)."""
    command = click.option(
        "--timeout",
        "timeout_s",
        default=DEFAULT_TIMEOUT_S,
        show_default=True,
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds per judge run.",
    )(command)
    return click.option(
        "--no-sandbox", is_flag=True, help="Run the judge in this process (no isolation)."
    )(command)


def location_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --judges DIR and --tasks DIR."""
    command = click.option(
        "--tasks",
        "tasks_dir",
        default="tasks",
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
    )(command)
    return click.option(
        "--judges",
        default="generated_judges",
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
    )(command)


def load_task(task: str, tasks_dir: Path) -> LoadedSpec:
    """The task's spec and sample answers; an invalid or missing spec is a usage error."""
    try:
        return load_spec(task, tasks_dir)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def judge_file(judges: Path, task_id: str) -> Path:
    """`judges/<task_id>.py`, which must exist."""
    path = judges / f"{task_id}.py"
    if not path.is_file():
        raise click.UsageError(f"no judge {path} (generate it, or pass --judges DIR)")
    return path


def pick_answer(loaded: LoadedSpec, name: str | None) -> SampleAnswer:
    """The sample answer called `name` (with or without its suffix), or the first one."""
    if name is None:
        return loaded.answers[0]
    for answer in loaded.answers:
        if name in (answer.name, Path(answer.path).name):
            return answer
    known = ", ".join(a.name for a in loaded.answers)
    raise click.UsageError(f"task {loaded.task_id} has no sample answer '{name}' (has: {known})")


def run_review(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; infrastructure failures exit 3, a failing judge exits 1."""
    try:
        return asyncio.run(work)
    except InfraError as exc:
        click.echo(f"error: infrastructure failure: {exc}", err=True)
        sys.exit(3)
    except JudgeRunError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def one_line(tree: dict[str, Any]) -> dict[str, Any]:
    """The tree with every description on one line (root descriptions are often paragraphs)."""
    children = [one_line(child) for child in tree.get("children") or []]
    return {**tree, "desc": " ".join(str(tree.get("desc", "")).split()), "children": children}


async def _skeleton(
    source: str,
    task_id: str,
    answer: SampleAnswer,
    settings: LLMSettings,
    sandbox: bool,
    timeout_s: float,
) -> dict[str, Any]:
    backend, client = extraction_backend(settings)
    try:
        summary = await skeleton_summary(
            source, task_id, answer, SharedExtractor(backend), sandbox=sandbox, timeout_s=timeout_s
        )
    finally:
        click.echo(client.summary_line(), err=True)
        await client.aclose()
    return tree_of(summary)


@click.command()
@click.argument("task")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
@click.option("--answer", "answer_name", help="Sample answer to run on (default: the first).")
@location_options
@sandbox_options
@llm_options
def tree(
    task: str,
    fmt: str,
    answer_name: str | None,
    judges: Path,
    tasks_dir: Path,
    no_sandbox: bool,
    timeout_s: float,
    llm_settings: LLMSettings,
) -> None:
    """Print the rubric skeleton of TASK's judge: every node of an all-pass run.

    Verdicts are stubbed to pass so every node the judge can build shows up; extraction is
    real, through the configured LLM client (normally the response cache, or
    --provider replay:DIR). Shows ids, descriptions, critical and sequential marks, node
    counts and depth. JSON: {version, task_id, answer, tree, statistics}.

    \b
    Example:
      judgegen tree nobel_physics_2023 --provider replay:recordings/nobel_physics_2023
      judgegen tree nobel_physics_2023 --answer partial --format json

    \b
    Exit codes: 0 ok; 1 the judge failed on the answer; 2 usage or input error;
    3 infrastructure failure (LLM, replay miss, budget, sandbox).
    """
    loaded = load_task(task, tasks_dir)
    path = judge_file(judges, loaded.task_id)
    answer = pick_answer(loaded, answer_name)
    skeleton = run_review(
        _skeleton(
            path.read_text("utf-8"),
            loaded.task_id,
            answer,
            llm_settings,
            not no_sandbox,
            timeout_s,
        )
    )
    if fmt == "json":
        payload = {
            "version": TREE_VERSION,
            "task_id": loaded.task_id,
            "answer": answer.name,
            "tree": skeleton,
            "statistics": statistics(skeleton),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    style = "markdown" if fmt == "markdown" else "text"
    click.echo(outline(one_line(skeleton), style=style), nl=False)


def backend_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --backend package.module:factory and --pages DIR (offline page store)."""
    command = click.option(
        "--pages",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Offline page store (from `judgegen cache-pages`).",
    )(command)
    return click.option(
        "--backend",
        "backend_spec",
        help="package.module:factory → a JudgingBackend (default: the LLM backend).",
    )(command)


def open_backend(backend_spec: str | None, settings: LLMSettings) -> tuple[Any, Any]:
    """(judging backend, LLM client to close and summarise, or None for a --backend)."""
    if backend_spec:
        from generator.cli.run import load_backend_factory

        return load_backend_factory(backend_spec), None
    try:
        return extraction_backend(settings)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
