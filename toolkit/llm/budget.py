"""The dollar budget: stops a run cleanly when its cap is reached.

Once the money spent (priced from the table, including failed calls that were billed)
reaches the cap, no new call starts: each raises `BudgetExceeded` and is listed in
`not_done`; calls already in flight finish and are counted. Cache hits never reach this
wrapper, so a capped rerun still serves everything it has recorded. With a cap, a call to
a real API for a model the price table does not know is refused: it would be charged $0.
"""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.errors import BudgetExceeded, LLMError
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.pricing import PriceTable, is_free
from toolkit.llm.provider import Provider

BUDGET_FIX = (
    "raise the cap (--budget-usd, JUDGEGEN_BUDGET_USD or budget_usd under [llm] in judgegen.toml)"
)
"""What to change, for any command (what a rerun keeps and pays for again is the command's:
`generator.cli.rerun`)."""
PAID_PROVIDERS = ("openai", "anthropic")
"""Names (`endpoint.identity`) of the providers that call a model someone may bill for."""


class SkippedRequest(BaseModel):
    """A request the budget stopped, for the end-of-run report."""

    purpose: str
    task_id: str | None = None
    model: str
    label: str | None = None


class Budget:
    """Running spend against an optional cap (None means unlimited)."""

    def __init__(self, cap_usd: float | None) -> None:
        self.cap_usd = cap_usd
        self.spent_usd = 0.0
        self.not_done: list[SkippedRequest] = []

    @property
    def exhausted(self) -> bool:
        """True once the spend reached the cap."""
        return self.cap_usd is not None and self.spent_usd >= self.cap_usd

    def report(self) -> str:
        """One line about the cap, or '' when nothing was stopped."""
        if not self.not_done:
            return ""
        return (
            f"budget ${self.cap_usd:.2f} reached (spent ${self.spent_usd:.2f}): "
            f"{len(self.not_done)} requests not made"
        )


class BudgetProvider:
    """Wraps a provider; refuses new calls once the budget is exhausted and prices each call."""

    def __init__(self, inner: Provider, budget: Budget, prices: PriceTable) -> None:
        self.inner = inner
        self.budget = budget
        self.prices = prices
        self.name = inner.name
        self._free = is_free(inner.name)  # replays cost nothing
        self._paid_api = inner.name.startswith(PAID_PROVIDERS)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward `request` unless the cap is reached; add its cost to the spend."""
        if self.budget.exhausted:
            self.budget.not_done.append(_skipped(request))
            raise BudgetExceeded(
                f"budget of ${self.budget.cap_usd:g} reached "
                f"(spent ${self.budget.spent_usd:.4f}); {request.metadata.purpose} request "
                f"for {request.model} not made. Fix: {BUDGET_FIX}"
            )
        self._check_priced(request)
        try:
            response = await self.inner.complete(request)
        except LLMError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            exc.cost_usd = self._charge(request, usage)
            raise
        response.cost_usd = self._charge(request, response.usage)
        return response

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    def _check_priced(self, request: LLMRequest) -> None:
        """Refuse a capped call to a real API whose model has no price: the table would
        charge it $0, so the cap could never stop the spending it is there to stop."""
        if self.budget.cap_usd is None or not self._paid_api:
            return
        if self.prices.price_for(request.model) is None:
            raise LLMError(
                f"no price for model {request.model}, so the budget cap of "
                f"${self.budget.cap_usd:.2f} cannot be enforced: add "
                f'[llm.prices."{request.model}"] (input and output dollars per million '
                "tokens; 0 for a free local server) to judgegen.toml, or run without a cap",
                kind="config",
            )

    def _charge(self, request: LLMRequest, usage: Usage) -> float:
        if self._free:
            return 0.0
        cost = self.prices.cost(request.model, usage)
        self.budget.spent_usd += cost
        return cost


def _skipped(request: LLMRequest) -> SkippedRequest:
    meta = request.metadata
    return SkippedRequest(
        purpose=meta.purpose, task_id=meta.task_id, model=request.model, label=meta.label
    )
