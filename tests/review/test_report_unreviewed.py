"""The HTML report says which results come from unreviewed judges, as the text report does."""

from __future__ import annotations

from typing import Any

from generator.review.report import render_report


def _result(answer: str, unreviewed: bool) -> dict[str, Any]:
    tree = {"id": "root", "desc": "root", "score": 1.0, "status": "passed", "children": []}
    return {
        "agent_name": "alpha",
        "task_id": "louvre_hours",
        "answer_name": answer,
        "final_score": 1.0,
        "status": "complete",
        "unreviewed_judge": unreviewed,
        "eval_breakdown": [{"info": {}, "verification_tree": tree}],
    }


def test_a_result_of_an_unreviewed_judge_is_marked_in_the_page() -> None:
    page = render_report([_result("answer_1", True)])
    assert "unreviewed judge" in page
    assert "judgegen approve louvre_hours" in page


def test_a_result_of_an_approved_judge_carries_no_unreviewed_mark() -> None:
    page = render_report([_result("answer_1", False)])
    assert "unreviewed judge" not in page
