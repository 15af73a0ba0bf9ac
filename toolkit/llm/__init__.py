"""The LLM layer: provider-neutral requests, providers, response cache, budget and ledger.

Callers build an `LLMClient` with `build_client(LLMSettings.from_env_and_file(...))` and
`await client.complete(request)`; providers sit behind it (see `client.py` for the order of
the wrappers).
"""

from toolkit.llm.account import Account
from toolkit.llm.budget import Budget, SkippedRequest
from toolkit.llm.cache import CachedProvider, CacheMode, CacheRecord, ResponseCache
from toolkit.llm.client import (
    LLMClient,
    account_for,
    build_client,
    build_provider,
    default_backend,
)
from toolkit.llm.ledger import Ledger, LedgerRow, UsageSummary
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, SystemBlock, Usage
from toolkit.llm.pricing import ModelPrice, PriceTable
from toolkit.llm.provider import MAX_REASKS, Provider
from toolkit.llm.replay import ReplayProvider
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import LLMSettings

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
