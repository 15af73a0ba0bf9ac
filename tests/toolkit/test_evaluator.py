"""The Evaluator: Mind2Web 2 building API, id rules, precondition skipping, routing, summary."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from tests.toolkit.conftest import verdict_by_claim
from toolkit.backends import Verdict, VerifyRequest
from toolkit.errors import InfraError, TemplateError, TreeError
from toolkit.evaluator import Evaluator


class Person(BaseModel):
    name: str | None = None
    url: str | None = None


# -- ids --------------------------------------------------------------------------------------


def test_colliding_id_becomes_suffixed(make_evaluator):
    ev = make_evaluator()
    assert [ev.add_leaf(id="x", desc="x").id for _ in range(3)] == ["x", "x_1", "x_2"]


def test_explicit_suffixed_id_after_an_automatic_one_gets_its_own_suffix(make_evaluator):
    ev = make_evaluator()
    ev.add_leaf(id="x", desc="x")
    assert ev.add_leaf(id="x", desc="x").id == "x_1"
    assert ev.add_leaf(id="x_1", desc="explicit").id == "x_1_1"


def test_root_id_is_reserved(make_evaluator):
    ev = make_evaluator()
    assert ev.add_parallel(id="root", desc="r").id == "root_1"


def test_ids_are_shared_across_node_kinds(make_evaluator):
    ev = make_evaluator()
    ev.add_parallel(id="n", desc="group")
    assert ev.add_custom_node(result=True, id="n", desc="check").id == "n_1"


def test_find_node_returns_the_node_or_none(make_evaluator):
    ev = make_evaluator()
    node = ev.add_sequential(id="s", desc="s")
    assert ev.find_node("s") is node
    assert ev.find_node("missing") is None


def test_add_leaf_rejects_non_binary_score(make_evaluator):
    with pytest.raises(TreeError):
        make_evaluator().add_leaf(id="x", desc="x", score=0.5)


def test_non_critical_node_under_critical_parent_is_an_error(make_evaluator):
    ev = make_evaluator()
    crit = ev.add_parallel(id="c", desc="c", critical=True)
    with pytest.raises(TreeError):
        ev.add_leaf(id="soft", desc="soft", parent=crit, critical=False)


def test_using_an_uninitialized_evaluator_is_a_clear_error():
    with pytest.raises(TreeError, match="not initialized"):
        Evaluator().add_leaf(id="x", desc="x")


# -- custom nodes ---------------------------------------------------------------------------


def test_custom_node_is_scored_at_once_and_critical_by_default(make_evaluator):
    ev = make_evaluator()
    yes = ev.add_custom_node(result=True, id="yes", desc="yes")
    no = ev.add_custom_node(result=0, id="no", desc="no", critical=False)
    assert (yes.score, yes.status, yes.critical) == (1.0, "passed", True)
    assert (no.score, no.status, no.critical) == (0.0, "failed", False)


async def test_custom_nodes_are_never_skipped_by_failed_siblings(make_evaluator):
    ev = make_evaluator()
    ev.add_custom_node(result=False, id="gate", desc="gate")
    later = ev.add_custom_node(result=True, id="later", desc="later")
    assert later.status == "passed"


# -- precondition skipping ------------------------------------------------------------------


async def test_failed_critical_sibling_skips_the_leaf_without_a_backend_call(make_evaluator):
    ev = make_evaluator()
    ev.add_custom_node(result=False, id="exists", desc="exists")
    target = ev.add_leaf(id="correct", desc="correct")
    assert await ev.verify(claim="c", node=target) is False
    assert target.status == "skipped"
    assert ev.backend.calls == []


async def test_critical_sibling_of_an_ancestor_skips_the_leaf(make_evaluator):
    ev = make_evaluator()
    ev.add_custom_node(result=False, id="top_gate", desc="gate at the root level")
    group = ev.add_parallel(id="group", desc="g")
    inner = ev.add_parallel(id="inner", desc="i", parent=group)
    target = ev.add_leaf(id="deep", desc="deep", parent=inner)
    await ev.verify(claim="c", node=target)
    assert target.status == "skipped"
    assert ev.backend.calls == []


async def test_critical_sibling_two_levels_up_inside_a_group_skips(make_evaluator):
    ev = make_evaluator()
    group = ev.add_parallel(id="group", desc="g")
    ev.add_custom_node(result=False, id="gate", desc="gate", parent=group)
    inner = ev.add_parallel(id="inner", desc="i", parent=group)
    target = ev.add_leaf(id="deep", desc="deep", parent=inner)
    await ev.verify(claim="c", node=target)
    assert target.status == "skipped"


async def test_non_critical_failed_sibling_does_not_skip_in_parallel(make_evaluator):
    ev = make_evaluator()
    ev.add_custom_node(result=False, id="soft", desc="soft", critical=False)
    target = ev.add_leaf(id="t", desc="t")
    assert await ev.verify(claim="c", node=target) is True
    assert target.status == "passed"


async def test_failed_sequential_predecessor_skips_later_leaves(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"first"}))
    seq = ev.add_sequential(id="seq", desc="s")
    first = ev.add_leaf(id="first", desc="first", parent=seq)
    second = ev.add_leaf(id="second", desc="second", parent=seq)
    await ev.verify(claim="first", node=first)
    await ev.verify(claim="second", node=second)
    assert (first.status, second.status) == ("failed", "skipped")
    assert len(ev.backend.calls) == 1


async def test_failed_sequential_predecessor_subtree_skips(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"b"}))
    seq = ev.add_sequential(id="seq", desc="s")
    group = ev.add_parallel(id="group", desc="g", parent=seq)
    a = ev.add_leaf(id="a", desc="a", parent=group)
    b = ev.add_leaf(id="b", desc="b", parent=group)
    later = ev.add_leaf(id="later", desc="later", parent=seq)
    for node in (a, b, later):
        await ev.verify(claim=node.id, node=node)
    assert later.status == "skipped"


async def test_sequential_successor_does_not_gate_its_predecessor(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"second"}))
    seq = ev.add_sequential(id="seq", desc="s")
    first = ev.add_leaf(id="first", desc="first", parent=seq)
    second = ev.add_leaf(id="second", desc="second", parent=seq)
    await ev.verify(claim="second", node=second)
    await ev.verify(claim="first", node=first)
    assert (first.status, second.status) == ("passed", "failed")


async def test_extra_prerequisites_skip_when_failed(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"a"}))
    a = ev.add_leaf(id="a", desc="a")
    b = ev.add_leaf(id="b", desc="b")
    await ev.verify(claim="a", node=a)
    await ev.verify(claim="b", node=b, extra_prerequisites=[a])
    assert b.status == "skipped"


async def test_extra_prerequisite_on_the_node_itself_is_an_error(make_evaluator):
    ev = make_evaluator()
    a = ev.add_leaf(id="a", desc="a")
    with pytest.raises(TreeError):
        await ev.verify(claim="a", node=a, extra_prerequisites=[a])


async def test_initialized_prerequisites_do_not_gate_so_order_matters(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"gate"}))
    gate = ev.add_leaf(id="gate", desc="gate", critical=True)
    target = ev.add_leaf(id="target", desc="target")
    await ev.verify(claim="target", node=target)
    await ev.verify(claim="gate", node=gate)
    assert target.status == "passed"
    assert ev.score() == 0.0


async def test_skipped_prerequisite_also_gates(make_evaluator):
    ev = make_evaluator()
    a = ev.add_leaf(id="a", desc="a", critical=True, status="skipped")
    b = ev.add_leaf(id="b", desc="b")
    await ev.verify(claim="b", node=b)
    assert b.status == "skipped" and a.status == "skipped"


# -- routing ----------------------------------------------------------------------------------


async def test_no_sources_makes_a_plain_verification(make_evaluator):
    ev = make_evaluator()
    await ev.verify(claim="c", node=ev.add_leaf(id="x", desc="x"))
    (request,) = ev.backend.calls
    assert request.sources == [] and request.page_texts == []


async def test_empty_source_list_is_treated_as_no_sources(make_evaluator):
    ev = make_evaluator()
    await ev.verify(claim="c", node=ev.add_leaf(id="x", desc="x"), sources=[])
    (request,) = ev.backend.calls
    assert request.sources == []


@pytest.mark.parametrize("sources", [[None], [""], ["", None]])
async def test_sources_holding_no_url_are_an_unsupported_claim_not_a_plain_check(
    make_evaluator, sources
):
    ev = make_evaluator(verify=lambda request: Verdict(passed=True, reasoning="scripted"))
    leaf = ev.add_leaf(id="x", desc="x", critical=True)
    assert await ev.verify(claim="The store opens at 9am", node=leaf, sources=sources) is False
    assert ev.backend.calls == []
    assert (leaf.status, leaf.score) == ("failed", 0.0)
    assert ev.score() == 0.0


async def test_single_url_request_carries_the_page_text(make_evaluator):
    ev = make_evaluator(pages={"https://a.example/": "page A"})
    await ev.verify(claim="c", node=ev.add_leaf(id="x", desc="x"), sources="https://a.example/")
    (request,) = ev.backend.calls
    assert request.sources == ["https://a.example/"] and request.page_texts == ["page A"]


async def test_multiple_urls_are_tried_in_order_and_stop_at_the_first_pass(make_evaluator):
    def verify(request: VerifyRequest) -> Verdict:
        return Verdict(passed=request.sources == ["https://b.example/"], reasoning="")

    ev = make_evaluator(verify=verify)
    urls = ["https://a.example/", "https://b.example/", "https://c.example/"]
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify(claim="c", node=node, sources=urls) is True
    assert [r.sources for r in ev.backend.calls] == [[urls[0]], [urls[1]]]
    assert ev.verifications[-1]["supported_by"] == urls[1]


async def test_multiple_urls_all_failing_fail_the_leaf(make_evaluator):
    ev = make_evaluator(verify=lambda r: False)
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify(claim="c", node=node, sources=["https://a/", "https://b/"]) is False
    assert node.status == "failed" and len(ev.backend.calls) == 2


async def test_missing_page_is_sent_as_none_and_reported(make_evaluator):
    ev = make_evaluator()
    await ev.verify(claim="c", node=ev.add_leaf(id="x", desc="x"), sources="https://gone/")
    assert ev.backend.calls[0].page_texts == [None]
    assert ev.get_summary()["missing_sources"] == ["https://gone/"]


async def test_verify_without_a_node_returns_the_verdict(make_evaluator):
    ev = make_evaluator(verify=lambda r: r.claim == "true")
    assert await ev.verify(claim="true", node=None) is True
    assert await ev.verify(claim="false", node=None) is False


async def test_batch_verify_decides_every_node(make_evaluator):
    ev = make_evaluator(verify=verdict_by_claim({"b"}))
    nodes = [ev.add_leaf(id=n, desc=n) for n in "abc"]
    results = await ev.batch_verify([(n.id, None, n, None) for n in nodes])
    assert results == [True, False, True]
    assert [n.status for n in nodes] == ["passed", "failed", "passed"]


# -- extraction -----------------------------------------------------------------------------


async def test_extract_fills_missing_fields_with_null_and_records_info(make_evaluator):
    ev = make_evaluator(extract=lambda r: {"name": "Ada"})
    person = await ev.extract(prompt="who", template_class=Person, extraction_name="person")
    assert person == Person(name="Ada", url=None)
    assert {"person": {"name": "Ada", "url": None}} in ev.get_summary()["eval_breakdown"][0]["info"]


async def test_extract_from_answer_sends_the_answer_as_source_text(make_evaluator):
    ev = make_evaluator(answer="Ada Lovelace wrote it.")
    await ev.extract(prompt="who", template_class=Person)
    (request,) = ev.backend.calls
    assert request.source is None and request.source_text == "Ada Lovelace wrote it."
    assert request.output_schema["title"] == "Person"


async def test_extract_from_a_page_sends_the_page_text(make_evaluator):
    ev = make_evaluator(pages={"https://p/": "profile"})
    await ev.extract(prompt="who", template_class=Person, source="https://p/")
    assert ev.backend.calls[0].source_text == "profile"


async def test_extraction_infra_error_propagates_and_marks_incomplete(make_evaluator):
    def extract(request):
        raise InfraError("LLM down")

    ev = make_evaluator(extract=extract)
    with pytest.raises(InfraError):
        await ev.extract(prompt="who", template_class=Person)
    assert ev.get_summary()["status"] == "incomplete"


class Prices(BaseModel):
    prices: dict[str, float] = {}


async def test_extracting_a_map_template_is_a_recorded_error_never_an_empty_result(
    make_evaluator,
):
    ev = make_evaluator(extract=lambda r: {"prices": {"a": 1.0}})
    with pytest.raises(TemplateError, match="map field"):
        await ev.extract(prompt="prices", template_class=Prices, extraction_name="prices")
    summary = ev.get_summary()
    assert ev.backend.calls == []
    assert summary["status"] == "incomplete"
    (error,) = summary["errors"]
    assert (error["operation"], error["target"], error["type"]) == (
        "extract",
        "prices",
        "TemplateError",
    )
    assert "'prices'" in error["message"]
    assert not any("prices" in entry for entry in summary["eval_breakdown"][0]["info"])


# -- errors and summary ---------------------------------------------------------------------


async def test_infrastructure_failure_marks_the_node_error_and_the_evaluation_incomplete(
    make_evaluator,
):
    def verify(request):
        raise InfraError("rate limited for good")

    ev = make_evaluator(verify=verify)
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify(claim="c", node=node) is False
    summary = ev.get_summary()
    assert node.status == "error" and "rate limited" in node.error
    assert summary["status"] == "incomplete"
    assert summary["errors"][0]["operation"] == "verify"


async def test_a_verification_cancelled_before_its_verdict_leaves_its_leaf_error(
    make_evaluator,
):
    """A judge cancelling its own `verify` (`task.cancel()`) gets the cancellation; the leaf
    got no verdict, so it is `error` and the evaluation incomplete, never a failed check."""
    started = asyncio.Event()

    async def verify(request):
        started.set()
        await asyncio.Event().wait()

    ev = make_evaluator(verify=verify)
    node = ev.add_leaf(id="x", desc="x")
    check = asyncio.ensure_future(ev.verify(claim="c", node=node))
    await started.wait()
    check.cancel()
    with pytest.raises(asyncio.CancelledError):
        await check
    summary = ev.get_summary()
    assert node.status == "error" and "cancelled before its verdict" in node.error
    assert summary["status"] == "incomplete"
    assert [(e["kind"], e["target"]) for e in summary["errors"]] == [("verify_cancelled", "x")]
    assert summary["verifications"] == []


async def test_summary_reflects_nodes_added_after_a_first_score(make_evaluator):
    ev = make_evaluator()
    ev.add_custom_node(result=True, id="a", desc="a", critical=False)
    assert ev.get_summary()["final_score"] == 1.0
    ev.add_custom_node(result=False, id="b", desc="b", critical=False)
    summary = ev.get_summary()
    assert summary["final_score"] == 0.5
    assert summary["tree_statistics"]["total_nodes"] == 3


def test_summary_has_the_mind2web2_keys_and_serializes(make_evaluator):
    ev = make_evaluator()
    ev.add_ground_truth({"year": 2023})
    ev.add_custom_info({"n": 1}, "stats", "url_stats")
    summary = json.loads(json.dumps(ev.get_summary()))
    for key in (
        "agent_name",
        "answer_name",
        "final_score",
        "judge_model",
        "extract_model",
        "eval_breakdown",
        "tree_statistics",
        "status",
        "errors",
        "task_id",
    ):
        assert key in summary
    assert summary["eval_breakdown"][0]["info"] == [
        {"ground_truth": {"year": 2023}},
        {"url_stats": {"n": 1}},
    ]
    assert summary["status"] == "complete"


def test_empty_summary_info_has_the_placeholder(make_evaluator):
    info = make_evaluator().get_summary()["eval_breakdown"][0]["info"]
    assert info == [{"no_info": "No information recorded"}]


def test_root_is_non_critical_with_the_requested_strategy(make_evaluator):
    ev = make_evaluator(strategy="sequential")
    assert ev.root.critical is False and ev.root.strategy.value == "sequential"
