"""`DeferredClient`: an LLM client that is built on its first request.

A command that may end up asking the model nothing (`judgegen run` when every result is
already fresh) holds one of these, so it imports no provider SDK, opens no response cache and
starts no cache writer unless a request is actually made. Its account (budget, ledger) exists
from the start, so the end-of-command line is right either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.llm.account import Account, account_for
from toolkit.llm.settings import LLMSettings, Role

if TYPE_CHECKING:
    from toolkit.llm.client import LLMClient
    from toolkit.llm.ledger import UsageSummary
    from toolkit.llm.models import LLMRequest, LLMResponse


class DeferredClient:
    """Stands for `build_client(settings, role, account)` until its first request."""

    def __init__(
        self, settings: LLMSettings, role: Role = "judge", account: Account | None = None
    ) -> None:
        self.settings = settings
        self.role: Role = role
        self.model = settings.model_for(role)
        self.account = account or account_for(settings)
        self._client: LLMClient | None = None

    @property
    def client(self) -> LLMClient:
        """The real client, built now if it was not yet."""
        if self._client is None:
            from toolkit.llm.client import build_client

            self._client = build_client(self.settings, self.role, self.account)
        return self._client

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer `request` with the real client."""
        return await self.client.complete(request)

    def summary(self) -> UsageSummary:
        """Totals of everything the account answered."""
        return self.account.summary()

    def summary_line(self) -> str:
        """The account's end-of-command line."""
        return self.account.summary_line()

    async def aclose(self) -> None:
        """Close the real client, if it was built."""
        if self._client is not None:
            await self._client.aclose()
