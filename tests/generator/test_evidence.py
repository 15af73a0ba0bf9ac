"""Runtime evidence checks read one run's tree and verification log and name the judge line."""

from __future__ import annotations

from typing import Any

from generator.debug import debug_stage
from generator.evidence import all_pass_below_one, claim_placeholders, source_missing
from generator.spec import LoadedSpec, SampleAnswer, TaskSpec


def summary(leaves: list[dict[str, Any]], verifications: list[dict[str, Any]], score: float):
    tree = {"id": "root", "desc": "r", "critical": False, "strategy": "parallel", "children": []}
    tree["children"] = [
        {"critical": False, "strategy": "parallel", "children": [], **leaf} for leaf in leaves
    ]
    return {
        "final_score": score,
        "eval_breakdown": [{"verification_tree": tree}],
        "verifications": verifications,
    }


def test_page_leaf_verified_without_sources_is_reported_at_its_line() -> None:
    run = summary(
        [{"id": "official", "desc": "The official page announces it", "status": "passed"}],
        [{"node_id": "official", "claim": "c", "sources": [], "passed": True, "line": 31}],
        1.0,
    )
    [finding] = source_missing(run)
    assert (finding.kind, finding.node_id, finding.line) == ("source_missing", "official", 31)


def test_plain_check_leaf_without_sources_is_fine() -> None:
    run = summary(
        [{"id": "date", "desc": "The date is right", "status": "passed"}],
        [{"node_id": "date", "claim": "c", "sources": [], "passed": True}],
        1.0,
    )
    assert source_missing(run) == []


def test_claims_with_none_empty_list_or_placeholder_are_reported() -> None:
    entries = [
        {"node_id": "a", "claim": "The version is None.", "passed": True, "line": 3},
        {"node_id": "b", "claim": "The items are [].", "passed": True},
        {"node_id": "c", "claim": "The date is {release.date}.", "passed": False},
        {"node_id": "d", "claim": "The version is 1.85.0.", "passed": True},
        {"node_id": "e", "claim": "None", "passed": None},
    ]
    found = claim_placeholders(summary([], entries, 1.0))
    assert [f.node_id for f in found] == ["a", "b", "c"]


def test_all_pass_below_one_without_failed_leaves_is_structural() -> None:
    run = summary(
        [
            {"id": "ok", "desc": "d", "status": "passed"},
            {"id": "empty_group", "desc": "d", "status": "initialized"},
        ],
        [],
        0.5,
    )
    [finding] = all_pass_below_one(run)
    assert "empty_group" in finding.message
    failed = summary([{"id": "x", "desc": "d", "status": "failed"}], [], 0.0)
    assert all_pass_below_one(failed) == []


JUDGE = """from pydantic import BaseModel

from toolkit import Evaluator

TASK_ID = "demo"
TASK_DESCRIPTION = "Name a colour and cite a page."


class Colour(BaseModel):
    name: str | None = None
    url: str | None = None


async def evaluate(ev: Evaluator) -> None:
    colour = await ev.extract(prompt="The colour", template_class=Colour, extraction_name="c")
    ev.add_custom_node(result=bool(colour.name), id="named", desc="A colour is named")
    leaf = ev.add_leaf(id="cited", desc="The cited page supports the colour")
    await ev.verify(claim=f"The colour is {colour.name}", node=leaf)
"""


class Extraction:
    async def extract(self, request: Any) -> dict[str, Any]:
        return {"name": "red", "url": "https://example.org/red"}


async def test_debug_stage_reports_a_page_check_without_sources_with_its_line() -> None:
    spec = TaskSpec(id="demo", description="Name a colour.", rubric_guidance="A colour.")
    loaded = LoadedSpec(
        spec=spec, task_dir="-", answers=[SampleAnswer(name="good", path="-", text="Red.")]
    )
    report = await debug_stage(JUDGE, loaded, Extraction(), isolation="in_process")
    kinds = {issue.kind for issue in report.issues}
    assert kinds == {"source_missing"}
    assert {line for issue in report.issues for line in issue.lines} == {18}
    problem = report.problem(JUDGE)
    assert problem is not None and "in 4 of 4 runs" in problem.summary
