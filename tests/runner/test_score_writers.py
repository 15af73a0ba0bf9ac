"""One results folder per set of score files: each webeval score file names the results folder
that wrote it, and a run whose score files another results folder (still there) wrote is
refused before judging, rather than silently overwrite that folder's scores (two judge models
over the same trajectories). `--score-name` puts two configurations' files side by side; files
whose writer is gone, or that name none, are taken over with a note."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from tests.fixtures.runner.helpers import run_args, run_trajectories
from tests.fixtures.runner.scripted import make_backend
from tests.runner.test_results import result
from tests.runner.test_score_files import change_louvre_answer_to_a_wrong_one
from toolkit.errors import ScoreFilesTaken
from toolkit.runner.results import (
    WRITER_KEY,
    ScoreFile,
    score_file_agrees,
    score_file_writer,
    write_score_file,
)
from toolkit.runner.score_names import SCORE_NAMES_FILE

WEBEVAL = Path("webeval/fara-run")
SCORED = ("le_guin_novels", "louvre_hours", "python_match")
"""The fixture trajectories that get a score file (eiffel_height is aborted)."""


def run(work: Path, results: str, *args: str) -> Result:
    """`judgegen run` over the fixture trajectories into `work/results`."""
    flags = run_args(work, "--include-unreviewed", "--no-sandbox", "--json", *args)
    flags[1:3] = ["--trajectories", str(work / WEBEVAL)]
    flags[flags.index("--results") + 1] = str(work / results)
    return CliRunner().invoke(main, flags, catch_exceptions=False)


def score_files(work: Path) -> dict[str, bytes]:
    """Every score file under the trajectories, by path relative to traj/."""
    traj = work / WEBEVAL / "traj"
    return {p.relative_to(traj).as_posix(): p.read_bytes() for p in traj.glob("*/scores/*")}


def writers(work: Path, name: str = "judgegen") -> dict[str, str | None]:
    """The results folder each scored trajectory's score file `name` names, by task."""
    traj = work / WEBEVAL / "traj"
    return {
        task: json.loads(
            json.loads((traj / task / "scores" / f"{name}_{task}.json").read_text())[
                "gpt_response_text"
            ]
        ).get(WRITER_KEY)
        for task in SCORED
    }


def naming(work: Path, results: str) -> dict[str, float]:
    """The score of every score file under the trajectories that names the results folder
    `work/results`, by path relative to traj/."""
    folder = str((work / results).resolve())
    traj = work / WEBEVAL / "traj"
    return {
        p.relative_to(traj).as_posix(): json.loads(p.read_text())["score"]
        for p in sorted(traj.glob("*/scores/*.json"))
        if score_file_writer(p) == folder
    }


def unnamed(work: Path) -> None:
    """Rewrite every score file as judgegen wrote them before naming their writer."""
    for path in (work / WEBEVAL / "traj").glob("*/scores/*.json"):
        found = ScoreFile.model_validate_json(path.read_bytes())
        payload = json.loads(found.gpt_response_text)
        del payload[WRITER_KEY]
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        path.write_text(ScoreFile(score=found.score, gpt_response_text=text).model_dump_json())


def test_a_run_into_another_results_folder_is_refused_before_judging(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    before = score_files(work)
    assert len(before) == len(SCORED)

    refused = run(work, "results_o3")

    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert str(work / WEBEVAL) in message
    assert str((work / "results_o4").resolve()) in message
    assert str((work / "results_o3").resolve()) in message
    assert "--score-name NAME" in message
    assert score_files(work) == before
    assert not (work / "results_o3").exists()


def test_score_name_keeps_two_results_folders_score_files_side_by_side(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    first = score_files(work)

    other = run(work, "results_o3", "--score-name", "judgegen_o3")
    again = run(work, "results_o4")

    assert other.exit_code == 0, other.stderr
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["evaluated"] == 0
    both = score_files(work)
    assert {k: v for k, v in both.items() if k in first} == first  # never overwritten
    assert sorted(set(both) - set(first)) == [
        f"{task}/scores/judgegen_o3_{task}.json" for task in SCORED
    ]
    resolved = str((work / "results_o3").resolve())
    assert writers(work, "judgegen_o3") == dict.fromkeys(SCORED, resolved)
    assert "score files: <traj dir>/scores/judgegen_o3_<task_id>.json" in other.stderr


@pytest.mark.parametrize("name", ["../up", "a/b", "", "-flag", "x" * 65, "sp ace"])
def test_a_score_name_that_is_no_plain_file_name_fragment_is_a_usage_error(
    work: Path, name: str
) -> None:
    refused = run(work, "results", "--score-name", name)

    assert refused.exit_code == 2
    assert "--score-name" in refused.stderr and "file-name fragment" in refused.stderr
    assert score_files(work) == {}


def test_score_files_naming_no_results_folder_are_taken_over_with_one_note(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    unnamed(work)

    taken = run(work, "results_o3")

    assert taken.exit_code == 0, taken.stderr
    assert taken.stderr.count("takes over") == 1
    note = " ".join(taken.stderr.split())
    assert str(work / WEBEVAL) in note and "3 naming no results folder" in note
    assert writers(work) == dict.fromkeys(SCORED, str((work / "results_o3").resolve()))


def test_a_rerun_rewrites_its_own_score_files_written_before_the_writer_was_named(
    work: Path,
) -> None:
    """Upgrading judgegen: nothing to judge again, but the score files must name their writer."""
    assert run(work, "results").exit_code == 0
    unnamed(work)

    rerun = run(work, "results")

    assert rerun.exit_code == 0, rerun.stderr
    assert json.loads(rerun.stdout)["evaluated"] == 0
    assert rerun.stderr.count("takes over") == 1
    assert writers(work) == dict.fromkeys(SCORED, str((work / "results").resolve()))


def test_score_files_of_a_results_folder_no_longer_there_are_taken_over(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    shutil.rmtree(work / "results_o4")

    taken = run(work, "results_o3")

    assert taken.exit_code == 0, taken.stderr
    note = " ".join(taken.stderr.split())
    assert taken.stderr.count("takes over") == 1
    assert f"those of {(work / 'results_o4').resolve()}, no longer there" in note
    assert writers(work) == dict.fromkeys(SCORED, str((work / "results_o3").resolve()))
    rerun = run(work, "results_o3")
    assert "takes over" not in rerun.stderr


def test_a_held_back_judge_withdraws_only_the_score_files_of_its_own_name(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    first = score_files(work)
    assert run(work, "results_o3", "--score-name", "o3").exit_code == 0
    flags = run_args(work, "--no-sandbox", "--score-name", "o3")  # no --include-unreviewed
    flags[1:3] = ["--trajectories", str(work / WEBEVAL)]
    flags[flags.index("--results") + 1] = str(work / "results_o3")

    held = CliRunner().invoke(main, flags, catch_exceptions=False)

    assert held.exit_code == 1
    assert score_files(work) == first


@pytest.mark.parametrize(
    "writer",
    ["/srv/results", '/srv/ré"sults\\o3', "/srv/" + "deep/" * 300 + "results"],
    ids=["plain", "escaped", "longer-than-the-head"],
)
def test_the_payload_names_its_results_folder_first_and_the_result_after(
    tmp_path: Path, writer: str
) -> None:
    path = write_score_file(tmp_path, "t", result(), writer=Path(writer))

    payload = json.loads(json.loads(path.read_text())["gpt_response_text"])

    assert next(iter(payload)) == WRITER_KEY and payload.pop(WRITER_KEY) == writer
    assert payload == result().model_dump(mode="json")
    assert score_file_writer(path) == writer


def test_an_answer_cannot_make_a_score_file_name_another_writer(tmp_path: Path) -> None:
    """What a judge extracts from an answer lands in the payload too (`eval_breakdown`,
    sorted before the writer's key would be): it never passes for the writer."""
    forged = f'{{"{WRITER_KEY}": "/srv/other", '
    info = [{"extracted": {WRITER_KEY: "/srv/other", "text": forged}}]
    made_up = result(eval_breakdown=[{"info": info}], notes=[forged * 50])

    path = write_score_file(tmp_path, "t", made_up, writer=Path("/srv/mine"))

    assert score_file_writer(path) == "/srv/mine"


def test_a_score_file_agrees_only_when_written_by_the_same_results_folder(
    tmp_path: Path,
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write_score_file(tmp_path, "t", result(), writer=mine)
    assert score_file_agrees(tmp_path, "t", result(), writer=mine)
    assert not score_file_agrees(tmp_path, "t", result(), writer=theirs)

    path = write_score_file(tmp_path, "t", result(), writer=theirs)
    assert not score_file_agrees(tmp_path, "t", result(), writer=mine)

    full = json.dumps(result().model_dump(mode="json"), sort_keys=True)
    path.write_text(ScoreFile(score=0.75, gpt_response_text=full).model_dump_json())
    assert score_file_writer(path) is None
    assert not score_file_agrees(tmp_path, "t", result(), writer=mine)


@pytest.mark.parametrize(
    ("writer", "expected"),
    [("/srv/results", "/srv/result"), ('/srv/a"b', "/srv/a"), ("/srv/a\\b", "/srv/a")],
)
def test_a_writer_is_not_taken_for_the_expected_one_its_name_begins_with(
    tmp_path: Path, writer: str, expected: str
) -> None:
    path = write_score_file(tmp_path, "t", result(), writer=Path(writer))

    assert score_file_writer(path, expected) == writer
    assert score_file_writer(path, writer) == writer


def test_a_run_under_a_new_score_name_withdraws_its_stale_files_under_the_old_one(
    work: Path,
) -> None:
    """A reader of the default name must not read a score the results folder no longer holds."""
    assert run(work, "results").exit_code == 0
    change_louvre_answer_to_a_wrong_one(work)  # its result goes from 1 to 0

    renamed = run(work, "results", "--score-name", "judgegen_o3")

    assert renamed.exit_code == 0, renamed.stderr
    assert json.loads(renamed.stdout)["evaluated"] == 1
    assert naming(work, "results") == {
        "le_guin_novels/scores/judgegen_o3_le_guin_novels.json": 0.0,
        "louvre_hours/scores/judgegen_o3_louvre_hours.json": 0.0,
        "python_match/scores/judgegen_o3_python_match.json": 0.5,
    }
    assert renamed.stderr.count("withdrew") == 1
    note = " ".join(renamed.stderr.split())
    assert (
        f"withdrew 3 score file(s) in {work / WEBEVAL} (3 scores/judgegen_<task_id>.json)" in note
    )
    assert "it now writes scores/judgegen_o3_<task_id>.json" in note


def test_a_run_under_a_new_score_name_leaves_another_folders_files_under_the_old_one(
    work: Path,
) -> None:
    assert run(work, "results_o4", "--task", "louvre_hours").exit_code == 0
    mine = ("--task", "le_guin_novels", "--task", "python_match")
    assert run(work, "results_o3", *mine).exit_code == 0
    louvre = "louvre_hours/scores/judgegen_louvre_hours.json"
    theirs = score_files(work)[louvre]

    renamed = run(work, "results_o3", "--score-name", "o3")

    assert renamed.exit_code == 0, renamed.stderr
    assert score_files(work)[louvre] == theirs
    assert sorted(naming(work, "results_o3")) == [f"{t}/scores/o3_{t}.json" for t in SCORED]
    assert "withdrew 2 score file(s)" in " ".join(renamed.stderr.split())


def test_a_rerun_under_the_same_score_name_rewrites_its_files_and_withdraws_none(
    work: Path,
) -> None:
    assert run(work, "results").exit_code == 0
    change_louvre_answer_to_a_wrong_one(work)

    again = run(work, "results")

    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["evaluated"] == 1
    assert "withdrew" not in again.stderr
    assert naming(work, "results") == {
        "le_guin_novels/scores/judgegen_le_guin_novels.json": 0.0,
        "louvre_hours/scores/judgegen_louvre_hours.json": 0.0,
        "python_match/scores/judgegen_python_match.json": 0.5,
    }


@pytest.mark.parametrize("record", ["kept", "lost"])
def test_files_left_under_an_old_score_name_are_withdrawn_though_nothing_is_judged_again(
    work: Path, record: str
) -> None:
    """As a judgegen that recorded no score names left them (`lost`: a folder it wrote), or
    restored by hand (`kept`): the results are fresh, yet the files must go."""
    assert run(work, "results").exit_code == 0
    old = {p: p.read_bytes() for p in (work / WEBEVAL / "traj").glob("*/scores/*.json")}
    assert run(work, "results", "--score-name", "o3").exit_code == 0
    for path, data in old.items():
        path.write_bytes(data)
    if record == "lost":
        (work / "results" / SCORE_NAMES_FILE).unlink()

    again = run(work, "results", "--score-name", "o3")

    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["evaluated"] == 0
    assert sorted(naming(work, "results")) == [f"{t}/scores/o3_{t}.json" for t in SCORED]
    assert "(3 scores/judgegen_<task_id>.json)" in " ".join(again.stderr.split())


def test_a_library_run_into_another_results_folders_score_files_is_refused(work: Path) -> None:
    assert run(work, "results_o4").exit_code == 0
    before = score_files(work)
    with pytest.raises(ScoreFilesTaken) as refused:
        run_trajectories(work, make_backend(), results_dir=work / "results_o3")
    assert str((work / "results_o4").resolve()) in str(refused.value)
    assert "score_name" in str(refused.value)
    assert score_files(work) == before
