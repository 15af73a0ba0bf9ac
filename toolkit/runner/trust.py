"""What the parent checks before an outcome becomes a result: the judge's output is evidence.

- The code that ran must be the approved bytes: an outcome reporting another hash is a
  protocol violation.
- The parent scores: every node's score and the final score are recomputed from the returned
  tree with `toolkit.tree`'s scoring (deterministic); a reported score that disagrees is a
  protocol violation (within 1e-9 of the tree's it agrees, unless only one of the two is 1,
  the score of a success), and so is a node scored outside [0, 1] (as Mind2Web 2's tree refuses:
  a leaf set to 2 makes its root a success above 1) and a complete outcome without a
  numeric final score (nothing to record, no score for webeval).
- An evaluation that violated the sandbox keeps none of the judge's data (info, tree, messages
  of its own exceptions): whatever it read must not reach the results.
Each violation makes the outcome incomplete.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from toolkit.runner.judging import with_errors
from toolkit.sandbox.protocol import EvalOutcome, error_dict
from toolkit.tree import VerificationNode

VIOLATION_KINDS = frozenset({"sandbox_violation", "protocol_violation"})
WITHHOLDING_KINDS = frozenset({"sandbox_violation"})
_TOLERANCE = 1e-9
WITHHELD = "withheld: the judge violated the sandbox, so nothing it produced is recorded"


def _node_scores(tree: dict[str, Any], path: str = "") -> dict[str, float]:
    """Every node's reported score by its position in the tree."""
    here = f"{path}/{tree.get('id', '?')}"
    scores = {here: float(tree.get("score", 0.0))}
    for index, child in enumerate(tree.get("children") or []):
        scores.update(_node_scores(child, f"{here}[{index}]"))
    return scores


def _is_score(value: Any) -> bool:
    """Whether `value` is a final score: a finite number (a bool is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def score_problem(summary: dict[str, Any]) -> str | None:
    """Why the summary's scores disagree with its own tree, or None when they agree."""
    reported = summary.get("final_score")
    if reported is not None and not _is_score(reported):
        return f"the final score {str(reported)[:40]!r} is not a number"
    breakdown = summary.get("eval_breakdown") or [{}]
    tree = breakdown[0].get("verification_tree") if isinstance(breakdown[0], dict) else None
    if not tree:
        return None if reported is None else "a final score without a verification tree"
    try:
        root = VerificationNode.model_validate(tree)
        claimed = _node_scores(tree)
    except (ValidationError, TypeError, ValueError) as exc:
        return f"the verification tree is malformed: {str(exc)[:300]}"
    out_of_range = [where for where, score in claimed.items() if not 0.0 <= score <= 1.0]
    if out_of_range:  # the last in tree order has none below it: the node that went wrong
        where = out_of_range[-1]
        return f"node {where} reports score {claimed[where]}, outside [0, 1]"
    recomputed = root.compute_score(mutate=True)
    for where, score in _node_scores(root.to_dict()).items():
        if abs(claimed.get(where, -1.0) - score) > _TOLERANCE:
            return f"node {where} reports score {claimed.get(where)}, its children give {score}"
    if reported is None or abs(float(reported) - recomputed) > _TOLERANCE:
        return f"final score {reported} disagrees with the tree's score {recomputed}"
    if (float(reported) >= 1.0) != (recomputed >= 1.0):  # success is exactly 1: no tolerance
        return f"final score {reported} and the tree's score {recomputed} disagree on success"
    return None


def _withheld(outcome: EvalOutcome) -> EvalOutcome:
    """The outcome without anything the judge produced: no summary data, no judge messages."""
    errors = [
        entry
        if entry.get("kind") in VIOLATION_KINDS
        else {"type": entry.get("type"), "kind": entry.get("kind"), "message": WITHHELD}
        for entry in outcome.errors
    ]
    summary = None
    if outcome.summary is not None:
        summary = {
            "status": "incomplete",
            "eval_breakdown": [{"info": [{"withheld": WITHHELD}], "verification_tree": {}}],
        }
    return outcome.model_copy(update={"errors": errors, "summary": summary})


def trusted_outcome(outcome: EvalOutcome, judge_sha256: str | None) -> EvalOutcome:
    """`outcome` after the parent's checks (see the module docstring)."""
    problems = []
    if judge_sha256 and outcome.judge_sha256 and outcome.judge_sha256 != judge_sha256:
        problems.append(f"ran judge {outcome.judge_sha256[:19]}…, not the approved one")
    if outcome.summary is not None:
        problem = score_problem(outcome.summary)
        if problem:
            problems.append(f"the judge's scores do not follow from its tree: {problem}")
    if outcome.status == "complete" and (outcome.summary or {}).get("final_score") is None:
        problems.append("the evaluation reports complete with no final score")
    outcome = with_errors(
        outcome,
        [error_dict("ProtocolViolation", "protocol_violation", text) for text in problems],
    )
    if any(entry.get("kind") in WITHHOLDING_KINDS for entry in outcome.errors):
        return _withheld(outcome)
    return outcome
