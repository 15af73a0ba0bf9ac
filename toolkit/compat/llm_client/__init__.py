"""`mind2web2.llm_client` for imported judges: the `LLMClient` stand-in and the default model."""

from __future__ import annotations

from toolkit.backends import DEFAULT_JUDGE_MODEL
from toolkit.compat.llm_client import base_client
from toolkit.compat.llm_client.base_client import LLMClient

__all__ = ["DEFAULT_JUDGE_MODEL", "LLMClient", "base_client"]
