"""Regenerating an unchanged spec leaves the reviewed files byte-identical (usage aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.generator.conftest import git, git_repo  # noqa: F401  (fixture)
from tests.generator.scripted_generation import RIVER_FIXTURE

PROVIDER = "scripted:tests.generator.scripted_generation:river_policy"
TASK = "river_lengths"
OUTPUTS = (f"generated_judges/{TASK}.py", f"reviews/{TASK}.md", f"reviews/{TASK}.json")


def generate(repo: Path, *extra: str):
    args = ["generate", TASK, "--provider", PROVIDER, "--cache-mode", "rw", "--json", *extra]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["published"][0]["publish"], result.stderr


@pytest.fixture
def repo(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    shutil.copytree(
        RIVER_FIXTURE, git_repo / "tasks" / TASK, ignore=shutil.ignore_patterns("replies")
    )
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("JUDGEGEN_CACHE_PATH", str(git_repo.parent / "llm-cache.sqlite"))
    monkeypatch.setenv("JUDGEGEN_LEDGER_PATH", str(git_repo.parent / "ledger.jsonl"))
    return git_repo


def snapshot(repo: Path) -> dict[str, bytes]:
    return {name: (repo / name).read_bytes() for name in OUTPUTS}


def test_regenerating_from_the_cache_keeps_reviewed_files_and_makes_no_commit(
    repo: Path,
) -> None:
    first, first_log = generate(repo)
    before = snapshot(repo)
    second, second_log = generate(repo)
    assert "LLM: 8 calls, 0 cached" in first_log
    assert "LLM: 8 calls, 8 cached" in second_log  # the usage table would differ
    assert "review unchanged but for LLM usage; kept as reviewed" in second_log
    assert snapshot(repo) == before
    assert second["commit"]["changed"] is False
    assert second["commit"]["commit"] == first["commit"]["commit"]
    assert git(repo, "rev-list", "--count", f"judge/{TASK}") == "2"  # initial + one publish


def test_a_changed_spec_still_rewrites_the_review(repo: Path) -> None:
    generate(repo, "--no-commit")
    before = snapshot(repo)
    spec = repo / "tasks" / TASK / "task.yaml"
    spec.write_text(spec.read_text() + "\nnotes: Lengths in kilometres.\n")
    generate(repo, "--no-commit")
    after = snapshot(repo)
    assert after[f"reviews/{TASK}.json"] != before[f"reviews/{TASK}.json"]
