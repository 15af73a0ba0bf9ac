"""The rubric tree and its scoring contract ("gate then average"), exactly as in Mind2Web 2.

A leaf holds 0 or 1. A parent first scores its children; if it is sequential, every sibling
after the first child scoring below 1 becomes `skipped` with score 0 (its subtree is left as
is). Then any critical child below 1 gates the parent to 0; all-critical children give 1;
otherwise the parent is the mean of its non-critical children. judgegen adds one state,
`error`: a leaf whose verification hit an infrastructure failure (score 0, never a verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import TreeError

NodeStatus = Literal["passed", "failed", "partial", "skipped", "initialized", "error"]


class AggregationStrategy(StrEnum):
    """How a parent combines its children's scores."""

    PARALLEL = "parallel"
    SEQUENTIAL = "sequential"


class VerificationNode(BaseModel):
    """One rubric item: a leaf checked by a verification or a Python check, or a parent."""

    model_config = ConfigDict(validate_assignment=False, use_enum_values=False)

    id: str = Field(description="Unique within one evaluation; `root` is reserved.")
    desc: str = Field(description="What this node requires, in words a reviewer reads.")
    critical: bool = Field(default=False, description="Below 1, it scores its parent 0.")
    score: float = Field(default=0.0, description="0 or 1 for a leaf; in [0, 1] for a parent.")
    status: NodeStatus = Field(default="initialized", description="Outcome; set by scoring.")
    strategy: AggregationStrategy = Field(
        default=AggregationStrategy.PARALLEL, description="How a parent combines its children."
    )
    children: list[VerificationNode] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Why the node is in `error` state.")

    @property
    def claim(self) -> str:
        """Mind2Web 2 alias of `desc`."""
        return self.desc

    @property
    def is_leaf(self) -> bool:
        """True when the node has no children."""
        return not self.children

    @property
    def aggregated_score(self) -> float:
        """Score of the subtree, recomputed on every read (never a stale first score)."""
        return self.compute_score(mutate=True)

    def add_node(self, node: VerificationNode) -> None:
        """Append `node` as the last child; a critical parent accepts only critical children."""
        if not isinstance(node, VerificationNode):
            raise TreeError(f"child of '{self.id}' must be a VerificationNode, got {type(node)!r}")
        if node is self:
            raise TreeError(f"node '{self.id}' cannot be its own child")
        if self.critical and not node.critical:
            raise TreeError(
                f"Critical node '{self.id}' cannot have non-critical child '{node.id}'. "
                "All children of critical nodes must also be critical."
            )
        self.children.append(node)

    def compute_score(self, *, mutate: bool = False) -> float:
        """Score this subtree with Mind2Web 2's semantics, so ported judges get its numbers.

        Without `mutate` (the default, as in Mind2Web 2) nothing is written and sequential
        parents apply no cut: a judge may peek at a subtree's score mid-run without marking
        later steps skipped. With `mutate`, the sequential cut zeroes and skips every sibling
        after the first child below 1, and scores and statuses are written back; judgegen's own
        scoring (`Evaluator.score`, `aggregated_score`) always mutates.
        """
        if not self.children:
            return self.score
        children = self.children
        scores = [child.compute_score(mutate=mutate) for child in children]
        if mutate and self.strategy is AggregationStrategy.SEQUENTIAL:
            cut = next((i for i, s in enumerate(scores) if s < 1.0), len(scores))
            for i in range(cut + 1, len(scores)):
                scores[i] = 0.0
                _write(children[i], 0.0, "skipped")
        score = _gate_then_average(children, scores)
        if mutate:
            _write(self, score, _parent_status(children, score))
        return score

    def iter_nodes(self) -> Iterator[VerificationNode]:
        """This node and every descendant, depth first, in construction order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def leaves(self) -> list[VerificationNode]:
        """Every leaf under this node (the node itself when it is a leaf)."""
        return [n for n in self.iter_nodes() if not n.children]

    def to_dict(self) -> dict:
        """The Mind2Web 2 tree shape; `error` appears only on nodes in the error state."""
        out = {
            "id": self.id,
            "desc": self.desc,
            "critical": self.critical,
            "score": self.score,
            "status": self.status,
            "strategy": self.strategy.value,
            "children": [child.to_dict() for child in self.children],
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def _write(node: VerificationNode, score: float, status: NodeStatus) -> None:
    # Scoring runs on every read of a 600-node tree; pydantic's validating __setattr__
    # dominated its cost, and both values are valid by construction.
    fields = node.__dict__
    fields["score"] = score
    fields["status"] = status


def _gate_then_average(children: list[VerificationNode], scores: list[float]) -> float:
    soft_total = 0.0
    soft_count = 0
    for score, child in zip(scores, children, strict=True):
        if child.critical:
            if score < 1.0:
                return 0.0
        else:
            soft_total += score
            soft_count += 1
    return soft_total / soft_count if soft_count else 1.0


def _parent_status(children: list[VerificationNode], score: float) -> NodeStatus:
    if score == 1.0:
        return "passed"
    if score == 0.0:
        return "failed" if any(c.status == "failed" for c in children) else "skipped"
    return "partial"


def tree_statistics(root: VerificationNode) -> dict[str, int]:
    """Depth (edges from the root), total nodes and leaves, as Mind2Web 2 reports them."""
    depth = total = leaves = 0
    stack = [(root, 0)]
    while stack:
        node, level = stack.pop()
        total += 1
        depth = max(depth, level)
        if not node.children:
            leaves += 1
        stack.extend((child, level + 1) for child in node.children)
    return {"depth": depth, "total_nodes": total, "leaf_nodes": leaves}


def prerequisite_leaves(
    node: VerificationNode,
    parent_of: Callable[[VerificationNode], VerificationNode | None],
    extra: Sequence[VerificationNode] | None = None,
) -> Iterator[VerificationNode]:
    """The leaves that gate `node`, lazily (a caller stops at the first failed or skipped one):
    those of `extra`, then at every level up to the root those of each critical sibling and,
    under a sequential parent, of each earlier sibling."""
    if any(extra_node is node for extra_node in extra or []):
        raise TreeError("A node cannot depend on itself.")
    for extra_node in extra or []:
        yield from extra_node.leaves()
    current = node
    while (parent := parent_of(current)) is not None:
        before = True
        for sibling in parent.children:
            if sibling is current:
                before = False
                continue
            sequential_pred = before and parent.strategy is AggregationStrategy.SEQUENTIAL
            if sibling.critical or sequential_pred:
                yield from sibling.leaves()
        current = parent
