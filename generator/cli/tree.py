"""`judgegen tree`: a judge's rubric skeleton (the tree of an all-pass run), as a reviewer reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import click

from generator.cli.common import (
    judge_file,
    load_task,
    location_options,
    pick_answer,
    run_review,
    sandbox_options,
)
from generator.cli.llm_clients import CommandClients
from generator.cli.llm_options import llm_options
from generator.review.rubric import outline, statistics, tree_of
from generator.review.runs import (
    extraction_backend,
    skeleton_summary,
)
from generator.stages.debug import SharedExtractor
from generator.stages.spec import SampleAnswer
from toolkit.llm.settings import LLMSettings

TREE_VERSION = 1


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
    clients: CommandClients,
) -> dict[str, Any]:
    backend, client = extraction_backend(settings)
    clients.add(client)
    try:
        summary = await skeleton_summary(
            source, task_id, answer, SharedExtractor(backend), sandbox=sandbox, timeout_s=timeout_s
        )
    finally:
        await clients.aclose()
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
    fmt: Literal["text", "markdown", "json"],
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
      judgegen tree rust_2024_edition --answer partial --format json --provider replay:recordings/rust_2024_edition

    \b
    Exit codes: 0 ok; 1 the judge failed on the answer; 2 usage or input error;
    3 infrastructure failure (LLM, replay miss, budget, sandbox).
    """
    loaded = load_task(task, tasks_dir)
    path = judge_file(judges, loaded.task_id)
    answer = pick_answer(loaded, answer_name)
    clients = CommandClients()
    skeleton = run_review(
        _skeleton(
            path.read_text("utf-8"),
            loaded.task_id,
            answer,
            llm_settings,
            not no_sandbox,
            timeout_s,
            clients,
        ),
        "tree",
        llm_settings.cache_mode,
        clients,
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
    click.echo(outline(one_line(skeleton), style="text" if fmt == "text" else "markdown"), nl=False)
