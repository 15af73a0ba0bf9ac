"""Runtime evidence checks: what a judge's own run shows it did wrong, beyond crashing.

They read one evaluation summary (the tree and the verification log, whose entries carry the
judge line that called `verify`) and report a leaf that speaks of a cited page but was
verified with no sources, a claim that reads `None`, `[]` or an unfilled `{placeholder}`, and
an all-pass run that scores below 1 although no leaf failed (a structural error such as an
empty group). The debug and acceptance stages both run them; each finding names the line.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from generator.rubric import flatten, tree_of

EvidenceKind = Literal["source_missing", "claim_placeholder", "all_pass_below_1"]

# A leaf description that promises a page check.
PAGE_WORDS = re.compile(
    r"\b(cited|cites?|citing|sources?|sourced|pages?|official|links?|linked|url|urls|"
    r"website|site|announcement|article|blog)\b",
    re.IGNORECASE,
)
PLACEHOLDERS = (
    (re.compile(r"\bNone\b"), "None"),
    (re.compile(r"\[\]"), "[]"),
    (re.compile(r"\{[A-Za-z_][\w.\[\]'\"]*\}"), "an unfilled {placeholder}"),
)


class EvidenceFinding(BaseModel):
    """One problem a run's evidence shows, located at the judge line that caused it."""

    version: int = 1
    kind: EvidenceKind
    node_id: str | None = None
    line: int | None = Field(default=None, description="Judge line of the call, when known.")
    message: str


def _verifications(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in summary.get("verifications") or [] if v.get("passed") is not None]


def source_missing(summary: dict[str, Any]) -> list[EvidenceFinding]:
    """Leaves whose description speaks of a page/source but whose verify got no sources."""
    descs = {n.id: n.desc for n in flatten(tree_of(summary))}
    found = []
    for entry in _verifications(summary):
        node_id = entry.get("node_id")
        desc = descs.get(node_id or "", "")
        if entry.get("sources") or not PAGE_WORDS.search(desc):
            continue
        found.append(
            EvidenceFinding(
                kind="source_missing",
                node_id=node_id,
                line=entry.get("line"),
                message=(
                    f"leaf '{node_id}' says \"{desc}\" but its verify got no sources, so "
                    "no page was read; pass the cited URL(s) as `sources=`"
                ),
            )
        )
    return found


def claim_placeholders(summary: dict[str, Any]) -> list[EvidenceFinding]:
    """Claims that contain `None`, `[]` or an unfilled `{placeholder}`."""
    found = []
    for entry in _verifications(summary):
        claim = str(entry.get("claim") or "")
        for pattern, what in PLACEHOLDERS:
            if pattern.search(claim):
                found.append(
                    EvidenceFinding(
                        kind="claim_placeholder",
                        node_id=entry.get("node_id"),
                        line=entry.get("line"),
                        message=(
                            f"the claim verified for '{entry.get('node_id')}' contains {what}: "
                            f"{claim[:160]!r}; gate on the extracted value before the claim, "
                            "or fill the placeholder"
                        ),
                    )
                )
                break
    return found


def all_pass_below_one(summary: dict[str, Any]) -> list[EvidenceFinding]:
    """An all-pass run below 1 with no failed, skipped or errored leaf: a structural error."""
    tree = tree_of(summary)
    nodes = flatten(tree)
    if not nodes or float(summary.get("final_score") or 0.0) >= 1.0:
        return []
    if any(n.leaf and n.status in ("failed", "skipped", "error") for n in nodes):
        return []
    empty = [n.id for n in nodes if n.status == "initialized"]
    where = f" (never decided: {', '.join(empty)})" if empty else ""
    return [
        EvidenceFinding(
            kind="all_pass_below_1",
            message=(
                f"every leaf passed but the root scored {summary.get('final_score')}{where}; "
                "a group without children or a leaf never verified scores 0"
            ),
        )
    ]


def evidence_findings(summary: dict[str, Any], pattern: str) -> list[EvidenceFinding]:
    """Every runtime evidence check on one run (`all_pass_below_1` on all-pass runs only)."""
    found = source_missing(summary) + claim_placeholders(summary)
    if pattern == "all_pass":
        found += all_pass_below_one(summary)
    return found
