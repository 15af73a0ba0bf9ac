"""The LLM layer: provider-neutral requests, providers, response cache, budget and ledger.

Callers build an `LLMClient` with `build_client(LLMSettings.from_env_and_file(...), role,
account)` and `await client.complete(request)`; providers sit behind it (see `client.py` for
the order of the wrappers). A command opens one `Account` (`account_for(settings)`) and passes
it to every client it builds, so one budget and one ledger cover the whole command. Names load
on first use, so `toolkit.llm.models` alone (what a judge's backend requests need) does not
import the cache, client, budget and providers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolkit.llm.account import Account, account_for
    from toolkit.llm.budget import Budget, SkippedRequest
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.cache_mode import CacheMode
    from toolkit.llm.cached_provider import CachedProvider
    from toolkit.llm.client import (
        LLMClient,
        build_client,
        build_provider,
        default_backend,
    )
    from toolkit.llm.ledger import Ledger, LedgerRow, UsageSummary
    from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, SystemBlock, Usage
    from toolkit.llm.pricing import ModelPrice, PriceTable
    from toolkit.llm.provider import MAX_REASKS, Provider
    from toolkit.llm.records import CacheRecord
    from toolkit.llm.replay import ReplayProvider
    from toolkit.llm.scripted import ScriptedProvider
    from toolkit.llm.settings import LLMSettings

# exported name -> the module that defines it
_HOMES = {
    "MAX_REASKS": "toolkit.llm.provider",
    "Account": "toolkit.llm.account",
    "Budget": "toolkit.llm.budget",
    "CacheMode": "toolkit.llm.cache_mode",
    "CacheRecord": "toolkit.llm.records",
    "CachedProvider": "toolkit.llm.cached_provider",
    "LLMClient": "toolkit.llm.client",
    "LLMRequest": "toolkit.llm.models",
    "LLMResponse": "toolkit.llm.models",
    "LLMSettings": "toolkit.llm.settings",
    "Ledger": "toolkit.llm.ledger",
    "LedgerRow": "toolkit.llm.ledger",
    "Message": "toolkit.llm.models",
    "ModelPrice": "toolkit.llm.pricing",
    "PriceTable": "toolkit.llm.pricing",
    "Provider": "toolkit.llm.provider",
    "ReplayProvider": "toolkit.llm.replay",
    "RequestMeta": "toolkit.llm.models",
    "ResponseCache": "toolkit.llm.cache",
    "ScriptedProvider": "toolkit.llm.scripted",
    "SkippedRequest": "toolkit.llm.budget",
    "SystemBlock": "toolkit.llm.models",
    "Usage": "toolkit.llm.models",
    "UsageSummary": "toolkit.llm.ledger",
    "account_for": "toolkit.llm.account",
    "build_client": "toolkit.llm.client",
    "build_provider": "toolkit.llm.client",
    "default_backend": "toolkit.llm.client",
}

__all__ = [
    "MAX_REASKS",
    "Account",
    "Budget",
    "CacheMode",
    "CacheRecord",
    "CachedProvider",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "LLMSettings",
    "Ledger",
    "LedgerRow",
    "Message",
    "ModelPrice",
    "PriceTable",
    "Provider",
    "ReplayProvider",
    "RequestMeta",
    "ResponseCache",
    "ScriptedProvider",
    "SkippedRequest",
    "SystemBlock",
    "Usage",
    "UsageSummary",
    "account_for",
    "build_client",
    "build_provider",
    "default_backend",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
