"""--min-kill-rate is a gate that never passes unmeasured: when mutation testing did not run,
the generation fails and says why, and nothing is published; asked together with a flag that
turns mutation testing off, it is refused before any LLM call. Mutations the judge failed on
count as not killed, so a few kills among crashes do not pass it."""

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
from tests.generator.test_examples import checkout
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


@pytest.mark.parametrize("flag", ["--no-mutation", "--no-acceptance"])
def test_min_kill_rate_with_mutation_testing_turned_off_is_a_usage_error_before_any_llm_call(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    river_task(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["generate", TASK, "--provider", PROVIDER, "--cache-mode", "off", "--no-commit"]
    result = CliRunner().invoke(main, [*args, flag, "--min-kill-rate", "0.5"])
    assert result.exit_code == 2, result.stderr
    assert "--min-kill-rate" in result.stderr and flag in result.stderr
    assert "LLM:" not in result.stderr  # the usage line of a generation that ran
    assert not (tmp_path / "generated_judges" / f"{TASK}.py").exists()


def test_min_kill_rate_counts_mutations_the_judge_crashed_on_as_not_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three kills and two crashes is a kill rate of 3/5, not 3/3 (`brittle_mutants` fixture)."""
    example = "rust_2024_edition"
    checkout(tmp_path, example)
    monkeypatch.chdir(tmp_path)
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert CliRunner().invoke(main, pages).exit_code == 0
    provider = "scripted:tests.generator.scripted_generation:brittle_mutants_policy"
    args = ["generate", example, "--provider", provider, "--pages", "pages", "--no-commit"]
    result = CliRunner().invoke(main, [*args, "--cache-mode", "off", "--min-kill-rate", "0.8"])
    assert result.exit_code == 1, result.stderr
    message = " ".join(result.stderr.split())
    assert (
        "mutation: failed: kill rate 0.60 (3 of 5 mutations of good; 2 errors count as not "
        "killed)" in message
    )
    assert "mutation kill rate 0.60 is below --min-kill-rate 0.80: good: drop_cited_url" in message
    assert "ValueError: the judge raised: the answer gives no announcement URL" in message
    assert "make the judge score such answers instead of failing on them" in message
    assert not (tmp_path / "reviews" / f"{example}.json").exists()
