"""Reading a judge's rubric tree the way a reviewer does: outline, counts and diffs.

Trees come from summaries (`eval_breakdown[0].verification_tree`), usually of an all-pass
debug run, so the skeleton shows every node a judge can build. Diffs match nodes by id,
since regeneration is asked to keep ids stable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

RUBRIC_VERSION = 1


class RubricNode(BaseModel):
    """One node of a skeleton, flattened: where it sits and what it requires."""

    id: str
    desc: str
    critical: bool
    strategy: str
    parent: str | None
    index: int = Field(default=0, description="Position among its parent's children, from 0.")
    depth: int
    leaf: bool
    status: str = "initialized"


class NodeChange(BaseModel):
    """A node present in both trees whose description, marks or position changed."""

    id: str
    fields: dict[str, tuple[Any, Any]] = Field(description="field -> (old, new)")


class RubricDiff(BaseModel):
    """Nodes added, removed and changed between two skeletons."""

    version: int = RUBRIC_VERSION
    added: list[RubricNode] = Field(default_factory=list)
    removed: list[RubricNode] = Field(default_factory=list)
    changed: list[NodeChange] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the two skeletons are the same."""
        return not (self.added or self.removed or self.changed)

    def to_text(self) -> str:
        """A short human-readable listing, one line per difference."""
        if self.empty:
            return "rubric: no changes\n"
        lines = [f"+ {n.id}: {n.desc}{_marks(n)}" for n in self.added]
        lines += [f"- {n.id}: {n.desc}{_marks(n)}" for n in self.removed]
        for change in self.changed:
            parts = [f"{f}: {old!r} -> {new!r}" for f, (old, new) in sorted(change.fields.items())]
            lines.append(f"~ {change.id}: " + "; ".join(parts))
        return "\n".join(lines) + "\n"


def tree_of(summary: dict[str, Any]) -> dict[str, Any]:
    """The verification tree inside a result summary (or the tree itself if given one)."""
    if "eval_breakdown" in summary:
        return summary["eval_breakdown"][0]["verification_tree"]
    return summary


def flatten(tree: dict[str, Any]) -> list[RubricNode]:
    """Every node, depth first, in construction order."""
    out: list[RubricNode] = []
    stack: list[tuple[dict[str, Any], str | None, int, int]] = [(tree, None, 0, 0)]
    while stack:
        node, parent, index, depth = stack.pop()
        children = node.get("children") or []
        out.append(
            RubricNode(
                id=node["id"],
                desc=node.get("desc", ""),
                critical=bool(node.get("critical")),
                strategy=str(node.get("strategy", "parallel")),
                parent=parent,
                index=index,
                depth=depth,
                leaf=not children,
                status=str(node.get("status", "initialized")),
            )
        )
        stack.extend(
            (child, node["id"], position, depth + 1)
            for position, child in reversed(list(enumerate(children)))
        )
    return out


def _marks(node: RubricNode) -> str:
    marks = []
    if node.critical:
        marks.append("critical")
    if not node.leaf and node.strategy == "sequential":
        marks.append("sequential")
    return f"  [{', '.join(marks)}]" if marks else ""


def outline(tree: dict[str, Any], *, style: Literal["text", "markdown"] = "text") -> str:
    """An indented outline with critical/sequential marks and a count line."""
    nodes = flatten(tree)
    lines = []
    for node in nodes:
        indent = "  " * node.depth
        text = f"{node.id}: {node.desc}{_marks(node)}"
        lines.append(f"{indent}- {text}" if style == "markdown" else f"{indent}{text}")
    stats = statistics(tree)
    lines.append("")
    lines.append(
        f"{stats['total_nodes']} nodes, {stats['leaf_nodes']} leaves, depth {stats['depth']}, "
        f"{stats['critical_nodes']} critical, {stats['sequential_nodes']} sequential"
    )
    return "\n".join(lines) + "\n"


def statistics(tree: dict[str, Any]) -> dict[str, int]:
    """Counts a reviewer wants: nodes, leaves, depth, critical and sequential nodes."""
    nodes = flatten(tree)
    return {
        "total_nodes": len(nodes),
        "leaf_nodes": sum(n.leaf for n in nodes),
        "depth": max(n.depth for n in nodes),
        "critical_nodes": sum(n.critical for n in nodes),
        "sequential_nodes": sum(not n.leaf and n.strategy == "sequential" for n in nodes),
    }


def diff_trees(old: dict[str, Any], new: dict[str, Any]) -> RubricDiff:
    """Nodes added, removed, and changed (description, critical, strategy, parent, index), by
    id; an empty tree (`{}`: no judge on that side) makes every node of the other added/removed.

    An index change is reported only for a node that kept its parent and whose parent is
    sequential in either tree: there order decides which siblings are skipped, while under a
    parallel parent (gate then average) order never changes a score."""
    before = {n.id: n for n in flatten(old)} if old else {}
    after = {n.id: n for n in flatten(new)} if new else {}
    diff = RubricDiff(
        added=[n for i, n in after.items() if i not in before],
        removed=[n for i, n in before.items() if i not in after],
    )
    for node_id, new_node in after.items():
        old_node = before.get(node_id)
        if old_node is None:
            continue
        fields = {
            name: (getattr(old_node, name), getattr(new_node, name))
            for name in ("desc", "critical", "strategy", "parent")
            if getattr(old_node, name) != getattr(new_node, name)
            and not (name == "strategy" and old_node.leaf and new_node.leaf)
        }
        if old_node.index != new_node.index and _under_sequential(
            old_node, new_node, before, after
        ):
            fields["index"] = (old_node.index, new_node.index)
        if fields:
            diff.changed.append(NodeChange(id=node_id, fields=fields))
    return diff


def _under_sequential(
    old_node: RubricNode,
    new_node: RubricNode,
    before: dict[str, RubricNode],
    after: dict[str, RubricNode],
) -> bool:
    """True when the node kept its parent and that parent is sequential in either tree."""
    if old_node.parent is None or old_node.parent != new_node.parent:
        return False
    strategies = (before[old_node.parent].strategy, after[new_node.parent].strategy)
    return "sequential" in strategies
