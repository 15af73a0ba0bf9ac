"""Publishing through the CLI: outputs, progress, JSON, exit codes, and the provenance header."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.cli.rerun import rerun_note
from generator.stages.provenance import Provenance, strip_header, with_header
from tests.fixtures.cli_flags import flags_named, flags_of, stop_lines
from tests.generator.conftest import git
from tests.generator.scripted_generation import RIVER_FIXTURE
from toolkit.llm.budget import BUDGET_FIX
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.outage import OUTAGE_FIX

PROVIDER = "scripted:tests.generator.scripted_generation:river_policy"
DOWN = "scripted:tests.fixtures.runner.llm_policy:provider_down"
OUTAGE = "scripted:tests.fixtures.runner.llm_policy:outage"
PROVENANCE = Provenance(
    task_id="demo",
    spec_sha256="sha256:aa",
    prompts_sha256="sha256:bb",
    model="m-1",
    toolkit_version="0.1.0",
)


def invoke(cwd: Path, monkeypatch: pytest.MonkeyPatch, *extra: str):
    shutil.copytree(
        RIVER_FIXTURE, cwd / "tasks" / "river_lengths", ignore=shutil.ignore_patterns("replies")
    )
    monkeypatch.chdir(cwd)
    args = ["generate", "river_lengths", "--provider", PROVIDER, "--cache-mode", "off", *extra]
    return CliRunner().invoke(main, args)


def test_generate_commits_on_the_judge_branch_and_prints_json(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    published = payload["published"][0]
    assert published["task_id"] == "river_lengths" and payload["failed"] == []
    assert published["publish"]["commit"]["branch"] == "judge/river_lengths"
    assert (
        git(git_repo, "rev-parse", "judge/river_lengths")
        == published["publish"]["commit"]["commit"]
    )
    assert git(git_repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_progress_and_usage_go_to_stderr(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke(git_repo, monkeypatch)
    assert "[river_lengths] draft: ok" in result.stderr
    assert "[river_lengths] reflect: kept" in result.stderr
    assert "LLM: 8 calls, 0 cached" in result.stderr  # 5 generation + 3 extraction
    assert result.stdout.strip().startswith("generated_judges/river_lengths.py (commit ")


def test_outside_a_git_repository_commit_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    result = invoke(tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert "--no-commit" in result.stderr
    assert not (tmp_path / "generated_judges").exists()
    assert "draft" not in result.stderr  # refused before any LLM call


def test_no_commit_writes_files_and_makes_no_branch(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--no-commit")
    assert result.exit_code == 0, result.stderr
    assert (git_repo / "reviews" / "river_lengths.json").is_file()
    assert git(git_repo, "branch", "--list", "judge/*") == ""


def test_invalid_spec_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["generate", "no_such_task", "--no-commit"])
    assert result.exit_code == 2 and "judgegen new no_such_task" in result.stderr


def test_provenance_header_round_trips() -> None:
    source = with_header('"""Judge."""\n\nTASK_ID = "demo"\n', PROVENANCE)
    assert Provenance.from_header(source) == PROVENANCE
    assert strip_header(source) == '"""Judge."""\n\nTASK_ID = "demo"\n'


def test_republishing_replaces_the_header() -> None:
    newer = PROVENANCE.model_copy(update={"model": "m-2"})
    source = with_header(with_header("X = 1\n", PROVENANCE), newer)
    assert Provenance.from_header(source).model == "m-2"
    assert source.count("judgegen-provenance: model=") == 1


def test_trailers_carry_the_same_facts() -> None:
    trailers = dict(PROVENANCE.trailers())
    assert trailers["Judgegen-Spec-Sha256"] == "sha256:aa"
    assert trailers["Judgegen-Model"] == "m-1"


def test_budget_stop_is_an_infrastructure_exit_with_usage_shown(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--budget-usd", "0.01")
    assert result.exit_code == 3
    assert "budget of $0.01 reached" in result.stderr
    assert "LLM: " in result.stderr
    assert not (git_repo / "generated_judges" / "river_lengths.py").exists()


def test_a_budget_stop_says_what_a_rerun_of_generate_redoes_naming_only_its_flags(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--budget-usd", "0.01")
    assert result.exit_code == 3
    assert f"Fix: {BUDGET_FIX}" in result.stderr
    assert rerun_note("generate", CacheMode.OFF) in result.stderr.splitlines()
    assert flags_named(stop_lines(result.stderr)) <= flags_of("generate")


def test_a_provider_down_stop_says_what_a_rerun_of_generate_redoes_naming_only_its_flags(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--provider", DOWN)
    assert result.exit_code == 3
    assert "LLM call failed (connection" in result.stderr
    assert rerun_note("generate", CacheMode.OFF) in result.stderr.splitlines()
    assert flags_named(stop_lines(result.stderr)) <= flags_of("generate")


def test_an_outage_stop_of_generate_claims_no_kept_results(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch, "--provider", OUTAGE)
    assert result.exit_code == 3
    assert f"Fix: {OUTAGE_FIX}" in result.stderr
    assert "results are kept" not in result.stderr and "evaluations" not in result.stderr
    assert rerun_note("generate", CacheMode.OFF) in result.stderr.splitlines()


def test_judges_dir_outside_the_repository_is_a_usage_error(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere"
    result = invoke(git_repo, monkeypatch, "--judges", str(outside))
    assert result.exit_code == 2 and "outside the repository" in result.stderr
    assert not outside.exists() and not (git_repo / "reviews").exists()
