"""A result file that cannot be written stops the run loudly (exit 3, the file and the fix
named): the evaluations in flight finish and keep their results, none starts after it, and
the calls the unwritten evaluation made still count in the run's usage."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import run_args
from toolkit.errors import ResultsError
from toolkit.runner.results import write_output

JUDGED = ("le_guin_novels", "louvre_hours")  # tasks whose answers all need their judge


def _block(work: Path, *parts: str) -> Path:
    """Put a file where the results folder `parts` (under results/) belongs."""
    path = work.joinpath("results", *parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not a folder\n")
    return path


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandbox"])
def test_a_result_that_cannot_be_written_stops_the_run_naming_the_file_and_the_fix(
    work: Path, sandbox: bool
) -> None:
    blocked = [_block(work, agent, task) for agent in ("alpha", "beta") for task in JUDGED]
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(work, "--include-unreviewed", "--json", "--jobs", "1", *mode)
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert record["not_started"] > 0  # the first evaluation's write stopped it
    first = record["stopped"].split("; then ")[0]
    assert first.startswith("ResultsError: result file ")
    assert any(f"{path} is a file where a folder belongs" in first for path in blocked)
    assert "--results DIR" in first
    assert record["usage"]["backend_calls"] > 0  # its calls were made, and are counted
    assert "Traceback" not in done.stderr


def test_a_result_decided_without_its_judge_that_cannot_be_written_starts_no_evaluation(
    work: Path,
) -> None:
    for agent in ("alpha", "beta"):
        _block(work, agent)
    args = run_args(work, "--include-unreviewed", "--json", "--no-sandbox")
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert record["evaluated"] == 0 and record["not_started"] > 0
    assert "is a file where a folder belongs" in record["stopped"]
    assert record["usage"]["llm_calls"] == 0


def test_every_answer_is_counted_once_when_a_decided_result_cannot_be_written(
    work: Path,
) -> None:
    """The answer whose decided result was not written is left for the next run, like those
    after it: counted as not started, not lost between the counts."""
    for agent in ("alpha", "beta"):
        _block(work, agent)
    answers = len(list((work / "answers").glob("*/*/*.md")))
    args = run_args(work, "--include-unreviewed", "--json", "--no-sandbox")
    record = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)
    counted = ("evaluated", "decided", "reused", "not_started", "skipped_answers")
    assert sum(record[name] for name in counted) == answers, {n: record[n] for n in counted}


def test_evaluations_whose_files_can_be_written_keep_their_results(work: Path) -> None:
    _block(work, "alpha", "louvre_hours")  # only this task's results are blocked
    args = run_args(work, "--include-unreviewed", "--json", "--no-sandbox", "--jobs", "4")
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert "alpha/louvre_hours is a file where a folder belongs" in record["stopped"]
    # alpha's le_guin_novels answers are judged alongside (--jobs 4), before the stop or while
    # it happens: both keep their results
    judged = sorted(p.name for p in (work / "results" / "alpha" / "le_guin_novels").glob("*.json"))
    assert judged == ["answer_1.json", "answer_2.json"]


def test_a_full_disk_is_named_as_the_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "agent" / "task" / "answer_1.json"
    with pytest.raises(ResultsError) as raised:
        write_output(target, "{}\n")
    assert str(target) in str(raised.value) and "No space left on device" in str(raised.value)
    assert raised.value.kind == "results"
    assert not target.exists() and not list(target.parent.iterdir())  # no temp file left


def test_a_file_given_as_the_results_folder_is_a_usage_error_naming_the_option(
    work: Path,
) -> None:
    (work / "results").write_text("not a folder\n")
    args = run_args(work, "--include-unreviewed", "--no-sandbox")
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 2, done.stderr
    assert "'--results'" in done.stderr and f"'{work / 'results'}' is a file" in done.stderr
    assert "infrastructure failure" not in done.stderr


def test_a_score_file_that_cannot_be_written_keeps_its_computed_result(work: Path) -> None:
    from tests.runner.test_score_writers import WEBEVAL

    blocked = work / WEBEVAL / "traj" / "louvre_hours" / "scores"
    shutil.rmtree(blocked, ignore_errors=True)
    blocked.write_text("not a folder\n")
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json", "--jobs", "1")
    args[1:3] = ["--trajectories", str(work / WEBEVAL)]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    stopped = json.loads(done.stdout)["stopped"]
    assert stopped.startswith("ResultsError: webeval score file ")
    assert f"{blocked} is a file where a folder belongs" in stopped
    assert "--results DIR" not in stopped
    (kept,) = (work / "results").glob("*/louvre_hours/*.json")
    assert json.loads(kept.read_text())["status"] == "complete"  # computed, then kept
    assert "naming no results folder" not in done.stderr
