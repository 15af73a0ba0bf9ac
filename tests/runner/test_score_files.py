"""A trajectory's webeval score file never disagrees with its stored result: whatever write
fails or is interrupted, the next run leaves the score file the stored result gives."""

from __future__ import annotations

import asyncio
import json
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    DictPages,
    build_page_store,
    copy_fixtures,
    options,
    result_files,
    run_args,
    run_trajectories,
)
from tests.fixtures.runner.scripted import broke_factory, make_backend
from toolkit.errors import ResultsError
from toolkit.runner import results
from toolkit.runner.freshness import fresh_run
from toolkit.runner.inputs import discover_trajectories
from toolkit.runner.results import read_result, score_file_path, write_score_file
from toolkit.runner.scheduler import run_evaluations

TRAJ = Path("webeval/fara-run/traj")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def score_file(work: Path, task: str) -> Path:
    return score_file_path(work / TRAJ / task, task)


def stored_score(work: Path, task: str) -> float | None:
    return result_files(work / "results")[f"fara-run/{task}/final_answer.json"]["final_score"]


def change_louvre_answer_to_a_wrong_one(work: Path) -> None:
    """Edit the louvre_hours trajectory so its judge scores it 0 instead of 1."""
    path = work / TRAJ / "louvre_hours" / "louvre_hours_final_answer.json"
    record = json.loads(path.read_text())
    record["final_answer"] = record["final_answer"].replace("21:00", "18:00")
    path.write_text(json.dumps(record))


def test_a_score_file_that_could_not_be_written_is_written_by_the_next_run(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_trajectories(work, make_backend())
    assert json.loads(score_file(work, "louvre_hours").read_text())["score"] == 1.0
    change_louvre_answer_to_a_wrong_one(work)

    def full_disk(traj_dir: Path, judge_name: str, result: object, **where: object) -> Path:
        raise ResultsError(score_file_path(traj_dir, judge_name), "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(results, "write_score_file", full_disk)
        failed = run_trajectories(work, make_backend())
    assert failed.exit_code == 3 and stored_score(work, "louvre_hours") == 0.0
    assert not score_file(work, "louvre_hours").exists()  # never the old result's 1.0

    again = run_trajectories(work, make_backend())

    assert (again.exit_code, again.evaluated) == (0, 0)
    assert json.loads(score_file(work, "louvre_hours").read_text())["score"] == 0.0


def test_a_score_file_left_by_an_earlier_result_is_rewritten_from_the_stored_one(
    work: Path,
) -> None:
    """A run killed between writing a result and its score file leaves the old score file."""
    run_trajectories(work, make_backend())
    earlier = score_file(work, "louvre_hours").read_bytes()
    change_louvre_answer_to_a_wrong_one(work)
    run_trajectories(work, make_backend())
    score_file(work, "louvre_hours").write_bytes(earlier)

    again = run_trajectories(work, make_backend())

    assert (again.exit_code, again.evaluated) == (0, 0)
    rewritten = json.loads(score_file(work, "louvre_hours").read_text())
    assert rewritten["score"] == stored_score(work, "louvre_hours") == 0.0
    assert json.loads(rewritten["gpt_response_text"])["final_score"] == 0.0


def test_a_score_file_beside_a_result_that_has_no_score_is_removed(work: Path) -> None:
    run_trajectories(work, make_backend())
    assert not score_file(work, "eiffel_height").exists()  # aborted: excluded
    stray = score_file(work, "louvre_hours").read_bytes()
    score_file(work, "eiffel_height").parent.mkdir()
    score_file(work, "eiffel_height").write_bytes(stray)

    again = run_trajectories(work, make_backend())

    assert (again.exit_code, again.evaluated) == (0, 0)
    assert not score_file(work, "eiffel_height").exists()


def test_score_files_as_a_run_writes_them_agree_with_their_results(work: Path) -> None:
    """Nothing to repair after a run: a rerun is answered from the results folder alone."""
    run_trajectories(work, make_backend())
    before = {p: p.read_bytes() for p in (work / TRAJ).glob("*/scores/*.json")}
    assert len(before) == 3

    report = asyncio.run(
        fresh_run(
            discover_trajectories(work / TRAJ.parent),
            options=options(work),
            backend=make_backend(),
            pages=DictPages(),
        )
    )

    assert report is not None and report.reused == 4
    assert {p: p.read_bytes() for p in before} == before


def test_a_run_that_stops_before_redoing_a_trajectory_withdraws_its_outdated_score_file(
    work: Path,
) -> None:
    run_trajectories(work, make_backend())
    tasks = [p.name for p in (work / TRAJ).iterdir() if score_file(work, p.name).exists()]
    assert len(tasks) >= 2
    for task in tasks:  # every judge edited: every stored result is outdated
        judge = work / "judges" / f"{task}.py"
        judge.write_text(judge.read_text() + "\n# edited\n")

    stopped = run_trajectories(work, broke_factory(), jobs=1)

    assert stopped.stopped and stopped.not_started > 0
    outdated = {ref.task_id for ref in stopped.outdated}
    assert outdated and all(not score_file(work, task).exists() for task in outdated)


def test_a_stored_complete_result_without_a_score_is_redone_not_scored_0(work: Path) -> None:
    """Such a result (recorded by an earlier version from a judge that returned no score)
    has no score to give webeval: it is redone, never written as a score of 0."""
    run_trajectories(work, make_backend())
    path = work / "results/fara-run/louvre_hours/final_answer.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "final_score": None}))
    score_file(work, "louvre_hours").unlink()

    again = run_trajectories(work, make_backend())

    assert (again.exit_code, again.evaluated) == (0, 1)
    assert stored_score(work, "louvre_hours") == 1.0
    assert json.loads(score_file(work, "louvre_hours").read_text())["score"] == 1.0


def test_a_score_file_is_never_written_for_a_result_without_a_score(work: Path) -> None:
    run_trajectories(work, make_backend())
    result = read_result(work / "results/fara-run/louvre_hours/final_answer.json")
    assert result is not None

    with pytest.raises(ValueError, match="no final score"):
        write_score_file(
            work / TRAJ / "louvre_hours",
            "louvre_hours",
            result.model_copy(update={"final_score": None}),
            writer=work / "results",
        )


def test_a_judge_held_back_for_approval_withdraws_its_score_files(work: Path) -> None:
    """webeval would read an older judge's score files as current; the results stay, listed
    as not counted."""
    run_trajectories(work, make_backend())
    assert {p.parent.parent.name for p in (work / TRAJ).glob("*/scores/*.json")}

    held = run_trajectories(work, make_backend(), include_unreviewed=False)

    assert held.skipped_answers == 4
    assert list((work / TRAJ).glob("*/scores/*.json")) == []
    assert stored_score(work, "louvre_hours") == 1.0
    assert len(held.summaries["fara-run"].not_counted) == 4


def test_a_deleted_judge_withdraws_its_score_file_when_the_rest_is_up_to_date(
    work: Path,
) -> None:
    """The rerun has nothing to redo (answered from the results folder), yet the deleted
    judge's score file must go."""
    build_page_store(work / "pages")
    args = run_args(work, "--include-unreviewed", "--no-sandbox")
    args[1:3] = ["--trajectories", str(work / TRAJ.parent)]
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    (work / "judges" / "python_match.py").unlink()

    again = CliRunner().invoke(main, args, catch_exceptions=False)

    assert "0 evaluated" in again.stderr
    assert not score_file(work, "python_match").exists()
    assert json.loads(score_file(work, "louvre_hours").read_text())["score"] == 1.0


def test_a_trajectory_no_longer_among_the_inputs_loses_its_files_under_every_score_name(
    work: Path,
) -> None:
    """Its result stays (not counted); a file the results folder wrote under an earlier name
    would still give webeval its score."""
    run_trajectories(work, make_backend())
    earlier = score_file(work, "le_guin_novels")
    assert earlier.exists()
    inputs = [i for i in discover_trajectories(work / TRAJ.parent) if i.task_id != "le_guin_novels"]

    asyncio.run(
        run_evaluations(
            inputs,
            backend=make_backend(),
            options=options(work, score_name="o3"),
            isolation="in_process",
            pages=DictPages(),
        )
    )

    assert not earlier.exists()
    assert score_file_path(work / TRAJ / "louvre_hours", "louvre_hours", "o3").exists()


def test_a_trajectory_folder_spelled_nfd_gets_its_score_file_in_that_spelling(work: Path) -> None:
    """Results use the NFC spelling of a name, but a score file lives in the trajectory's own
    folder: a webeval reader builds its name from the folder it lists, so it keeps that
    folder's spelling (and a rerun finds and keeps it)."""
    nfc, nfd = (unicodedata.normalize(form, "louvre_café") for form in ("NFC", "NFD"))
    judge = (work / "judges" / "louvre_hours.py").read_text()
    (work / "judges" / f"{nfc}.py").write_text(judge.replace('"louvre_hours"', repr(nfc)))
    (work / TRAJ / "louvre_hours").rename(work / TRAJ / nfd)
    run_trajectories(work, make_backend())
    names = {path.name for path in (work / TRAJ / nfd / "scores").iterdir()}
    assert names == {f"judgegen_{nfd}.json"}
    assert (
        json.loads((work / TRAJ / nfd / "scores" / f"judgegen_{nfd}.json").read_text())["score"]
        == 1.0
    )
    run_trajectories(work, make_backend())
    assert {path.name for path in (work / TRAJ / nfd / "scores").iterdir()} == names
