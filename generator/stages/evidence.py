"""Runtime evidence checks: what a judge's own run shows it did wrong, beyond crashing.

They read one evaluation summary (the tree and the verification log, whose entries carry the
judge line that called `verify`) and report a leaf that speaks of a cited page but was
verified with no sources, a claim checked against a page the answer does not cite (a URL the
judge hard-coded or built itself), a claim that reads `None`, `[]` or an unfilled
`{placeholder}`, a leaf whose verdict the judge overwrote (verified failed, scored passed, or
the reverse), and an all-pass run that scores below 1 although no leaf failed (a structural
error such as an empty group). The debug and acceptance stages both run them; each finding
names the line.

`pages_never_read` reads every run on the sample answers at once: when the answers cite pages
and no verification on any of them was given a source, the judge never opened a cited page,
whatever its leaves say. The wording check above cannot see that (a leaf described as "the
release notes confirm ..." speaks of no page it knows), so both run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from generator.review.rubric import flatten, tree_of
from toolkit.urls import extract_urls, same_page

EvidenceKind = Literal[
    "source_missing",
    "source_not_cited",
    "claim_placeholder",
    "verdict_overridden",
    "all_pass_below_1",
    "pages_never_read",
]
EVIDENCE_KINDS: frozenset[str] = frozenset(get_args(EvidenceKind))

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


def _page_leaf_verifications(summary: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Any, str]]:
    """(verification, its leaf's id, the leaf's description) for each verification of a leaf
    whose description speaks of a page or source (`PAGE_WORDS`)."""
    descs = {n.id: n.desc for n in flatten(tree_of(summary))}
    for entry in _verifications(summary):
        node_id = entry.get("node_id")
        desc = descs.get(node_id or "", "")
        if PAGE_WORDS.search(desc):
            yield entry, node_id, desc


def source_missing(summary: dict[str, Any]) -> list[EvidenceFinding]:
    """Leaves whose description speaks of a page/source but whose verify got no sources."""
    found = []
    for entry, node_id, desc in _page_leaf_verifications(summary):
        if entry.get("sources"):
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


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (an extraction result), nested lists and objects too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def sources_not_cited(summary: dict[str, Any], answer: str) -> list[EvidenceFinding]:
    """Leaves that speak of a cited page but were verified only on pages the answer does not
    offer: none of their sources is cited in `answer` or returned by an extraction.

    The judge wrote those addresses itself (hard-coded, or built from the ground truth or an
    extracted name), so the claim was checked against evidence the answer never gave: a judge
    checking the pages it knows passes an answer whose own citations say nothing. A page the
    judge adds beside a cited one (a reference page for "the latest release") is fine.
    """
    info = summary.get("eval_breakdown", [{}])[0].get("info") or []
    offered = extract_urls(answer) + _strings(info)
    found = []
    for entry, node_id, desc in _page_leaf_verifications(summary):
        sources = entry.get("sources") or []
        if not sources:
            continue
        if any(same_page(url, page) for url in sources for page in offered):
            continue
        found.append(
            EvidenceFinding(
                kind="source_not_cited",
                node_id=node_id,
                line=entry.get("line"),
                message=(
                    f"leaf '{node_id}' says \"{desc}\" but its verify was given only "
                    f"{', '.join(sources[:3])}, which the answer does not cite, so the cited "
                    "page was never read; pass the URL(s) the answer cites for the claim (from "
                    "an extraction) as `sources=`, never only an address the judge writes"
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


def verdicts_overridden(summary: dict[str, Any]) -> list[EvidenceFinding]:
    """Leaves whose final status contradicts their verdict: the judge set the score itself.

    A failed claim whose leaf ends `passed` (or the reverse) cannot move the score, so the
    page check is for show. A leaf cut by a sequential parent ends `skipped`, which is fine.
    """
    statuses = {n.id: n.status for n in flatten(tree_of(summary))}
    verdicts: dict[str, list[dict[str, Any]]] = {}
    for entry in _verifications(summary):
        if entry.get("node_id"):
            verdicts.setdefault(str(entry["node_id"]), []).append(entry)
    found = []
    for node_id, entries in verdicts.items():
        final = statuses.get(node_id)
        given = {"passed" if e["passed"] else "failed" for e in entries}
        if final not in ("passed", "failed") or final in given:  # a leaf verified twice: either
            continue
        entry = entries[-1]
        decided = "passed" if entry["passed"] else "failed"
        found.append(
            EvidenceFinding(
                kind="verdict_overridden",
                node_id=node_id,
                line=entry.get("line"),
                message=(
                    f"leaf '{node_id}' was verified {decided} but ends {final}: the judge "
                    "overwrote its verdict, so the claim cannot move the score; let `verify` "
                    "decide the leaf and never set a node's score or status"
                ),
            )
        )
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


def evidence_findings(
    summary: dict[str, Any], pattern: str, answer: str | None = None
) -> list[EvidenceFinding]:
    """Every runtime evidence check on one run of the judge on `answer` (`all_pass_below_1`
    on all-pass runs only; `source_not_cited` when the answer's text is given)."""
    found = source_missing(summary)
    if answer is not None:
        found += sources_not_cited(summary, answer)
    found += claim_placeholders(summary) + verdicts_overridden(summary)
    if pattern == "all_pass":
        found += all_pass_below_one(summary)
    return found


def citing_answers(answers: Iterable[tuple[str, str]]) -> list[str]:
    """The names of the `(name, text)` sample answers that cite at least one http(s) URL."""
    return [name for name, text in answers if extract_urls(text)]


def pages_never_read(logs: Mapping[str, Iterable[dict[str, Any]]]) -> EvidenceFinding | None:
    """A finding when no run on the answers citing pages checked a claim against a page.

    `logs` maps each sample answer that cites a URL to the verification log entries of every
    run on it (any verdict pattern). One entry with a non-empty source list anywhere is
    enough: a wrong answer may legitimately skip its page check behind a failed gate. No
    answer citing a URL (`logs` empty): the task needs no page, nothing to report. The
    finding is about the judge, not one run; its line is the first verification made with
    no sources, if any.
    """
    if not logs:
        return None
    entries = [entry for log in logs.values() for entry in log]
    if any(entry.get("sources") for entry in entries):
        return None
    plain = [e for e in entries if e.get("passed") is not None and e.get("line")]
    lines = sorted({int(e["line"]) for e in plain})
    answers = ", ".join(logs)
    if lines:
        shown = ("line " if len(lines) == 1 else "lines ") + ", ".join(str(n) for n in lines)
        did = f"its verifications ({shown}) were all given no sources"
    else:
        did = "it verified no claim on them"
    return EvidenceFinding(
        kind="pages_never_read",
        line=lines[0] if lines else None,
        message=(
            f"the sample answers {answers} cite pages, but in every run on them the judge "
            f"checked no claim against a page: {did}, so no cited page was read; pass the "
            "URL(s) the answer cites for a claim as `sources=` to its verify"
        ),
    )
