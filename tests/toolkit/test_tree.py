"""The rubric tree's scoring contract: gate then average, sequential cuts, statuses."""

from __future__ import annotations

import pytest

from toolkit.errors import TreeError
from toolkit.tree import AggregationStrategy, VerificationNode, tree_statistics


def leaf(node_id: str, score: float, *, critical: bool = False, status: str | None = None):
    default = "passed" if score == 1.0 else "failed"
    return VerificationNode(
        id=node_id, desc=node_id, critical=critical, score=score, status=status or default
    )


def parent(node_id: str, *children, critical=False, strategy=AggregationStrategy.PARALLEL):
    node = VerificationNode(id=node_id, desc=node_id, critical=critical, strategy=strategy)
    for child in children:
        node.add_node(child)
    return node


def test_parallel_parent_averages_non_critical_children():
    root = parent("root", leaf("a", 1), leaf("b", 0), leaf("c", 1), leaf("d", 1))
    assert root.compute_score(mutate=True) == pytest.approx(0.75)
    assert root.status == "partial"


def test_failed_critical_child_gates_parent_to_zero():
    root = parent("root", leaf("gate", 0, critical=True), leaf("soft", 1))
    assert root.compute_score(mutate=True) == 0.0
    assert root.status == "failed"


def test_passed_critical_children_leave_the_average_of_the_soft_ones():
    root = parent("root", leaf("gate", 1, critical=True), leaf("a", 1), leaf("b", 0))
    assert root.compute_score(mutate=True) == pytest.approx(0.5)


def test_all_critical_children_passing_scores_one():
    root = parent("root", leaf("a", 1, critical=True), leaf("b", 1, critical=True))
    assert root.compute_score(mutate=True) == 1.0
    assert root.status == "passed"


def test_critical_child_with_partial_score_counts_as_below_one():
    sub = parent("sub", leaf("x", 1), leaf("y", 0))
    sub.critical = True  # a critical subtree whose own children are soft scores 0.5
    root = parent("root", sub, leaf("soft", 1))
    assert root.compute_score(mutate=True) == 0.0
    assert sub.score == pytest.approx(0.5)
    assert sub.status == "partial"


def test_sequential_skips_every_sibling_after_the_first_failure():
    root = parent(
        "root",
        leaf("a", 1),
        leaf("b", 0),
        leaf("c", 1),
        leaf("d", 1),
        strategy=AggregationStrategy.SEQUENTIAL,
    )
    assert root.compute_score(mutate=True) == pytest.approx(0.25)
    assert [c.status for c in root.children] == ["passed", "failed", "skipped", "skipped"]
    assert [c.score for c in root.children] == [1.0, 0.0, 0.0, 0.0]


def test_sequential_cut_at_a_partial_child():
    partial = parent("p", leaf("x", 1), leaf("y", 0))
    root = parent(
        "root", leaf("a", 1), partial, leaf("c", 1), strategy=AggregationStrategy.SEQUENTIAL
    )
    assert root.compute_score(mutate=True) == pytest.approx((1 + 0.5 + 0) / 3)
    assert root.children[2].status == "skipped"


def test_sequential_cut_leaves_the_skipped_subtree_as_is():
    later = parent("later", leaf("x", 1), leaf("y", 1))
    root = parent("root", leaf("a", 0), later, strategy=AggregationStrategy.SEQUENTIAL)
    root.compute_score(mutate=True)
    assert later.status == "skipped" and later.score == 0.0
    assert [c.status for c in later.children] == ["passed", "passed"]


def test_critical_child_after_the_sequential_cut_gates_the_parent():
    root = parent(
        "root",
        leaf("a", 0),
        leaf("must", 1, critical=True),
        strategy=AggregationStrategy.SEQUENTIAL,
    )
    assert root.compute_score(mutate=True) == 0.0
    assert root.children[1].status == "skipped"


def test_sequential_with_all_passing_children_scores_one():
    root = parent("root", leaf("a", 1), leaf("b", 1), strategy=AggregationStrategy.SEQUENTIAL)
    assert root.compute_score(mutate=True) == 1.0


def test_critical_parent_rejects_a_non_critical_child():
    node = VerificationNode(id="crit", desc="crit", critical=True)
    with pytest.raises(TreeError, match="cannot have non-critical child"):
        node.add_node(leaf("soft", 1))


def test_tree_error_is_a_value_error_for_mind2web2_judges():
    node = VerificationNode(id="crit", desc="crit", critical=True)
    with pytest.raises(ValueError):
        node.add_node(leaf("soft", 1))


def test_internal_node_without_children_scores_zero_and_stays_initialized():
    empty = VerificationNode(id="empty", desc="empty")
    root = parent("root", empty, leaf("a", 1))
    assert root.compute_score(mutate=True) == pytest.approx(0.5)
    assert empty.status == "initialized" and empty.score == 0.0


def test_zero_parent_is_failed_when_a_direct_child_failed():
    root = parent("root", leaf("a", 0), leaf("b", 0))
    root.compute_score(mutate=True)
    assert root.status == "failed"


def test_zero_parent_is_skipped_when_no_direct_child_failed():
    root = parent("root", leaf("a", 0, status="skipped"), leaf("b", 0, status="skipped"))
    root.compute_score(mutate=True)
    assert root.status == "skipped"


def test_zero_parent_over_a_failed_grandchild_only_is_skipped():
    inner = parent("inner", leaf("x", 0, status="skipped"))
    root = parent("root", inner, leaf("b", 0, status="initialized"))
    root.compute_score(mutate=True)
    assert inner.status == "skipped"
    assert root.status == "skipped"


def test_error_leaf_scores_zero_without_being_a_failure():
    err = VerificationNode(id="e", desc="e", status="error", error="LLMError: boom")
    root = parent("root", err, leaf("b", 1))
    assert root.compute_score(mutate=True) == pytest.approx(0.5)
    assert root.to_dict()["children"][0]["error"] == "LLMError: boom"


def test_scores_are_recomputed_on_every_read():
    a = leaf("a", 0)
    root = parent("root", a, leaf("b", 1))
    assert root.aggregated_score == pytest.approx(0.5)
    a.score, a.status = 1.0, "passed"
    assert root.aggregated_score == 1.0


def test_to_dict_has_the_mind2web2_shape_without_error_key_when_clean():
    root = parent("root", leaf("a", 1))
    root.compute_score(mutate=True)
    data = root.to_dict()
    assert set(data) == {"id", "desc", "critical", "score", "status", "strategy", "children"}
    assert data["strategy"] == "parallel"


def test_tree_statistics_counts_depth_nodes_and_leaves():
    root = parent("root", parent("p", leaf("x", 1), parent("q", leaf("y", 1))), leaf("z", 0))
    assert tree_statistics(root) == {"depth": 3, "total_nodes": 6, "leaf_nodes": 3}


def test_compute_score_without_mutate_writes_nothing():
    a, b = leaf("a", 1), leaf("b", 0)
    root = parent("root", a, b)
    assert root.compute_score() == pytest.approx(0.5)
    assert (root.score, root.status) == (0.0, "initialized")


def test_compute_score_without_mutate_applies_no_sequential_cut():
    root = parent(
        "root",
        leaf("a", 0),
        leaf("b", 1),
        leaf("c", 1),
        strategy=AggregationStrategy.SEQUENTIAL,
    )
    assert root.compute_score() == pytest.approx(2 / 3)
    assert [c.status for c in root.children] == ["failed", "passed", "passed"]
    assert [c.score for c in root.children] == [0.0, 1.0, 1.0]


def test_peeking_at_a_sequential_score_mid_run_does_not_skip_later_steps():
    first = VerificationNode(id="first", desc="first")
    root = parent("root", first, leaf("second", 1), strategy=AggregationStrategy.SEQUENTIAL)
    assert root.compute_score() == pytest.approx(0.5)
    first.score, first.status = 1.0, "passed"
    assert root.compute_score(mutate=True) == 1.0
    assert [c.status for c in root.children] == ["passed", "passed"]
