"""The approval gate: a reviewer binds a judge's sha256; the runner runs only approved bytes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import copy_fixtures, result_files, run_answers
from tests.fixtures.runner.scripted import make_backend
from toolkit.errors import SpecError
from toolkit.runner.approval import approval_path, approval_problem, approve, load_approval
from toolkit.util.hashing import sha256_file


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def test_approve_writes_a_versioned_record_with_the_judge_sha256(work: Path) -> None:
    when = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    approve(
        "louvre_hours",
        reviewer="Ada",
        judges_dir=work / "judges",
        reviews_dir=work / "reviews",
        now=when,
    )
    data = json.loads((work / "reviews/louvre_hours.approval.json").read_text())
    assert data["version"] == 1 and data["reviewer"] == "Ada"
    assert data["judge_sha256"] == sha256_file(work / "judges/louvre_hours.py")
    assert load_approval(work / "reviews", "louvre_hours").date == when


def test_an_edited_judge_loses_its_approval(work: Path) -> None:
    judge = work / "judges/louvre_hours.py"
    approve(
        "louvre_hours", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews"
    )
    assert approval_problem(judge, work / "reviews", "louvre_hours") is None
    judge.write_text(judge.read_text() + "\n")
    assert "changed since Ada approved it" in approval_problem(
        judge, work / "reviews", "louvre_hours"
    )


def test_an_approval_a_newer_judgegen_wrote_approves_nothing(work: Path) -> None:
    """What a newer record adds (a scope, a revocation) this judgegen cannot read, so its
    judge is held back as not approved, with the file, the field and the fix named."""
    judge = work / "judges/louvre_hours.py"
    approve(
        "louvre_hours", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews"
    )
    path = work / "reviews/louvre_hours.approval.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "version": 9}))

    problem = approval_problem(judge, work / "reviews", "louvre_hours")

    assert problem is not None
    assert str(path) in problem and "version" in problem and "a newer judgegen" in problem
    assert "judgegen approve" in problem


def test_approving_a_missing_judge_is_a_spec_error(work: Path) -> None:
    with pytest.raises(SpecError, match="no such judge"):
        approve("nope", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews")


def test_run_executes_only_approved_judges_and_lists_the_rest(work: Path) -> None:
    approve(
        "python_match", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews"
    )
    report = run_answers(work, make_backend(), include_unreviewed=False)
    judged = {name.split("/")[1] for name in result_files(work / "results")}
    assert judged == {"python_match"}
    assert sorted(s.task_id for s in report.skipped_judges) == ["le_guin_novels", "louvre_hours"]
    assert "not reviewed" in report.skipped_judges[0].reason
    assert report.summaries["alpha"].skipped_judges


def test_include_unreviewed_runs_every_judge_and_marks_the_results(work: Path) -> None:
    report = run_answers(work, make_backend(), include_unreviewed=True)
    assert not report.skipped_judges
    assert all(r.unreviewed_judge for r in report.results)
    assert report.summaries["alpha"].include_unreviewed


def test_approve_cli_prints_the_sha_and_rejects_missing_judges(work: Path) -> None:
    args = ["--judges", str(work / "judges"), "--reviews", str(work / "reviews")]
    ok = CliRunner().invoke(main, ["approve", "python_match", "--reviewer", "Ada", *args])
    assert ok.exit_code == 0 and "sha256:" in ok.stdout
    missing = CliRunner().invoke(main, ["approve", "nope", "--reviewer", "Ada", *args])
    assert missing.exit_code == 2


def test_approving_later_clears_the_unreviewed_mark_without_rerunning(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend, include_unreviewed=True)
    calls = len(backend.calls)
    for task in ("louvre_hours", "le_guin_novels", "python_match"):
        approve(task, reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews")
    report = run_answers(work, backend, include_unreviewed=False)
    assert len(backend.calls) == calls
    assert report.summaries["alpha"].unreviewed_results == 0
    assert not any(r["unreviewed_judge"] for r in result_files(work / "results").values())


def test_withdrawing_an_approval_marks_the_reused_results_unreviewed(work: Path) -> None:
    """The same judge bytes run again with --include-unreviewed: the results are reused, but
    the summary must not claim they come from an approved judge."""
    backend = make_backend()
    for task in ("louvre_hours", "le_guin_novels", "python_match"):
        approve(task, reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews")
    approved = run_answers(work, backend, include_unreviewed=False)
    assert approved.summaries["alpha"].unreviewed_results == 0
    calls = len(backend.calls)
    approval_path(work / "reviews", "louvre_hours").unlink()

    report = run_answers(work, backend, include_unreviewed=True)

    assert len(backend.calls) == calls and report.evaluated == 0
    assert report.summaries["alpha"].unreviewed_results == 2
    marked = {name for name, r in result_files(work / "results").items() if r["unreviewed_judge"]}
    assert marked == {
        f"{agent}/louvre_hours/{answer}.json"
        for agent in ("alpha", "beta")
        for answer in ("answer_1", "answer_2")
    }


def test_an_approval_that_cannot_be_written_exits_3_naming_the_file_and_approves_nothing(
    work: Path,
) -> None:
    (work / "reviews").rmdir()
    (work / "reviews").write_text("a file where the reviews folder belongs\n")
    args = ["--judges", str(work / "judges"), "--reviews", str(work / "reviews")]
    done = CliRunner().invoke(main, ["approve", "python_match", "--reviewer", "Ada", *args])
    assert done.exit_code == 3, done.output
    assert f"approval {work / 'reviews' / 'python_match.approval.json'}" in done.stderr
    assert "--reviews DIR" in done.stderr and "Traceback" not in done.output
    assert (work / "reviews").is_file()
