"""What Mind2Web 2's toolkit spends on a judge run, from the run's own record.

Mind2Web 2 (mind2web2/eval_toolkit.py) extracts with one call (none when it cannot load the
page), and verifies by majority vote (2 calls when the trials agree, a third otherwise) on the
answer alone or on every cited page it can load — all pages at once, cancelling the rest when
one supports the claim, by which time they have voted too. judgegen's verification log and
requests give the same judge's extractions and claims, so both toolkits are counted on the same
judge and verdicts. The bench models never disagree with themselves, so a vote is 2 calls.
"""

from __future__ import annotations

from typing import Any

VOTE_CALLS = 2


def m2w2_calls(summary: dict[str, Any], paid_extractions: int, pages: Any) -> int:
    """Mind2Web 2's LLM calls for a run whose summary is `summary` (skipped leaves cost none)."""
    verify = 0
    for entry in summary.get("verifications", []):
        if entry.get("passed") is None:
            continue
        sources = entry.get("sources") or []
        loaded = sum(1 for url in sources if pages.get(url) is not None)
        verify += VOTE_CALLS * (loaded if sources else 1)
    return paid_extractions + verify


def judgegen_calls(requests: list[Any]) -> int:
    """judgegen's LLM calls for backend requests (a missing page costs none; a vote 2)."""
    calls = 0
    for request in requests:
        if hasattr(request, "claim"):
            calls += 0 if request.source_missing else VOTE_CALLS
        elif request.source is None or request.source_text is not None:
            calls += 1
    return calls


def paid_extractions(requests: list[Any]) -> int:
    """Extraction requests that reach a model (the answer, or a page that was loaded)."""
    return sum(
        1
        for r in requests
        if not hasattr(r, "claim") and (r.source is None or r.source_text is not None)
    )
