"""`regenerate` passes the same gates as `generate`: it refuses cited pages with intended scores
but no page store, scores the sample answers with --pages, mutation-tests the update, and
--min-kill-rate stops a weak update from being published (and is refused up front with a flag
that turns mutation testing off)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.generator.test_walkthroughs import clone

TASK = "rust_2024_edition"
EDIT = Path("tests/fixtures/generator/walkthrough") / TASK / "task.yaml"
PROVIDER = "scripted:tests.generator.scripted_generation:walkthrough_policy"


@pytest.fixture
def edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone after the walkthrough's rubric edit (release date critical, partial now 0)."""
    repo = clone(tmp_path)
    (repo / "tasks" / TASK / "task.yaml").write_text((repo / EDIT).read_text())
    monkeypatch.chdir(repo)
    monkeypatch.setenv("JUDGEGEN_CACHE_PATH", str(repo / "cache.db"))
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert CliRunner().invoke(main, pages).exit_code == 0
    return repo


def regenerate(*extra: str):
    args = ["regenerate", TASK, "--no-commit", "--cache-mode", "off", "--provider", PROVIDER]
    return CliRunner().invoke(main, [*args, *extra])


def unchanged(repo: Path) -> bool:
    """The reviewed judge and its approval are as committed."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "generated_judges", "reviews"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return status.stdout == ""


def test_regenerate_without_pages_for_cited_answers_is_a_usage_error(edited: Path) -> None:
    result = regenerate()
    assert result.exit_code == 2, result.stderr
    assert "--pages" in result.stderr and "--no-acceptance" in result.stderr
    assert unchanged(edited)


def test_regenerate_scores_the_samples_as_intended_and_mutation_tests_the_update(
    edited: Path,
) -> None:
    result = regenerate("--pages", "pages")
    assert result.exit_code == 0, result.stderr
    record = json.loads((edited / "reviews" / f"{TASK}.json").read_text())
    scores = {a["answer"]: (a["intended"], a["actual"]) for a in record["acceptance"]["answers"]}
    assert record["acceptance"]["ran"] is True
    assert scores == {"good": (1.0, 1.0), "partial": (0.0, 0.0), "wrong": (0.0, 0.0)}
    assert record["mutation"]["ran"] is True
    assert "kill rate 0.60 (3 of 5 mutations of good)" in result.stderr
    assert "rewrites keeping the meaning: 1 of 1 kept the score" in result.stderr


def test_regenerate_below_min_kill_rate_publishes_nothing(edited: Path) -> None:
    result = regenerate("--pages", "pages", "--min-kill-rate", "0.7")
    assert result.exit_code == 1, result.stderr
    assert "kill rate 0.60 is below --min-kill-rate 0.70" in result.stderr
    assert unchanged(edited)


@pytest.mark.parametrize("flag", ["--no-mutation", "--no-acceptance"])
def test_regenerate_with_min_kill_rate_and_mutation_testing_turned_off_is_a_usage_error(
    flag: str, edited: Path
) -> None:
    result = regenerate("--pages", "pages", flag, "--min-kill-rate", "0.5")
    assert result.exit_code == 2, result.stderr
    assert "--min-kill-rate" in result.stderr and flag in result.stderr
    assert "LLM:" not in result.stderr  # the usage line of a regeneration that ran
    assert unchanged(edited)
