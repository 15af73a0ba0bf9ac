"""`mind2web2.llm_client.base_client` for imported judges: `LLMClient`, a type stand-in.

Judges annotate their `client` parameter with it. Under judgegen the runner passes a
`toolkit.runner.loader.JudgeContext` instead, and the Evaluator takes the judging backend and
pages from it; a judge never sends LLM requests itself.
"""

from __future__ import annotations

from typing import Any

from toolkit.errors import InfraError

__all__ = ["LLMClient"]

_REFUSAL = (
    "LLMClient is a stand-in under judgegen: call evaluator.extract/verify, which use the "
    "runner's judging backend"
)


class LLMClient:
    """Accepts Mind2Web 2's constructor arguments; direct requests are refused with InfraError."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Accept and ignore `provider`, `is_async` and any other arguments."""

    def response(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: judges reach the model only through the Evaluator."""
        raise InfraError(_REFUSAL, kind="compat")

    async def async_response(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: judges reach the model only through the Evaluator."""
        raise InfraError(_REFUSAL, kind="compat")
