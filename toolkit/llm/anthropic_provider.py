"""The Anthropic provider: the official async SDK, native structured output, prompt caching.

Structured output is native (`output_config.format` with a JSON schema) and falls back to
forced tool use for models that reject it; the provider remembers the fallback per model.
System blocks marked `cache` get `cache_control`, so the stable prefix is billed as a cache
read on later calls. The SDK retries transport failures (not a 501: `provider.mark_final`);
this module adds nothing on top.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Final, Literal

from toolkit.errors import LLMError
from toolkit.llm.endpoint import check_client_server, identity, server
from toolkit.llm.models import ImagePart, LLMRequest, LLMResponse, Message, Usage
from toolkit.llm.provider import RawOutput, classify_sdk_error, complete_structured, mark_final
from toolkit.llm.schema import sent_schema

if TYPE_CHECKING:
    import anthropic

StructuredMode = Literal["auto", "native", "tool"]
MAX_CACHE_BREAKPOINTS = 4
"""The API accepts at most four `cache_control` marks; the last ones cover the longest prefix."""
TOOL_DESCRIPTION = "Return the answer as this tool's input; it must match the schema."


class AnthropicProvider:
    """`Provider` over `anthropic.AsyncAnthropic`; the API key comes from the environment."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic | None = None,
        *,
        structured: StructuredMode = "auto",
        base_url: str | None = None,
        max_retries: int = 2,
        timeout_s: float = 600.0,
    ) -> None:
        self._client = client
        self._options: dict[str, Any] = {"max_retries": max_retries, "timeout": timeout_s}
        if base_url:
            self._options["base_url"] = base_url
        self.structured: Final = structured
        self._server = server("anthropic", base_url)
        self.name = identity("anthropic", self._server, structured)
        """`anthropic`, plus the server and structured mode when not the defaults."""
        self._tool_models: set[str] = set()

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, created on first use so cache-only runs need no API key; one that
        calls another server than `name` says is a config error."""
        if self._client is None:
            import anthropic  # the SDK is imported only when this provider makes a call

            keys = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
            if "base_url" not in self._options and not any(os.environ.get(k) for k in keys):
                raise LLMError("no Anthropic credentials: set ANTHROPIC_API_KEY", kind="config")
            hooks = {"response": [mark_final]}
            http = anthropic.DefaultAsyncHttpxClient(event_hooks=hooks)
            client = anthropic.AsyncAnthropic(**self._options, http_client=http)
            check_client_server("anthropic", self._server, str(client.base_url))
            self._client = client
        return self._client

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One request, with validation re-asks; SDK failures become classified `LLMError`s."""
        try:
            return await complete_structured(request, self._attempt, self.classify)
        except LLMError:
            raise
        except Exception as exc:
            raise self.classify(exc) from None

    def classify(self, error: BaseException) -> LLMError:
        """Map an `anthropic` exception to an `LLMError` kind (529 → overloaded)."""
        import anthropic

        status = getattr(error, "status_code", None)
        return classify_sdk_error(
            error,
            status=status,
            timeout=isinstance(error, anthropic.APITimeoutError),
            connection=isinstance(error, anthropic.APIConnectionError),
            overloaded=status == 529,
            provider="anthropic",
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP connections."""
        if self._client is not None:
            await self._client.close()

    async def _attempt(self, request: LLMRequest) -> RawOutput:
        import anthropic

        if request.output_schema is None:
            return _raw(await self.client.messages.create(**_base_params(request)))
        if self._use_tool(request.model):
            return await self._tool_attempt(request)
        try:
            return await self._native_attempt(request)
        except anthropic.BadRequestError as exc:
            if self.structured == "native" or not _rejects_native(exc):
                raise
            self._tool_models.add(request.model)
            return await self._tool_attempt(request)

    def _use_tool(self, model: str) -> bool:
        return self.structured == "tool" or model in self._tool_models

    async def _native_attempt(self, request: LLMRequest) -> RawOutput:
        import anthropic

        schema = anthropic.transform_schema(sent_schema(request.output_schema or {}))
        params = _base_params(request)
        params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        return _raw(await self.client.messages.create(**params))

    async def _tool_attempt(self, request: LLMRequest) -> RawOutput:
        name = _tool_name(request)
        params = _base_params(request)
        params["tools"] = [
            {
                "name": name,
                "description": TOOL_DESCRIPTION,
                "input_schema": sent_schema(request.output_schema or {}),
            }
        ]
        params["tool_choice"] = {"type": "tool", "name": name}
        return _raw(await self.client.messages.create(**params))


def _rejects_native(error: Any) -> bool:
    text = str(getattr(error, "message", "") or error).lower()
    return any(word in text for word in ("output_config", "output_format", "json_schema"))


def _tool_name(request: LLMRequest) -> str:
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in request.schema_name or "")
    return (name or "respond")[:64]


def _base_params(request: LLMRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": [_message(m) for m in request.messages],
    }
    if request.system:
        marked = [i for i, block in enumerate(request.system) if block.cache]
        breakpoints = set(marked[-MAX_CACHE_BREAKPOINTS:])
        params["system"] = [
            _system_block(b.text, i in breakpoints) for i, b in enumerate(request.system)
        ]
    return params


def _system_block(text: str, cache: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = {"type": "ephemeral"}
    return block


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [_part(p) for p in message.content]}


def _part(part: Any) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
        return {"type": "image", "source": source}
    return {"type": "text", "text": part.text}


def _raw(message: Any) -> RawOutput:
    texts = [b.text for b in message.content if getattr(b, "type", "") == "text"]
    tool_inputs = [b.input for b in message.content if getattr(b, "type", "") == "tool_use"]
    parsed = tool_inputs[0] if tool_inputs else None
    text = "".join(texts)
    if parsed is not None and not text:
        text = json.dumps(parsed, sort_keys=True)
    return RawOutput(
        text=text,
        parsed=parsed,
        stop_reason=message.stop_reason,
        usage=_usage(message.usage),
        model=message.model,
        request_id=getattr(message, "_request_id", None),
    )


def _usage(usage: Any) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )
