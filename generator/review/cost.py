"""What checking a judge cost in LLM calls: acceptance and mutation testing, each and together.

The review record's `checking_cost` answers "what did it cost to find out this judge judges
right": the extractions and verifications acceptance made (every round), those mutation
testing made inside `generate`/`regenerate` (every pass), and those of the last
`judgegen mutate --write-review` recorded in it. Drafting, repairs, reflection and the debug
stage's extractions are generation, not checking: the record's `usage` table has them.
A replayed fixture costs $0 (no model was called); what the same calls would cost live is kept
apart as an estimate, never added to the cost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, computed_field

CHECKING_COST_VERSION = 1
COVERS = (
    "LLM calls of the checks: acceptance (every round), mutation testing inside generate or "
    "regenerate (every pass), and the last `judgegen mutate --write-review` recorded here; "
    "not drafting, repairs, reflection or debug extraction (see usage). Replayed fixtures "
    "cost $0; estimated_live_usd is what the same calls would cost live."
)


class LLMSpend(BaseModel):
    """The LLM calls one check made and what they cost."""

    calls: int = 0
    cost_usd: float = Field(default=0.0, description="Paid: $0 for replays and cache hits.")
    estimated_live_usd: float | None = Field(
        default=None, description="Replays only: what the same calls would cost live."
    )
    note: str = Field(default="", description="What the figures leave out, if anything.")

    def add(self, response: Any, *, replayed: bool) -> None:
        """Count one answered call (an `LLMResponse`); a replay costs nothing."""
        self.calls += 1
        if response.cache_hit:
            return
        if replayed:
            estimate = (self.estimated_live_usd or 0.0) + response.cost_usd
            self.estimated_live_usd = round(estimate + response.estimated_usd, 6)
        else:
            self.cost_usd = round(self.cost_usd + response.cost_usd, 6)

    def line(self) -> str:
        """`14 LLM calls, $0.0123`, or `…, $0.0000 (replayed fixtures, no model called;
        estimate if live: $0.0042)`, plus the note."""
        text = f"{self.calls} LLM calls, ${self.cost_usd:.4f}"
        if self.estimated_live_usd is not None:
            text += (
                " (replayed fixtures, no model called; estimate if live: "
                f"${self.estimated_live_usd:.4f})"
            )
        return text + (f"; {self.note}" if self.note else "")


class CheckingCost(BaseModel):
    """What checking the judge cost, per check and in total (see the module docstring)."""

    version: int = CHECKING_COST_VERSION
    covers: str = COVERS
    acceptance: LLMSpend = Field(default_factory=LLMSpend)
    mutation: LLMSpend = Field(
        default_factory=LLMSpend, description="Mutation testing inside generate/regenerate."
    )
    mutate_command: LLMSpend | None = Field(
        default=None, description="The last `judgegen mutate --write-review` recorded here."
    )

    def parts(self) -> list[tuple[str, LLMSpend]]:
        """(label, spend) of each check that has a figure, in order."""
        rows = [("acceptance", self.acceptance), ("mutation testing in generate", self.mutation)]
        if self.mutate_command is not None:
            rows.append(("judgegen mutate --write-review", self.mutate_command))
        return rows

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_calls(self) -> int:
        """LLM calls of every check."""
        return sum(spend.calls for _, spend in self.parts())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_usd(self) -> float:
        """What every check cost (replays: $0)."""
        return round(sum(spend.cost_usd for _, spend in self.parts()), 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_estimated_live_usd(self) -> float | None:
        """What the replayed calls would cost live (None when nothing was replayed)."""
        estimates = [s.estimated_live_usd for _, s in self.parts() if s.estimated_live_usd]
        replayed = any(s.estimated_live_usd is not None for _, s in self.parts())
        return round(sum(e for e in estimates if e), 6) if replayed else None
