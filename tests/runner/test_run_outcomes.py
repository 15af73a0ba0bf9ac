"""What `judgegen run` reports and how it exits: CI-safe exit codes, typos, answers layout."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    result_files,
    run_args,
)


def run(work: Path, *extra: str, answers: Path | None = None):
    args = run_args(work, "--no-sandbox", *extra, answers=answers)
    return CliRunner().invoke(main, args, catch_exceptions=False)


# -- exit codes ------------------------------------------------------------------------------


def test_a_run_that_evaluates_nothing_exits_1_with_the_reason(work: Path) -> None:
    (work / "no_judges").mkdir()
    result = run(work, "--judges", str(work / "no_judges"), "--include-unreviewed")
    assert result.exit_code == 1
    assert "error: nothing was evaluated" in result.stderr
    assert "skipped judge louvre_hours: no judge at" in result.stderr


def test_unapproved_judges_make_the_run_exit_1_even_with_nothing_else_wrong(work: Path) -> None:
    result = run(work, "--json")
    assert result.exit_code == 1
    record = json.loads(result.stdout)
    assert record["failure"].startswith("3 judge(s) not run for approval reasons")
    assert record["evaluated"] == 0


def test_a_run_where_everything_is_up_to_date_exits_0(work: Path) -> None:
    assert run(work, "--include-unreviewed").exit_code == 0
    again = run(work, "--include-unreviewed")
    assert again.exit_code == 0 and "11 up to date" in again.stderr


def test_a_misspelled_task_id_is_a_usage_error_with_a_suggestion(work: Path) -> None:
    result = run(work, "--include-unreviewed", "--task", "louvre_hour")
    assert result.exit_code == 2
    assert "did you mean `louvre_hours`?" in result.stderr
    assert not (work / "results").exists()


def test_a_trajectory_run_missing_cited_pages_names_cache_pages_for_its_trajectories(
    work: Path,
) -> None:
    """The fix named must read the run's inputs: it named `--answers`, which reads .md files,
    and a webeval run has none."""
    run_dir = work / "webeval" / "fara-run"
    args = run_args(work, "--no-sandbox", "--include-unreviewed", pages=False)
    args[1:3] = ["--trajectories", str(run_dir)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert f"`judgegen cache-pages --trajectories {run_dir} --store pages`" in result.stderr


def test_a_trajectory_folder_nearly_naming_a_judge_names_the_judge_it_missed(work: Path) -> None:
    """Judges are found by the exact task id: `Louvre-Hours` is not `louvre_hours`. Reported
    as a task with no judge like any other (a webeval run may list hundreds), the near miss
    went unseen and the task dropped out of the metrics."""
    traj = work / "webeval" / "fara-run" / "traj"
    (traj / "louvre_hours").rename(traj / "Louvre-Hours")
    args = run_args(work, "--no-sandbox", "--include-unreviewed")
    args[1:3] = ["--trajectories", str(work / "webeval" / "fara-run")]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert (
        "skipped judge Louvre-Hours: no judge at "
        f"{(work / 'judges' / 'Louvre-Hours.py').resolve()}; louvre_hours.py differs from the "
        "task id 'Louvre-Hours' only in case, '-' or '_'"
    ) in result.stderr
    assert not (traj / "Louvre-Hours" / "scores").exists()


# -- answers layout ---------------------------------------------------------------------------


def test_answers_in_a_nested_folder_are_reported_and_fail_the_run(work: Path) -> None:
    nested = work / "answers" / "alpha" / "louvre_hours" / "retry"
    nested.mkdir()
    (nested / "answer_3.md").write_text("The Louvre opens 9:00-18:00.")
    (work / "answers" / "alpha" / "louvre_hours" / "notes.txt").write_text("scratch")
    result = run(work, "--include-unreviewed", "--json")
    assert result.exit_code == 1
    assert f"{nested / 'answer_3.md'}: in a nested folder retry/" in result.stderr
    assert "notes.txt: not a .md answer file" in result.stderr
    assert "1 answer file(s) under" in result.stderr
    record = json.loads(result.stdout)
    assert record["exit_code"] == 1
    assert record["unjudged_files"] == [str(nested / "answer_3.md")]


def make_task_folder(work: Path) -> Path:
    task = work / "tasks" / "louvre_hours"
    (task / "answers").mkdir(parents=True)
    (task / "task.yaml").write_text("id: louvre_hours\n")
    for answer in (work / "answers" / "alpha" / "louvre_hours").glob("*.md"):
        shutil.copy(answer, task / "answers" / answer.name)
    return task


@pytest.mark.parametrize("where", ["task folder", "its answers folder"])
def test_answers_pointing_at_a_task_runs_its_samples_and_says_so(work: Path, where: str) -> None:
    task = make_task_folder(work)
    target = task if where == "task folder" else task / "answers"
    result = run(work, "--include-unreviewed", answers=target)
    assert result.exit_code == 0, result.stderr
    assert "is a task folder, not an answers folder (<agent>/<task_id>/<answer>.md)" in (
        result.stderr
    )
    assert set(result_files(work / "results")) == {
        "samples/louvre_hours/answer_1.json",
        "samples/louvre_hours/answer_2.json",
    }


def test_a_folder_of_loose_answer_files_is_a_usage_error_naming_the_layout(work: Path) -> None:
    loose = work / "loose"
    loose.mkdir()
    (loose / "answer_1.md").write_text("An answer.")
    result = run(work, "--include-unreviewed", answers=loose)
    assert result.exit_code == 2
    assert "holds answer files directly (answer_1.md)" in result.stderr
    assert "<agent>/<task_id>/<answer>.md" in result.stderr


def test_the_end_of_the_run_says_where_results_went(work: Path) -> None:
    result = run(work, "--include-unreviewed")
    results = work / "results"
    assert f"results: {results / 'alpha'}/<task_id>/<answer>.json" in result.stderr
    assert f"metrics: {results / 'beta' / 'summary.json'}" in result.stderr


def test_long_answer_names_never_run_together_in_the_score_table(work: Path) -> None:
    for path in (work / "answers").rglob("answer_*.md"):
        path.rename(path.with_name(f"deep-research-agent-run-{path.stem[-1]}.md"))
    result = run(work, "--include-unreviewed")
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.strip().startswith("task"))
    assert re.split(r"\s{2,}", header.strip()) == [
        "task",
        "deep-research-agent-run-1",
        "deep-research-agent-run-2",
        "best",
        "avg",
    ]
