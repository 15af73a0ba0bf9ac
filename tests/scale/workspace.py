"""Workspaces for the scale-out tests: the runner fixtures, more agents, slow judges, and a way
to compare results that must be the same wherever they were computed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fixtures.runner.helpers import build_page_store, copy_fixtures

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from generator.cli import main; main()"]
POLICY = "scripted:tests.fixtures.runner.llm_policy:policy"

SLOW_JUDGE = '''"""A judge that takes a while (so a node can be killed while it runs)."""

import asyncio

from toolkit import Evaluator

TASK_ID = "slow_task"
TASK_DESCRIPTION = "Which Python version introduced the match statement?"


async def evaluate(ev: Evaluator) -> None:
    await asyncio.sleep({seconds})
    leaf = ev.add_leaf(id="version_correct", desc="The version is 3.10", critical=True)
    await ev.verify(claim="Python 3.10 introduced the match statement.", node=leaf)
'''


def make_workspace(work: Path, *, agents: int = 2) -> Path:
    """The runner fixtures (agents alpha, beta) plus `agents - 2` copies of them, and pages."""
    copy_fixtures(work)
    build_page_store(work / "pages")
    for index in range(2, agents):
        source = work / "answers" / ("alpha" if index % 2 else "beta")
        shutil.copytree(source, work / "answers" / f"agent_{index}")
    return work


def add_slow_answers(work: Path, count: int, seconds: float) -> None:
    """A slow judge and `count` answers for it (agent `slow`)."""
    (work / "judges" / "slow_task.py").write_text(SLOW_JUDGE.format(seconds=seconds))
    folder = work / "answers" / "slow" / "slow_task"
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"answer_{index}.md").write_text(f"Python 3.10 (answer {index}).\n")


def judgegen(
    work: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`judgegen ARGS` in `work`, with this checkout's code (and `env` added)."""
    return subprocess.run(
        [*CLI, *args],
        cwd=work,
        env={**cli_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def run_args(work: Path, results: str, *extra: str) -> list[str]:
    """`run` over the workspace's answers with the scripted LLM policy."""
    args = ["run", "--answers", "answers", "--judges", "judges", "--pages", "pages"]
    args += ["--results", results, "--include-unreviewed", "--provider", POLICY]
    return [*args, "--cache-mode", "off", *extra]


def result_files(results: Path) -> dict[str, Path]:
    """Every result file under `results` (not summaries), by agent/task/answer."""
    return {
        str(path.relative_to(results)): path
        for path in sorted(results.rglob("*.json"))
        if path.name != "summary.json"
    }


def comparable(path: Path) -> dict[str, Any]:
    """What must not depend on where an evaluation ran: status, score, tree, verdicts, usage.

    Left out: timings, and the order of the verification log (concurrent verifications
    finish in any order, locally too); the cost sum is rounded (float addition order).
    """
    result = json.loads(path.read_text())
    usage = dict(result["usage"])
    usage["cost_usd"] = round(usage["cost_usd"], 9)
    verifications = sorted(result["verifications"], key=lambda v: json.dumps(v, sort_keys=True))
    keep = ("status", "final_score", "partial_score", "errors", "eval_breakdown")
    keep += ("tree_statistics", "missing_sources", "clipped_pages", "fingerprint")
    keep += ("sandbox_guards",)
    return {
        **{key: result[key] for key in keep},
        "usage": usage,
        "verifications": verifications,
    }


def llm_line(stderr: str) -> str:
    """The end-of-run `LLM:` line."""
    return next(line for line in stderr.splitlines() if line.startswith("LLM:"))
