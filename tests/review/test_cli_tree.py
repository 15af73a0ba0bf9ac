"""`judgegen tree`: the all-pass skeleton of a judge, as text, Markdown or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.review.helpers import EXTRACT, TASK, invoke, workspace

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = ["--provider", EXTRACT, "--cache-mode", "off", "--no-sandbox"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workspace(tmp_path))
    return tmp_path


def test_tree_text_lists_every_node_with_marks_and_counts(work: Path) -> None:
    result = invoke(["tree", TASK, *OFFLINE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("root: For the three highest mountains on Earth")
    assert "  everest: Mount Everest: first ascent, supported" in lines
    assert "    k2_date: The cited page supports the first-ascent date of K2  [critical]" in lines
    assert "    k2_climbers: The cited page supports who first climbed K2" in lines
    assert lines[-1] == "13 nodes, 9 leaves, depth 2, 6 critical, 0 sequential"


def test_tree_markdown_is_a_bulleted_outline(work: Path) -> None:
    result = invoke(["tree", TASK, "--format", "markdown", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    assert "  - kangchenjunga: Kangchenjunga: first ascent, supported" in result.stdout
    assert result.stdout.startswith("- root: ")


def test_tree_json_has_version_task_answer_tree_and_statistics(work: Path) -> None:
    result = invoke(["tree", TASK, "--format", "json", "--answer", "wrong", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["version"], data["task_id"], data["answer"]) == (1, TASK, "wrong")
    assert [c["id"] for c in data["tree"]["children"]] == ["everest", "k2", "kangchenjunga"]
    assert data["statistics"] == {
        "total_nodes": 13,
        "leaf_nodes": 9,
        "depth": 2,
        "critical_nodes": 6,
        "sequential_nodes": 0,
    }


def test_tree_runs_the_judge_in_the_sandbox_by_default(work: Path) -> None:
    result = invoke(["tree", TASK, "--provider", EXTRACT, "--cache-mode", "off"])
    assert result.exit_code == 0, result.stderr
    assert "13 nodes, 9 leaves" in result.stdout


def test_tree_of_an_example_task_replays_its_recorded_extraction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    task = "rust_2024_edition"
    args = ["--tasks", str(ROOT / "tasks"), "--judges", str(ROOT / "generated_judges")]
    replay = ["--provider", f"replay:{ROOT / 'recordings' / task}", "--cache-mode", "off"]
    result = invoke(["tree", task, *args, *replay, "--no-sandbox"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("root: Which stable Rust release")
    assert "sequential" in result.stdout


def test_unknown_sample_answer_is_a_usage_error(work: Path) -> None:
    result = invoke(["tree", TASK, "--answer", "nope", *OFFLINE])
    assert result.exit_code == 2
    assert "has no sample answer 'nope' (has: good, partial, wrong)" in result.stderr


def test_missing_judge_is_a_usage_error(work: Path) -> None:
    (work / "generated_judges" / f"{TASK}.py").unlink()
    result = invoke(["tree", TASK, *OFFLINE])
    assert result.exit_code == 2
    assert "no judge generated_judges/first_ascents.py" in result.stderr


def test_replay_miss_is_an_infrastructure_failure_not_a_tree(work: Path) -> None:
    (work / "empty").mkdir()
    result = invoke(["tree", TASK, "--provider", "replay:empty", "--cache-mode", "off"])
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "ReplayMiss" in result.stderr
