"""An agent's summary counts only results that still stand for an answer and a judge of the
run that wrote it; whatever else lies in its folder is listed, never counted unseen."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import run_args


def run(work: Path, *extra: str, unreviewed: bool = True):
    flags = ["--include-unreviewed"] if unreviewed else []
    args = run_args(work, *flags, "--no-sandbox", "--json", *extra)
    return CliRunner().invoke(main, args, catch_exceptions=False)


def summary(work: Path, agent: str = "alpha") -> dict:
    return json.loads((work / "results" / agent / "summary.json").read_text())


def left_out(work: Path, agent: str = "alpha") -> dict[str, str]:
    return {
        f"{r['task_id']}/{r['answer_name']}": r["reason"]
        for r in summary(work, agent)["not_counted"]
    }


def test_results_of_removed_answers_leave_the_metrics_and_are_named(work: Path) -> None:
    assert run(work).exit_code == 0
    assert summary(work)["runs"] == ["answer_1", "answer_2"]
    for answer in (work / "answers" / "alpha").glob("*/answer_2.md"):
        answer.unlink()

    again = run(work)

    assert again.exit_code == 0, again.stderr
    after = summary(work)
    assert after["runs"] == ["answer_1"] and after["counts"]["complete"] == 3
    gone = {f"{task}/answer_2" for task in ("le_guin_novels", "louvre_hours", "python_match")}
    assert set(left_out(work)) == gone
    assert all("its answer is gone" in reason for reason in left_out(work).values())
    assert "3 result file(s)" in again.stderr and "left out of its metrics" in again.stderr
    assert json.loads(again.stdout)["summaries"]["alpha"]["not_counted"]
    assert summary(work, "beta")["not_counted"] == []


def test_results_a_held_back_judge_computed_earlier_are_not_counted(work: Path) -> None:
    """Without --include-unreviewed the unapproved judges are held back: what they computed
    in an earlier run (perhaps from other code) must not stand in the metrics."""
    assert run(work).exit_code == 0

    held = run(work, unreviewed=False)

    assert held.exit_code == 1
    after = summary(work)
    assert after["counts"] == {"complete": 0, "incomplete": 0, "excluded": 0}
    assert len(left_out(work)) == 6
    assert all(reason.startswith("its judge did not run now") for reason in left_out(work).values())


def test_tasks_outside_a_task_run_are_counted_and_named_as_unchecked(work: Path) -> None:
    assert run(work).exit_code == 0

    one = run(work, "--task", "louvre_hours")

    assert one.exit_code == 0
    assert summary(work)["counts"]["complete"] == 6
    assert summary(work)["unchecked_tasks"] == ["le_guin_novels", "python_match"]
    assert "did not check (le_guin_novels, python_match)" in one.stderr
    assert summary(work)["not_counted"] == []


def test_an_unreadable_result_file_is_named_not_silently_dropped(work: Path) -> None:
    assert run(work).exit_code == 0
    (work / "results" / "alpha" / "python_match" / "answer_2.json").write_text("{truncated")

    one = run(work, "--task", "louvre_hours")

    assert one.exit_code == 0
    assert summary(work)["counts"]["complete"] == 5
    reason = left_out(work)["python_match/answer_2"]
    assert reason.startswith("the result file cannot be read")


def test_report_leaves_out_what_the_last_run_left_out(work: Path) -> None:
    assert run(work).exit_code == 0
    for answer in (work / "answers" / "alpha").glob("*/answer_2.md"):
        answer.unlink()
    assert run(work).exit_code == 0

    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha"), "--json"])

    assert shown.exit_code == 0, shown.output
    recomputed = json.loads(shown.stdout)
    assert recomputed["runs"] == ["answer_1"]
    assert recomputed["not_counted"] == summary(work)["not_counted"]
