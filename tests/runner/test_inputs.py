"""Reading answer folders and webeval trajectories, including malformed inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.runner.inputs import discover_answers, discover_trajectories, trajectory_root


def write_answer(root: Path, agent: str, task: str, name: str, data: bytes) -> Path:
    path = root / agent / task / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_traj(root: Path, task: str, record: object, name: str = "x_final_answer.json") -> Path:
    folder = root / "traj" / task
    folder.mkdir(parents=True, exist_ok=True)
    text = record if isinstance(record, str) else json.dumps(record)
    (folder / name).write_text(text)
    return folder


def test_answers_are_listed_per_file_in_natural_order_with_stem_as_answer_name(
    tmp_path: Path,
) -> None:
    for name in ("answer_10", "answer_2", "answer_1"):
        write_answer(tmp_path, "agent", "task_a", name, b"text")
    write_answer(tmp_path, "other", "task_b", "answer_1", b"text")
    found = discover_answers(tmp_path)
    assert [(i.agent_name, i.task_id, i.answer_name) for i in found] == [
        ("agent", "task_a", "answer_1"),
        ("agent", "task_a", "answer_2"),
        ("agent", "task_a", "answer_10"),
        ("other", "task_b", "answer_1"),
    ]
    assert all(i.text == "text" and i.answer_sha256.startswith("sha256:") for i in found)


def test_a_single_agent_folder_is_recognised(tmp_path: Path) -> None:
    write_answer(tmp_path, "solo", "task_a", "answer_1", b"text")
    (found,) = discover_answers(tmp_path / "solo")
    assert (found.agent_name, found.task_id) == ("solo", "task_a")


def test_a_task_folder_given_as_dot_runs_the_samples_of_that_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = tmp_path / "tasks" / "task_a"
    write_answer(task, "", "answers", "answer_1", b"text")
    (task / "task.yaml").write_text("id: task_a\n")
    monkeypatch.chdir(task)
    (found,) = discover_answers(".")
    assert (found.agent_name, found.task_id) == ("samples", "task_a")


@pytest.mark.parametrize(("given", "inside"), [(".", "solo"), ("..", "solo/task_a")])
def test_an_agent_folder_given_relatively_is_named_as_the_folder_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, inside: str
) -> None:
    """`--answers .` from inside the agent folder (or `..` from a task folder) names the agent
    by that folder: the name of the path as given (`""`, `..`) would put its results outside
    RESULTS/<agent>, even outside RESULTS."""
    write_answer(tmp_path, "solo", "task_a", "answer_1", b"text")
    monkeypatch.chdir(tmp_path / inside)
    (found,) = discover_answers(given)
    assert (found.agent_name, found.task_id) == ("solo", "task_a")


def test_task_filter_keeps_only_named_tasks(tmp_path: Path) -> None:
    write_answer(tmp_path, "agent", "task_a", "answer_1", b"a")
    write_answer(tmp_path, "agent", "task_b", "answer_1", b"b")
    assert [i.task_id for i in discover_answers(tmp_path, tasks={"task_b"})] == ["task_b"]


def test_invalid_utf8_is_decoded_with_replacement_and_noted(tmp_path: Path) -> None:
    write_answer(tmp_path, "agent", "task", "answer_1", b"caf\xe9 au lait")
    (found,) = discover_answers(tmp_path)
    assert found.text == "caf\ufffd au lait"
    assert found.excluded is None and "invalid UTF-8 at byte 3" in found.notes[0]


def test_binary_answer_is_excluded_with_reason(tmp_path: Path) -> None:
    write_answer(tmp_path, "agent", "task", "answer_1", b"\x89PNG\r\n\x1a\n\x00\x00")
    (found,) = discover_answers(tmp_path)
    assert found.text is None and "binary" in (found.excluded or "")


def test_oversized_answer_is_excluded_with_reason(tmp_path: Path) -> None:
    write_answer(tmp_path, "agent", "task", "answer_1", b"word " * 1_000_000)
    (found,) = discover_answers(tmp_path)
    assert "too large: 5,000,000 bytes" in (found.excluded or "")


def test_blank_answer_is_marked_empty_not_excluded(tmp_path: Path) -> None:
    write_answer(tmp_path, "agent", "task", "answer_1", b"\n \t\n")
    (found,) = discover_answers(tmp_path)
    assert found.empty and found.excluded is None
    assert "scored 0 without running the judge" in found.notes[0]


def test_trajectory_with_answer_is_judged_text(tmp_path: Path) -> None:
    write_traj(tmp_path, "t1", {"final_answer": "It is 330 m.", "is_aborted": False})
    (found,) = discover_trajectories(tmp_path)
    assert (found.agent_name, found.task_id, found.answer_name) == (
        tmp_path.name,
        "t1",
        "final_answer",
    )
    assert found.text == "It is 330 m." and found.traj_dir == tmp_path / "traj" / "t1"


def test_a_hidden_folder_in_traj_is_no_task(tmp_path: Path) -> None:
    """A notebook's `.ipynb_checkpoints` beside the task folders is no trajectory: read as
    one, it became an excluded input of a task that does not exist."""
    write_traj(tmp_path, "t1", {"final_answer": "It is 330 m.", "is_aborted": False})
    (tmp_path / "traj" / ".ipynb_checkpoints").mkdir()
    assert [found.task_id for found in discover_trajectories(tmp_path)] == ["t1"]


def test_aborted_trajectory_is_excluded(tmp_path: Path) -> None:
    write_traj(tmp_path, "t1", {"final_answer": "", "is_aborted": True})
    (found,) = discover_trajectories(tmp_path)
    assert "aborted" in (found.excluded or "") and not found.input_error


def test_over_budget_trajectory_is_empty(tmp_path: Path) -> None:
    write_traj(tmp_path, "t1", {"final_answer": "", "is_aborted": False})
    (found,) = discover_trajectories(tmp_path)
    assert found.empty and found.excluded is None


def test_webevals_no_answer_placeholder_is_an_empty_answer_not_text_to_judge(
    tmp_path: Path,
) -> None:
    """webeval leaves `final_answer` at "<no_answer>" when the agent never calls terminate
    (over its step budget); read as text, the judge was asked to grade the placeholder."""
    write_traj(tmp_path, "t1", {"final_answer": "<no_answer>", "is_aborted": False})
    (found,) = discover_trajectories(tmp_path)
    assert found.empty and found.excluded is None
    assert found.notes == [
        "no final answer ('<no_answer>': the agent never called terminate): scored 0 without "
        "running the judge"
    ]


def test_trajectory_without_an_answer_file_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "traj" / "t1").mkdir(parents=True)
    (found,) = discover_trajectories(tmp_path)
    assert found.input_error and "found 0: none" in (found.excluded or "")


def test_trajectory_with_two_answer_files_is_an_input_error(tmp_path: Path) -> None:
    record = {"final_answer": "a", "is_aborted": False}
    write_traj(tmp_path, "t1", record, "a_final_answer.json")
    write_traj(tmp_path, "t1", record, "b_final_answer.json")
    (found,) = discover_trajectories(tmp_path)
    assert found.input_error and "found 2" in (found.excluded or "")


def test_malformed_final_answer_json_is_an_input_error(tmp_path: Path) -> None:
    write_traj(tmp_path, "bad_json", "{not json")
    write_traj(tmp_path, "no_flag", {"final_answer": "a"})
    write_traj(tmp_path, "not_text", {"final_answer": 3, "is_aborted": False})
    reasons = {i.task_id: i.excluded or "" for i in discover_trajectories(tmp_path)}
    assert "not valid JSON" in reasons["bad_json"]
    assert "'is_aborted'" in reasons["no_flag"]
    assert "'final_answer'" in reasons["not_text"]


def test_trajectory_root_accepts_the_run_or_its_traj_folder(tmp_path: Path) -> None:
    (tmp_path / "run7" / "traj").mkdir(parents=True)
    assert trajectory_root(tmp_path / "run7") == ("run7", (tmp_path / "run7" / "traj").resolve())
    assert trajectory_root(tmp_path / "run7" / "traj")[0] == "run7"


def test_invalid_utf8_in_a_trajectory_is_decoded_with_replacement_and_noted(
    tmp_path: Path,
) -> None:
    folder = write_traj(tmp_path, "t1", {"final_answer": "caf", "is_aborted": False})
    path = folder / "x_final_answer.json"
    path.write_bytes(path.read_bytes().replace(b'"caf"', b'"caf\xe9 au lait"'))
    (found,) = discover_trajectories(tmp_path)
    assert found.text == "caf\ufffd au lait" and found.excluded is None
    assert found.notes == [
        "invalid UTF-8 at byte 21 of x_final_answer.json: decoded with U+FFFD replacement "
        "characters"
    ]


def test_an_escaped_nul_in_a_final_answer_is_judged_not_excluded_as_binary(
    tmp_path: Path,
) -> None:
    """The NUL rule tells binary files from text; a JSON string is text whatever it holds."""
    write_traj(tmp_path, "t1", {"final_answer": "Open 9:00-21:00.\u0000", "is_aborted": False})
    (found,) = discover_trajectories(tmp_path)
    assert found.excluded is None and found.text == "Open 9:00-21:00.\u0000"
    assert found.notes == []


def test_a_lone_surrogate_in_a_final_answer_is_replaced_and_noted(tmp_path: Path) -> None:
    write_traj(tmp_path, "t1", '{"final_answer": "caf\\ud800 au lait", "is_aborted": false}')
    (found,) = discover_trajectories(tmp_path)
    assert found.text == "caf\ufffd au lait" and found.excluded is None
    assert "not valid Unicode" in found.notes[0]


def test_an_oversized_final_answer_is_excluded_with_reason(tmp_path: Path) -> None:
    write_traj(tmp_path, "t1", {"final_answer": "word " * 10, "is_aborted": False})
    (found,) = discover_trajectories(tmp_path, max_bytes=20)
    assert "too large: 50 bytes > limit 20" in (found.excluded or "")
