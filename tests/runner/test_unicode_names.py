"""Names spelled in two Unicode normalization forms (NFC `café`, NFD `cafe` + U+0301) are one
name: a task folder meets its judge, results land under one spelling a rerun finds, and two
entries of one folder spelled apart only so are refused, both named, never merged."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import run_args
from toolkit.errors import NameCollision
from toolkit.names import on_disk
from toolkit.runner.approval import approval_path, approval_problem_for, approve
from toolkit.runner.fingerprint import Fingerprint
from toolkit.runner.inputs import discover_answers, discover_trajectories
from toolkit.runner.results import EvaluationResult, ResultStore

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def run(work: Path, *extra: str, answers: Path | None = None):
    args = run_args(work, "--no-sandbox", "--include-unreviewed", "--json", *extra, answers=answers)
    return CliRunner().invoke(main, args, catch_exceptions=False)


def names_under(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


def test_the_two_spellings_are_distinct_names_on_this_filesystem(tmp_path: Path) -> None:
    """What the other tests rely on: this filesystem keeps NFC and NFD apart (Linux does)."""
    (tmp_path / NFC).mkdir()
    (tmp_path / NFD).mkdir()
    assert names_under(tmp_path) == {NFC, NFD}


def test_a_task_folder_spelled_nfd_is_judged_by_its_judge_spelled_nfc(work: Path) -> None:
    """It was reported as a task with no judge, the run exiting 0 with the task not judged."""
    task = work / "tasks" / NFD
    shutil.copytree(work / "answers" / "alpha" / "louvre_hours", task / "answers")
    (task / "task.yaml").write_text(f"id: {NFD}\n")
    (work / "judges" / "louvre_hours.py").rename(work / "judges" / f"{NFC}.py")
    result = run(work, answers=task)
    assert result.exit_code == 0, result.output
    assert "no judge" not in result.stderr
    record = json.loads(result.stdout)
    assert (record["evaluated"], record["skipped_answers"]) == (2, 0)
    assert names_under(work / "results" / "samples") - {"summary.json"} == {NFC}
    assert names_under(work / "results" / "samples" / NFC) == {"answer_1.json", "answer_2.json"}


def test_answers_of_an_agent_folder_spelled_nfd_are_reused_on_rerun(work: Path) -> None:
    (work / "answers" / "alpha").rename(work / "answers" / NFD)
    first = run(work)
    assert first.exit_code == 0, first.output
    assert NFC in names_under(work / "results") and NFD not in names_under(work / "results")
    rerun = run(work)
    assert rerun.exit_code == 0, rerun.output
    record = json.loads(rerun.stdout)
    written = list((work / "results").glob("*/*/*.json"))
    assert (record["evaluated"], record["reused"]) == (0, len(written))
    assert record["summaries"] == json.loads(first.stdout)["summaries"]


def leftover_results(work: Path) -> Path:
    """Agent `café`'s results as an earlier judgegen wrote them: under the on-disk spelling of
    its answers folder (NFD), where `judgegen run` now writes NFC."""
    (work / "answers" / "alpha").rename(work / "answers" / NFD)
    assert run(work).exit_code == 0
    leftover = work / "results" / NFD
    (work / "results" / NFC).rename(leftover)
    return leftover


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_run_warns_once_of_a_leftover_agent_folder_spelled_nfd_and_leaves_it_alone(
    work: Path,
) -> None:
    """The run writes RESULTS/<NFC> beside it and never updates it: said, not refused."""
    leftover = leftover_results(work)
    before = files_under(leftover)

    result = run(work)

    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if str(leftover) in line]
    assert warning.startswith(f"warning: {work / 'results' / NFC} (composed, NFC) and ")
    assert f"{leftover} (decomposed, NFD) are one agent results folder" in warning
    assert "which no run updates" in warning
    assert f"delete it ({leftover}) or move it out of {work / 'results'}" in warning
    assert files_under(leftover) == before
    assert json.loads(result.stdout)["evaluated"] > 0  # judged anew under NFC: none reused


def test_a_run_says_nothing_of_its_agent_folder_alone(work: Path) -> None:
    (work / "answers" / "alpha").rename(work / "answers" / NFD)
    assert run(work).exit_code == 0

    result = run(work)

    assert result.exit_code == 0, result.output
    assert "warning:" not in result.stderr


def test_a_task_named_in_the_other_spelling_by_task_is_the_folders(tmp_path: Path) -> None:
    answer = tmp_path / "agent" / NFC / "answer_1.md"
    answer.parent.mkdir(parents=True)
    answer.write_text("text")
    found = discover_answers(tmp_path, tasks={NFD})
    assert [(item.task_id, item.path) for item in found] == [(NFC, answer)]


def test_agent_folders_spelled_apart_only_by_normalization_are_refused_naming_both(
    work: Path,
) -> None:
    alpha = work / "answers" / "alpha"
    shutil.copytree(alpha, work / "answers" / NFD)
    alpha.rename(work / "answers" / NFC)
    result = run(work)
    assert result.exit_code == 2
    assert f"{work / 'answers' / NFC} (composed, NFC)" in result.stderr
    assert f"{work / 'answers' / NFD} (decomposed, NFD)" in result.stderr
    assert "agent folder" in result.stderr and "rename one of them" in result.stderr
    assert not (work / "results").exists()


def test_task_folders_spelled_apart_only_by_normalization_are_refused_naming_both(
    work: Path,
) -> None:
    alpha = work / "answers" / "alpha"
    shutil.copytree(alpha / "louvre_hours", alpha / NFD)
    (alpha / "louvre_hours").rename(alpha / NFC)
    result = run(work)
    assert result.exit_code == 2
    assert f"{alpha / NFC} (composed, NFC)" in result.stderr
    assert f"{alpha / NFD} (decomposed, NFD)" in result.stderr
    assert "task folder" in result.stderr and "rename one of them" in result.stderr
    assert not (work / "results").exists()


def test_answer_files_spelled_apart_only_by_normalization_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "agent" / "task"
    folder.mkdir(parents=True)
    (folder / f"{NFC}.md").write_text("one")
    (folder / f"{NFD}.md").write_text("two")
    with pytest.raises(NameCollision, match="answer file"):
        discover_answers(tmp_path)


def test_trajectory_folders_spelled_apart_only_by_normalization_are_refused(
    tmp_path: Path,
) -> None:
    for name in (NFC, NFD):
        (tmp_path / "traj" / name).mkdir(parents=True)
    with pytest.raises(NameCollision, match="trajectory task folder"):
        discover_trajectories(tmp_path)


def test_judges_spelled_apart_only_by_normalization_are_refused_naming_both(work: Path) -> None:
    alpha = work / "answers" / "alpha"
    (alpha / "louvre_hours").rename(alpha / NFC)
    judge = work / "judges" / "louvre_hours.py"
    shutil.copy(judge, work / "judges" / f"{NFD}.py")
    judge.rename(work / "judges" / f"{NFC}.py")
    result = run(work)
    assert result.exit_code == 2
    assert f"{work / 'judges' / NFC}.py (composed, NFC)" in result.stderr
    assert f"{work / 'judges' / NFD}.py (decomposed, NFD)" in result.stderr


def test_an_approval_recorded_under_the_other_spelling_approves_the_judge(tmp_path: Path) -> None:
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / f"{NFD}.py").write_text("async def evaluate(ev): ...\n")
    record = approve(NFC, reviewer="ana", judges_dir=tmp_path / "judges", reviews_dir=tmp_path)
    assert approval_path(tmp_path, NFD).name == f"{NFC}.approval.json"
    approval_path(tmp_path, NFC).rename(tmp_path / f"{NFD}.approval.json")
    assert approval_problem_for(record.judge_sha256, tmp_path, NFC) is None


def excluded_result(task_id: str) -> EvaluationResult:
    fingerprint = Fingerprint(
        templates_sha256="t", toolkit_version="0", backend="b", answer_sha256="a"
    )
    return EvaluationResult(
        task_id=task_id,
        agent_name="agent",
        answer_name="answer_1",
        status="excluded",
        final_score=None,
        reason="binary file",
        fingerprint=fingerprint,
    )


def test_a_result_listed_in_the_other_spelling_is_its_own_not_a_copy(tmp_path: Path) -> None:
    """macOS may list a folder written as NFC in NFD: the result is still at its own path."""
    store = ResultStore(tmp_path)
    written = store.write(excluded_result(NFD))
    assert written == tmp_path / "agent" / NFC / "answer_1.json"
    written.parent.rename(tmp_path / "agent" / NFD)
    unreadable: dict[Path, str] = {}
    heads = list(store.iter_heads("agent", unreadable=unreadable))
    assert unreadable == {}
    assert [(head.task_id, head.answer_name) for head in heads] == [(NFD, "answer_1")]


def test_an_old_result_spelled_nfd_beside_its_nfc_twin_is_listed_not_counted(
    tmp_path: Path,
) -> None:
    """An earlier judgegen wrote results under the names' spelling on disk: counting both the
    old and the new file would count one answer twice."""
    store = ResultStore(tmp_path)
    written = store.write(excluded_result(NFC))
    old = tmp_path / "agent" / NFD / "answer_1.json"
    old.parent.mkdir()
    shutil.copy(written, old)
    unreadable: dict[Path, str] = {}
    heads = list(store.iter_heads("agent", unreadable=unreadable))
    assert [(head.task_id, head.answer_name) for head in heads] == [(NFC, "answer_1")]
    assert list(unreadable) == [old] and "delete it" in unreadable[old]


def test_a_recorded_path_is_found_on_disk_in_the_other_spelling(tmp_path: Path) -> None:
    (tmp_path / NFD / "tasks").mkdir(parents=True)
    (tmp_path / NFD / "tasks" / f"{NFD}.md").write_text("x", encoding="utf-8")

    found = on_disk(tmp_path / NFC / "tasks" / f"{NFC}.md")

    assert found == tmp_path / NFD / "tasks" / f"{NFD}.md"
    assert on_disk(tmp_path / NFC / "gone.md") == tmp_path / NFC / "gone.md"


def test_a_recorded_path_there_in_two_other_spellings_is_a_collision(tmp_path: Path) -> None:
    """Composed, decomposed, and the partly decomposed spelling a result recorded: which of
    the two on disk it meant cannot be told."""
    partly = "\u00ea\u0301.md"  # e-circumflex composed, its acute accent not
    for form in ("NFC", "NFD"):
        (tmp_path / unicodedata.normalize(form, partly)).write_text("x", encoding="utf-8")

    with pytest.raises(NameCollision, match="spelled in two Unicode normalization forms"):
        on_disk(tmp_path / partly)
