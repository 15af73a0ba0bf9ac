"""--min-kill-rate is a gate that never passes unmeasured: when mutation testing did not run,
the generation fails and says why, and nothing is published."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.stages.pipeline import generate
from generator.stages.run import GenerationFailed, PipelineOptions
from generator.stages.spec import load_spec
from tests.generator.scripted_generation import RIVER_FIXTURE, FixturePolicy
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider

TASK = "river_lengths"
PROVIDER = "scripted:tests.generator.scripted_generation:river_policy"


def river_task(repo: Path) -> Path:
    """The river task: its answers cite pages, it has no intended scores and no page store,
    so acceptance and with it mutation testing are skipped."""
    task_dir = repo / "tasks" / TASK
    shutil.copytree(RIVER_FIXTURE, task_dir, ignore=shutil.ignore_patterns("replies"))
    return task_dir


async def test_min_kill_rate_fails_when_mutation_testing_did_not_run(tmp_path: Path) -> None:
    options = PipelineOptions(
        model="m",
        extract_model="e",
        repo=tmp_path,
        commit=False,
        isolation="in_process",
        min_kill_rate=0.5,
    )
    client = LLMClient(ScriptedProvider(FixturePolicy(RIVER_FIXTURE)), model="m")
    with pytest.raises(GenerationFailed) as info:
        await generate(load_spec(river_task(tmp_path)), client, None, options)
    message = str(info.value)
    assert "--min-kill-rate 0.50 could not be checked" in message
    assert "acceptance skipped (no page store for the cited pages (--pages))" in message
    mutation = [s for s in info.value.stages if s.stage == "mutation"]
    assert mutation and mutation[-1].status == "failed"
    assert not (tmp_path / "generated_judges" / f"{TASK}.py").exists()


def test_min_kill_rate_with_no_mutation_exits_1_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    river_task(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["generate", TASK, "--provider", PROVIDER, "--cache-mode", "off", "--no-commit"]
    result = CliRunner().invoke(main, [*args, "--no-mutation", "--min-kill-rate", "0.5"])
    assert result.exit_code == 1, result.stderr
    assert "could not be checked" in result.stderr and "--no-mutation" in result.stderr
    assert not (tmp_path / "generated_judges" / f"{TASK}.py").exists()
