"""Dollar prices per model, used for the ledger, the budget cap and the "saved" figure.

Prices are US dollars per million tokens. A model matches the longest table key that is its
name, or its name's start followed only by version numbers, a date or "latest"
("claude-sonnet-4-5-20250929", "o4-mini-2025-04-16", "claude-3-5-haiku-latest"), so dated
snapshots and newer versions use their family's price. A named variant ("gpt-5-pro",
"o3-pro", "gpt-4o-audio-preview") is not its base model: such tiers cost up to ten times
more, and pricing one as its base would let a budget cap overspend tenfold unseen. The table is
configurable (`[llm.prices]` in judgegen.toml); a model with no price costs 0 and is listed
as unpriced in the summary, so a missing price is visible rather than silently cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from toolkit.llm.endpoint import kind_of

if TYPE_CHECKING:  # settings import prices; they need no request models
    from toolkit.llm.models import Usage

PER_TOKENS = 1_000_000


class ModelPrice(BaseModel):
    """Dollars per million tokens for one model family."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(description="Uncached input tokens.")
    output: float = Field(description="Output tokens (including reasoning tokens).")
    cache_read: float | None = Field(default=None, description="Cache reads; default = input.")
    cache_write: float | None = Field(default=None, description="Cache writes; default = input.")

    def cost(self, usage: Usage) -> float:
        """Dollar cost of `usage` at this price."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
        )
        return total / PER_TOKENS


def _p(inp: float, out: float, read: float, write: float | None = None) -> ModelPrice:
    return ModelPrice(input=inp, output=out, cache_read=read, cache_write=write)


DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-sonnet": _p(3.0, 15.0, 0.30, 3.75),
    "claude-opus": _p(5.0, 25.0, 0.50, 6.25),
    "claude-haiku": _p(1.0, 5.0, 0.10, 1.25),
    "claude-opus-4": _p(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-6": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-7": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-8": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-5-5": _p(4.0, 20.0, 0.20, 5.0),
    "claude-sonnet-4": _p(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-5": _p(2.0, 10.0, 0.20, 2.50),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.0, 0.08, 1.0),
    "o4-mini": _p(1.10, 4.40, 0.275),
    "o3": _p(2.0, 8.0, 0.50),
    "o3-mini": _p(1.10, 4.40, 0.55),
    "gpt-4.1": _p(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "gpt-4o": _p(2.50, 10.0, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "gpt-5": _p(1.25, 10.0, 0.125),
    "gpt-5-mini": _p(0.25, 2.0, 0.025),
    "gpt-5-nano": _p(0.05, 0.40, 0.005),
}
"""List prices (per million tokens) as last published for each family; bare family keys
("claude-sonnet") cover newer models of the family at the family's last known price. Check
and override them in judgegen.toml (`[llm.prices."model"]`) before relying on budget caps."""


FREE_PROVIDERS = frozenset({"replay"})
"""Providers that call no model: their responses cost nothing. The price table still says what
the same calls would cost live, which is shown only as a labelled estimate."""
SIMULATED_PROVIDERS = frozenset({"scripted"})
"""Providers whose answers a hand-written policy writes: priced as live calls, so a budget cap
can be tried on them, and reported as a simulated spend, never as money paid."""


def is_free(provider: str) -> bool:
    """Whether the provider `provider` names (an identity such as `replay:/dir`) is free."""
    return kind_of(provider) in FREE_PROVIDERS


def is_simulated(provider: str) -> bool:
    """Whether the provider `provider` names (`scripted:pkg.mod:func`) answers from a policy."""
    return kind_of(provider) in SIMULATED_PROVIDERS


class PriceTable(BaseModel):
    """Model family → price; `price_for` resolves a model name by longest prefix, once per
    model name (every LLM call is priced, so the prefix scan must not run per call)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    _resolved: dict[str, ModelPrice | None] = PrivateAttr(default_factory=dict)

    @classmethod
    def with_overrides(cls, overrides: dict[str, ModelPrice] | None) -> PriceTable:
        """The default table with `overrides` added or replacing entries."""
        return cls(prices={**DEFAULT_PRICES, **(overrides or {})})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy that resolves model names afresh (pydantic would share the resolutions,
        so a copy with other prices would go on charging the old ones)."""
        copied = super().model_copy(update=update, deep=deep)
        object.__setattr__(copied, "__pydantic_private__", {"_resolved": {}})
        return copied

    def price_for(self, model: str) -> ModelPrice | None:
        """The price of `model`, or None when no table key is a whole-word prefix of it."""
        private = cast("dict[str, Any]", self.__pydantic_private__)  # not pydantic's __getattr__
        resolved: dict[str, ModelPrice | None] = private["_resolved"]
        if model not in resolved:
            name = model.split("/")[-1]
            matches = [key for key in self.prices if _is_family(name, key)]
            resolved[model] = self.prices[max(matches, key=len)] if matches else None
        return resolved[model]

    def cost(self, model: str, usage: Usage) -> float:
        """Dollar cost of `usage` on `model`; 0 for an unpriced model."""
        price = self.price_for(model)
        return price.cost(usage) if price else 0.0


def _is_family(name: str, key: str) -> bool:
    """`key` names `name` or its family: "gpt-5" covers "gpt-5-2025-08-07", not "gpt-5.4-mini"
    nor "gpt-5-pro" (a tier of its own, priced apart: unpriced until the table has it)."""
    if name == key:
        return True
    if not name.startswith(key) or name[len(key) : len(key) + 1] != "-":
        return False
    return all(part.isdigit() or part == "latest" for part in name[len(key) + 1 :].split("-"))
