"""Rubric skeleton outlines and node-level diffs."""

from __future__ import annotations

from generator.review.rubric import diff_trees, outline, statistics


def node(node_id, *children, critical=False, strategy="parallel", desc=None):
    return {
        "id": node_id,
        "desc": desc or node_id,
        "critical": critical,
        "strategy": strategy,
        "score": 1.0,
        "status": "passed",
        "children": list(children),
    }


TREE = node(
    "root",
    node("commit", node("commit_id", critical=True), node("date"), strategy="sequential"),
    node("authors", node("author_1")),
)


def test_outline_indents_and_marks_critical_and_sequential():
    text = outline(TREE)
    assert "  commit: commit  [sequential]" in text
    assert "    commit_id: commit_id  [critical]" in text
    assert text.endswith("6 nodes, 3 leaves, depth 2, 1 critical, 1 sequential\n")


def test_markdown_outline_uses_list_items():
    assert "  - commit: commit  [sequential]" in outline(TREE, style="markdown")


def test_statistics_counts_nodes():
    assert statistics(TREE)["leaf_nodes"] == 3


def test_identical_trees_have_an_empty_diff():
    assert diff_trees(TREE, TREE).empty


def test_diff_reports_added_removed_and_changed_nodes():
    new = node(
        "root",
        node(
            "commit",
            node("commit_id", critical=True),
            node("date", desc="date matches"),
            node("provenance", critical=True),
            strategy="parallel",
        ),
        node("authors"),
    )
    diff = diff_trees(TREE, new)
    assert [n.id for n in diff.added] == ["provenance"]
    assert [n.id for n in diff.removed] == ["author_1"]
    changed = {c.id: c.fields for c in diff.changed}
    assert changed["commit"] == {"strategy": ("sequential", "parallel")}
    assert changed["date"] == {"desc": ("date", "date matches")}
    assert "+ provenance" in diff.to_text()


def test_moving_a_node_is_a_parent_change():
    new = node(
        "root",
        node("commit", node("commit_id", critical=True), strategy="sequential"),
        node("authors", node("author_1"), node("date")),
    )
    changed = {c.id: c.fields for c in diff_trees(TREE, new).changed}
    assert changed["date"] == {"parent": ("commit", "authors")}


def test_reordering_children_of_a_sequential_parent_is_an_index_change():
    new = node(
        "root",
        node("commit", node("date"), node("commit_id", critical=True), strategy="sequential"),
        node("authors", node("author_1")),
    )
    diff = diff_trees(TREE, new)
    changed = {c.id: c.fields for c in diff.changed}
    assert changed == {"date": {"index": (1, 0)}, "commit_id": {"index": (0, 1)}}
    assert "~ date: index: 1 -> 0" in diff.to_text()


def test_reordering_children_of_a_parallel_parent_is_not_a_change():
    new = node(
        "root",
        node("authors", node("author_1")),
        node("commit", node("commit_id", critical=True), node("date"), strategy="sequential"),
    )
    assert diff_trees(TREE, new).empty
