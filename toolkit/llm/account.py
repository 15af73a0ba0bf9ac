"""The account of one command: one price table, one dollar budget and one usage ledger.

Invariant: a command builds one `Account` and hands it to every LLM client it makes
(generation and extraction, even on different providers), so `--budget-usd` caps the whole
command and the end-of-command `LLM:` line, the usage tables and the records add up the same
calls. It is passed explicitly, never kept in a module-level registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.llm.budget import Budget
from toolkit.llm.ledger import Ledger, UsageSummary
from toolkit.llm.pricing import ModelPrice, PriceTable

if TYPE_CHECKING:
    from toolkit.llm.settings import LLMSettings


class Account:
    """What one command spends, shared by all of its LLM clients."""

    def __init__(
        self,
        *,
        budget_usd: float | None = None,
        ledger: Ledger | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.prices = prices or (ledger.prices if ledger else PriceTable())
        self.ledger = ledger or Ledger(prices=self.prices)
        self.budget = Budget(budget_usd)

    @classmethod
    def open(
        cls,
        *,
        budget_usd: float | None,
        ledger_path: Path | None,
        price_overrides: dict[str, ModelPrice] | None = None,
    ) -> Account:
        """An account with the configured cap, ledger file and price overrides."""
        prices = PriceTable.with_overrides(price_overrides or {})
        return cls(budget_usd=budget_usd, ledger=Ledger(ledger_path, prices), prices=prices)

    def summary(self) -> UsageSummary:
        """Totals of every call any client of this account answered or failed."""
        return self.ledger.summary()

    def summary_line(self) -> str:
        """The end-of-command line, plus what the budget stopped, if anything."""
        line = self.summary().line()
        stopped = self.budget.report()
        return f"{line}; {stopped}" if stopped else line


def account_for(settings: LLMSettings) -> Account:
    """The one account a command opens from its settings (cap, ledger file, price overrides)."""
    return Account.open(
        budget_usd=settings.budget_usd,
        ledger_path=settings.ledger_path,
        price_overrides=settings.prices,
    )
