"""Human labels: validation with clear errors, and node/root agreement."""

from __future__ import annotations

import pytest

from generator.review.labels import agreement, load_labels, task_labels
from generator.review.runs import JudgedAnswer
from toolkit.errors import SpecError
from toolkit.runner.fingerprint import PageReads


def summary(final_score=0.5, status="complete"):
    tree = {
        "id": "root",
        "desc": "r",
        "critical": False,
        "score": final_score,
        "status": "partial",
        "strategy": "parallel",
        "children": [
            {
                "id": "a",
                "desc": "a",
                "critical": False,
                "score": 1.0,
                "status": "passed",
                "strategy": "parallel",
                "children": [],
            },
            {
                "id": "b",
                "desc": "b",
                "critical": False,
                "score": 0.0,
                "status": "failed",
                "strategy": "parallel",
                "children": [],
            },
            {
                "id": "c",
                "desc": "c",
                "critical": False,
                "score": 0.0,
                "status": "skipped",
                "strategy": "parallel",
                "children": [],
            },
        ],
    }
    return {
        "final_score": final_score,
        "status": status,
        "eval_breakdown": [{"info": [], "verification_tree": tree}],
    }


def judged(final_score=0.5, missing=(), missing_sources=()):
    """A run with `summary()`'s tree, the page-read log missing `missing`, and the judge's own
    `missing_sources` list."""
    run = {**summary(final_score), "missing_sources": list(missing_sources)}
    return JudgedAnswer(run, PageReads(missing=tuple(missing)))


def write(tmp_path, name, text):
    path = tmp_path / "labels" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_labels_agreeing_with_the_judge(tmp_path):
    labels = load_labels(
        write(tmp_path, "answer_1.yaml", "root_score: 0.5\nnodes: {a: pass, b: fail, c: skip}\n")
    )
    result = agreement("t", "answer_1.md", judged(), labels)
    assert result.node_agreement == 1.0 and result.root_agrees is True


def test_a_wrong_label_is_a_disagreement(tmp_path):
    labels = load_labels(
        write(tmp_path, "answer_1.yaml", "root_score: 1.0\nnodes: {a: pass, b: pass}\n")
    )
    result = agreement("t", "answer_1.md", judged(), labels)
    assert result.node_agreement == 0.5
    assert [(d.id, d.expected, d.actual) for d in result.disagreements] == [("b", "pass", "fail")]
    assert result.root_agrees is False


def test_labels_naming_removed_nodes_are_reported(tmp_path):
    labels = load_labels(write(tmp_path, "answer_1.yaml", "nodes: {a: pass, gone: fail}\n"))
    result = agreement("t", "answer_1.md", judged(), labels)
    assert result.unknown_node_ids == ["gone"] and result.nodes_labelled == 1


def test_missing_pages_are_the_page_read_logs_not_the_judges_own_list(tmp_path):
    """A page the judge read itself and found missing is in the log, not in `missing_sources`."""
    labels = load_labels(write(tmp_path, "answer_1.yaml", "nodes: {b: fail}\n"))
    run = judged(missing=["https://x.example/read-by-the-judge"], missing_sources=[])
    result = agreement("t", "answer_1.md", run, labels)
    assert result.missing_pages == ["https://x.example/read-by-the-judge"]


def test_unknown_field_names_the_file_and_field(tmp_path):
    path = write(tmp_path, "answer_1.yaml", "root: 1\n")
    with pytest.raises(SpecError) as info:
        load_labels(path)
    assert str(path) in str(info.value) and "root" in str(info.value)


def test_invalid_outcome_is_rejected(tmp_path):
    with pytest.raises(SpecError, match=r"nodes\.a"):
        load_labels(write(tmp_path, "answer_1.yaml", "nodes: {a: maybe}\n"))


def test_task_labels_map_to_answer_files(tmp_path):
    write(tmp_path, "answer_2.yaml", "root_score: 0\n")
    assert list(task_labels(tmp_path)) == ["answer_2.md"]


def test_task_labels_read_yml_files_too(tmp_path):
    write(tmp_path, "answer_3.yml", "root_score: 1\n")
    assert list(task_labels(tmp_path)) == ["answer_3.md"]


def test_two_label_files_for_one_answer_name_both(tmp_path):
    first = write(tmp_path, "good.yaml", "root_score: 1\n")
    second = write(tmp_path, "reviewer_2.yaml", "answer: good.txt\nroot_score: 0\n")
    with pytest.raises(SpecError) as info:
        task_labels(tmp_path)
    assert str(first) in str(info.value) and str(second) in str(info.value)
