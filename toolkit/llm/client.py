"""`LLMClient`: what callers use (`await client.complete(request)`), and `build_client`.

The client composes the wrappers around one provider, outermost first:
ledger → cache → concurrency limit → rejection guard → outage breaker → budget → provider. So
every request leaves a ledger row (a refused one too, at $0); cache hits need no slot and no
budget and are served even when the provider is down; the guard, the breaker and the budget
are checked when a call gets its slot, so queued calls stop once the server gave several
requests in a row the same 400 (`rejected`), the provider failed too many calls in a row
(`outage`) or the cap is reached, while calls already in flight finish. Each client has its
own guard and breaker (a rejection or an outage is its provider's); the budget, ledger and
prices belong to an `Account` that several clients of one command may share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.errors import SpecError
from toolkit.llm.account import Account, account_for
from toolkit.llm.budget import Budget, BudgetProvider
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.cached_provider import CachedProvider
from toolkit.llm.concurrency import ConcurrencyLimit
from toolkit.llm.ledger import Ledger, LedgerProvider, UsageSummary
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.outage import OutageBreaker, outage_threshold
from toolkit.llm.pricing import PriceTable
from toolkit.llm.provider import Provider
from toolkit.llm.rejection import RejectionGuard
from toolkit.llm.settings import LLMSettings, Role

if TYPE_CHECKING:
    from toolkit.backends import LLMBackend


CLOSE_WAIT_S = 5.0
"""How long closing a client waits for the calls it cancels to end (a call ends at once when
cancelled, unless its provider ignores the cancellation): closing never hangs on one."""


class LLMClient:
    """One provider behind the cache, concurrency limit, outage breaker, and its account's
    budget and ledger."""

    close_wait_s: float = CLOSE_WAIT_S
    """How long `aclose` waits for the calls it cancels (a test of a provider ignoring the
    cancellation may shorten it)."""

    def __init__(
        self,
        provider: Provider,
        *,
        cache: ResponseCache | None = None,
        cache_mode: CacheMode = CacheMode.OFF,
        budget_usd: float | None = None,
        concurrency: int = 8,
        ledger: Ledger | None = None,
        prices: PriceTable | None = None,
        model: str | None = None,
        account: Account | None = None,
    ) -> None:
        """Pass `account` to share one budget and ledger with other clients; otherwise this
        client gets its own from `budget_usd`, `ledger` and `prices`."""
        self.provider = provider
        self.model = model
        self.account = account or Account(budget_usd=budget_usd, ledger=ledger, prices=prices)
        self.cache = cache
        budgeted = BudgetProvider(provider, self.account.budget, self.account.prices)
        self.breaker = OutageBreaker(budgeted, outage_threshold(concurrency))
        self.guard = RejectionGuard(self.breaker)
        self.limit = ConcurrencyLimit(self.guard, concurrency)
        cached = CachedProvider(self.limit, cache, cache_mode if cache else CacheMode.OFF)
        self._chain = LedgerProvider(cached, self.account.ledger)
        cached.on_abandoned = self._chain.abandoned

    @property
    def budget(self) -> Budget:
        """The account's budget."""
        return self.account.budget

    @property
    def ledger(self) -> Ledger:
        """The account's ledger."""
        return self.account.ledger

    @property
    def prices(self) -> PriceTable:
        """The account's price table."""
        return self.account.prices

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer `request` as this client's provider: its name replaces whatever provider the
        request names, so the cache key and ledger row are those of the provider answering (a
        request naming `openai` sent to a local server must not share the API's answers)."""
        if request.provider != self.provider.name:
            request = request.model_copy(update={"provider": self.provider.name})
        return await self._chain.complete(request)

    def summary(self) -> UsageSummary:
        """Totals of everything this client's account answered."""
        return self.account.summary()

    def summary_line(self) -> str:
        """The account's end-of-command line, plus what the budget stopped, if anything."""
        return self.account.summary_line()

    async def aclose(self) -> None:
        """Cancel the calls nobody waits for any more that are still running, writing their
        ledger rows (`abandoned`; waited for up to `close_wait_s`: those still running then
        are counted as having no row, `UsageSummary.unrecorded_calls`), then close the
        provider's connections, the cache file and the ledger file."""
        await self._chain.cancel_abandoned(self.close_wait_s)
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()
        if self.cache is not None:
            self.cache.close()
        self.account.ledger.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


def build_provider(spec: str, settings: LLMSettings) -> Provider:
    """The provider named by `spec`: anthropic | openai | replay:PATH | scripted:pkg.mod:func."""
    kind, _, rest = spec.partition(":")
    if kind == "anthropic":
        from toolkit.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            structured=settings.anthropic_structured,
            base_url=settings.base_url,
            max_retries=settings.max_retries,
            timeout_s=settings.timeout_s,
        )
    if kind == "openai":
        from toolkit.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(
            schema_mode=settings.openai_schema_mode,
            base_url=settings.base_url,
            max_retries=settings.max_retries,
            timeout_s=settings.timeout_s,
        )
    return _offline_provider(kind, rest, spec)


def _offline_provider(kind: str, rest: str, spec: str) -> Provider:
    if kind == "replay" and rest:
        from toolkit.llm.replay import ReplayProvider

        return ReplayProvider.from_path(rest)
    if kind == "scripted" and rest:
        from toolkit.llm.scripted import ScriptedProvider, load_policy

        policy = load_policy(rest)
        return ScriptedProvider(policy, record=False, name=spec)  # nothing reads a log here
    raise SpecError(
        "--provider",
        "provider",
        f"unknown provider '{spec}'",
        "use anthropic, openai, replay:DIR or scripted:pkg.mod:func",
    )


def build_client(
    settings: LLMSettings, role: Role = "judge", account: Account | None = None
) -> LLMClient:
    """An `LLMClient` for `role` (judge or generation) from `settings`, charging `account`
    (a new one from the settings' cap, ledger and prices when not given)."""
    resolved = settings.for_role(role)
    model = resolved.model or settings.judge_model
    mode = resolved.cache_mode
    cache = None if mode is CacheMode.OFF else ResponseCache(resolved.cache_path)
    return LLMClient(
        build_provider(resolved.provider, resolved),
        cache=cache,
        cache_mode=mode,
        concurrency=resolved.concurrency,
        model=model,
        account=account or account_for(settings),
    )


def default_backend(
    settings: LLMSettings, account: Account | None = None, **options: Any
) -> LLMBackend:
    """The toolkit's default judging backend (`LLMBackend`) running on this layer."""
    from toolkit.backends import LLMBackend

    client = build_client(settings, "judge", account)
    return LLMBackend(client, model=client.model or settings.judge_model, **options)
