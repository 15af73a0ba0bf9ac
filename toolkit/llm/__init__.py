"""The LLM layer: provider-neutral requests, providers, response cache, budget and ledger."""

from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, SystemBlock, Usage
from toolkit.llm.scripted import ScriptedProvider

__all__ = [
    "LLMRequest",
    "LLMResponse",
    "Message",
    "RequestMeta",
    "ScriptedProvider",
    "SystemBlock",
    "Usage",
]
