"""The usage totals a command reports in its `LLM:` line, kept apart from the ledger so a
command that made no LLM call can print the line without loading the LLM layer."""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolkit.llm.origin import origin_clauses


class UsageSummary(BaseModel):
    """Totals over a ledger, for the end-of-command line and review records."""

    calls: int = 0
    cached: int = 0
    cached_by_origin: dict[str, int] = Field(
        default_factory=dict,
        description="Of `cached`, the hits by where their stored answers came from "
        "(`RecordOrigin.source`): `live` from a provider call, `scripted` fixtures, "
        "`unknown` records that do not say (such as imported hand-written ones: no model is "
        "known to have given them), `before_origins` entries stored before the cache kept "
        "origins, `replay` entries an older judgegen stored while replaying (a replayed "
        "answer now has its record's origin). The line names every one but `live`.",
    )
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    saved_usd: float = Field(
        default=0.0,
        description="What the cache hits of answers recorded live (`cached_by_origin` live) "
        "would have cost: a hit of a fixture, or of an answer that does not say it was "
        "recorded live, saved nothing, and a replay's hits save nothing either.",
    )
    estimated_usd: float = 0.0
    simulated_usd: float = Field(
        default=0.0,
        description="Of `cost_usd`, what the calls a scripted policy answered were priced at: "
        "no model was called, so it is a simulated spend (kept so budget caps can be tried).",
    )
    unpriced_models: list[str] = Field(default_factory=list)
    unrecorded_calls: int = Field(
        default=0,
        description="LLM calls not in `calls` because the ledger has no row of them: still "
        "running when their client closed (their provider ignored the cancellation, past the "
        "close's wait), so what they cost is unknown to the ledger. 0: every call has its row.",
    )

    def line(self) -> str:
        """E.g. 'LLM: 412 calls, 388 cached, 1.2M in / 80k out tokens, $0.94; saved $6.10'."""
        text = (
            f"LLM: {self.calls} calls, {self.cached} cached, {_tokens(self.input_tokens)} in / "
            f"{_tokens(self.output_tokens)} out tokens, ${self.cost_usd:.2f}; "
            f"saved ${self.saved_usd:.2f}"
        )
        if self.simulated_usd:
            text += (
                f" (${self.simulated_usd:.2f} of it simulated: a scripted policy answered, "
                "no model called)"
            )
        if self.estimated_usd:
            text += f" (replayed fixtures, no model called; estimate if live: ${self.estimated_usd:.2f})"
        not_live = origin_clauses(self.cached_by_origin)
        if not_live:
            text += f"; of the cached answers, {not_live}"
        if self.errors:
            text += f"; {self.errors} failed"
        if self.unpriced_models:
            text += f"; no price for {', '.join(self.unpriced_models)}"
        if self.unrecorded_calls:
            text += f"; {self.unrecorded_calls} more with no ledger row (cost unknown)"
        return text


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.0f}k"
    return str(count)
