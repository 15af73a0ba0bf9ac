"""A provider whose answers come from a Python policy: for tests, demos and offline runs.

The policy receives each `LLMRequest` and returns a string (the text; parsed as JSON when the
request has a schema), a dict (the parsed object), an `LLMResponse`, or raises. The answer names
the model asked for as the one that answered, unless the policy returns an `LLMResponse` naming
another (`response_from(value, request).model_copy(update={"model": ...})`): a policy acting as
an alias's dated snapshot, as a real API reports it. Its answers go
through the same structured-output loop as the SDK providers (strict validation, bounded
re-asks, truncation and refusal as errors). Every request, re-asks included, is recorded in
`calls`, in order, so tests can assert exactly what was asked; a provider built for a run
(`--provider scripted:...`) records nothing, since a long run would keep every request (its
page text and screenshots) in memory to the end.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from toolkit.errors import LLMError, SpecError
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.policy_sources import importable_from_cwd
from toolkit.llm.provider import RawOutput, complete_structured

Policy = Callable[[LLMRequest], str | dict | LLMResponse | Awaitable[Any]]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def response_from(value: str | dict | LLMResponse, request: LLMRequest) -> LLMResponse:
    """Turn a policy's return value into a full `LLMResponse` with estimated usage."""
    if isinstance(value, LLMResponse):
        return value
    if isinstance(value, dict):
        text, parsed = json.dumps(value, sort_keys=True), value
    else:
        text, parsed = value, None
        if request.output_schema is not None:
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
    usage = Usage(
        input_tokens=_estimate_tokens(request.prompt_text()), output_tokens=_estimate_tokens(text)
    )
    return LLMResponse(
        text=text, parsed=parsed, model=request.model, stop_reason="end_turn", usage=usage
    )


class ScriptedProvider:
    """Answers every request by calling `policy`; records the requests in `calls` unless
    `record` is off. `name` is its identity in cache keys and ledger rows: one built for
    `--provider scripted:SPEC` is named so, so another policy's cached answers never serve it."""

    def __init__(self, policy: Policy, *, record: bool = True, name: str = "scripted") -> None:
        self.name = name
        self.policy = policy
        self.record = record
        self.calls: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The policy's answer, validated (and re-asked) like a real provider's.

        An exception the policy raises is an infrastructure failure (`LLMError`), never a verdict.
        """
        try:
            return await complete_structured(request, self._attempt, self.classify)
        except LLMError:
            raise
        except Exception as exc:
            raise self.classify(exc) from exc

    async def _attempt(self, request: LLMRequest) -> RawOutput:
        if self.record:
            self.calls.append(request)
        value = self.policy(request)
        if inspect.isawaitable(value):
            value = await value
        response = response_from(value, request)
        return RawOutput(
            text=response.text,
            parsed=response.parsed,
            stop_reason=response.stop_reason,
            usage=response.usage,
            model=response.model or request.model,
            request_id=response.request_id,
        )

    def classify(self, error: BaseException) -> LLMError:
        """A policy's own exception, reported as an `LLMError` of kind `unknown`."""
        if isinstance(error, LLMError):
            return error
        return LLMError(f"scripted policy failed: {type(error).__name__}: {error}", kind="unknown")


def load_policy(spec: str) -> Policy:
    """Import `package.module:function` (the part after `scripted:` in `--provider`)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SpecError(
            "--provider",
            "scripted",
            f"'{spec}' is not module:function",
            "use scripted:pkg.mod:func",
        )
    importable_from_cwd()
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise SpecError("--provider", "scripted", str(exc), "check the module path") from None
