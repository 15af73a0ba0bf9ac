"""`judgegen run` names a judge generated from another version of its task's spec: its scores
follow the rubric it was generated from, not the one the author edited since."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from generator.cli.fresh_stamp import STAMP_FILE
from tests.generator.test_examples import ROOT, checkout

TASK = "rust_2024_edition"
STALE = "was generated from another version of tasks/rust_2024_edition"
INTENT = "the intended scores of tasks/rust_2024_edition's sample answers changed"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_loaded_now: None) -> Path:
    """One example task checked out with its judge, approval, recordings and page store, and
    its sample answers as an agent's (a samples folder links its answers: never stamped).
    judgegen's code counts as loaded as the test starts, so its runs may be stamped."""
    checkout(tmp_path, TASK)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tmp_path / "tasks" / TASK / "answers", tmp_path / "answers" / "agent" / TASK)
    shutil.copy(ROOT / "reviews" / f"{TASK}.json", tmp_path / "reviews")
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert CliRunner().invoke(main, pages).exit_code == 0
    return tmp_path


def run_answers() -> Result:
    args = ["run", "--answers", "answers", "--pages", "pages"]
    args += ["--provider", f"replay:recordings/{TASK}", "--cache-mode", "off"]
    return CliRunner().invoke(main, args)


def edit_spec(project: Path) -> None:
    spec = project / "tasks" / TASK / "task.yaml"
    text = spec.read_text()
    spec.write_text(text.replace("Link the official announcement", "Cite the announcement"))


def label(project: Path, answer: str, root_score: float) -> None:
    """Label sample answer `answer` (written as a new sample answer if there is none)."""
    task = project / "tasks" / TASK
    sample = task / "answers" / f"{answer}.md"
    if not sample.exists():
        sample.write_text("Rust 1.85.0, released on February 20, 2025.\n")
    (task / "labels").mkdir(exist_ok=True)
    (task / "labels" / f"{answer}.yaml").write_text(f"root_score: {root_score}\n")


def test_run_warns_of_a_judge_generated_from_another_version_of_its_spec(project: Path) -> None:
    edit_spec(project)

    result = run_answers()

    assert result.exit_code == 0, result.stderr[-2000:]
    message = " ".join(result.stderr.split())
    assert STALE in message
    assert f"judgegen regenerate {TASK}" in message


def test_run_says_nothing_of_a_judge_generated_from_its_spec_as_it_is(project: Path) -> None:
    result = run_answers()

    assert result.exit_code == 0, result.stderr[-2000:]
    assert "was generated from another version" not in result.stderr


def test_a_run_with_a_stale_judge_leaves_no_stamp_to_replay_without_the_warning(
    project: Path,
) -> None:
    edit_spec(project)

    assert run_answers().exit_code == 0
    rerun = run_answers()

    assert not (project / "results" / STAMP_FILE).exists()
    assert STALE in " ".join(rerun.stderr.split())


def test_a_spec_edited_after_a_stamped_run_is_not_answered_from_the_stamp(
    project: Path,
) -> None:
    assert run_answers().exit_code == 0
    assert (project / "results" / STAMP_FILE).exists()
    edit_spec(project)

    rerun = run_answers()

    assert STALE in " ".join(rerun.stderr.split())


def test_run_warns_of_intended_scores_changed_since_the_judges_acceptance(
    project: Path,
) -> None:
    """Label files are outside the spec's hash: a sample answer labelled after acceptance was
    never compared with the judge's score of it."""
    label(project, "extra", 0.5)

    result = run_answers()

    message = " ".join(result.stderr.split())
    assert INTENT in message
    assert "extra: none → 0.5" in message
    assert f"judgegen regenerate {TASK} --force" in message


def test_labels_that_agree_with_the_acceptance_bring_no_warning(project: Path) -> None:
    label(project, "good", 1.0)

    result = run_answers()

    assert result.exit_code == 0, result.stderr[-2000:]
    assert INTENT not in " ".join(result.stderr.split())


def test_a_label_edited_after_a_stamped_run_is_not_answered_from_the_stamp(
    project: Path,
) -> None:
    assert run_answers().exit_code == 0
    assert (project / "results" / STAMP_FILE).exists()
    label(project, "extra", 0.25)

    rerun = run_answers()

    assert "extra: none → 0.25" in " ".join(rerun.stderr.split())
