"""The OpenAI provider: the official async SDK's `chat.completions.parse`, for OpenAI and for
OpenAI-compatible local servers (`base_url`: vLLM, llama.cpp server, Ollama).

Servers differ in what structured output they support, so the schema strategy is a switch:
`native` (strict `json_schema` response format), `json` (JSON mode plus the schema in the
prompt) or `prompt` (the schema in the prompt only). Every strategy validates the output and
re-asks on failure; the SDK retries transport failures (not a 501: `provider.mark_final`).
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
    import openai

SchemaMode = Literal["native", "json", "prompt"]
LOCAL_PLACEHOLDER_KEY = "not-needed-for-local-servers"


class OpenAIProvider:
    """`Provider` over `openai.AsyncOpenAI`; the API key comes from `OPENAI_API_KEY`."""

    def __init__(
        self,
        client: openai.AsyncOpenAI | None = None,
        *,
        schema_mode: SchemaMode = "native",
        base_url: str | None = None,
        max_retries: int = 2,
        timeout_s: float = 600.0,
    ) -> None:
        self._client = client
        self._options = (base_url, max_retries, timeout_s)
        self.schema_mode: Final = schema_mode
        self._server = server("openai", base_url)
        self.name = identity("openai", self._server, schema_mode)
        """`openai`, plus the server and schema mode when not the defaults (`endpoint.py`)."""

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client, created on first use so cache-only runs need no API key; one that
        calls another server than `name` says is a config error."""
        if self._client is None:
            client = _make_client(*self._options)
            check_client_server("openai", self._server, str(client.base_url))
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
        """Map an `openai` exception to an `LLMError` kind."""
        import openai

        return classify_sdk_error(
            error,
            status=getattr(error, "status_code", None),
            timeout=isinstance(error, openai.APITimeoutError),
            connection=isinstance(error, openai.APIConnectionError),
            provider="openai",
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP connections."""
        if self._client is not None:
            await self._client.close()

    async def _attempt(self, request: LLMRequest) -> RawOutput:
        import openai

        params = self._params(request)
        try:
            completion = await self.client.chat.completions.parse(**params)
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
            return _raw(exc.completion)
        return _raw(completion)

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        schema = request.output_schema
        instructions = (
            _schema_instructions(schema) if schema and self.schema_mode != "native" else ""
        )
        params: dict[str, Any] = {
            "model": request.model,
            "max_completion_tokens": request.max_tokens,
            "messages": _messages(request, instructions),
        }
        if schema is not None and self.schema_mode == "native":
            params["response_format"] = _native_format(request, schema)
        elif schema is not None and self.schema_mode == "json":
            params["response_format"] = {"type": "json_object"}
        return params


def _make_client(base_url: str | None, max_retries: int, timeout_s: float) -> openai.AsyncOpenAI:
    import openai  # the SDK is imported only when this provider makes a call

    kwargs: dict[str, Any] = {"max_retries": max_retries, "timeout": timeout_s}
    kwargs["http_client"] = openai.DefaultAsyncHttpxClient(event_hooks={"response": [mark_final]})
    if base_url:
        kwargs["base_url"] = base_url
        kwargs["api_key"] = _env_key() or LOCAL_PLACEHOLDER_KEY
    try:
        return openai.AsyncOpenAI(**kwargs)
    except openai.OpenAIError:
        raise LLMError(
            "no OpenAI credentials: set OPENAI_API_KEY (or pass --base-url for a local server)",
            kind="config",
        ) from None


def _env_key() -> str | None:
    return os.environ.get("OPENAI_API_KEY") or None


def _native_format(request: LLMRequest, schema: dict[str, Any]) -> dict[str, Any]:
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in request.schema_name or "")
    spec = {"name": (name or "response")[:64], "schema": sent_schema(schema), "strict": True}
    return {"type": "json_schema", "json_schema": spec}


def _schema_instructions(schema: dict[str, Any]) -> str:
    body = json.dumps(sent_schema(schema), sort_keys=True, indent=2)
    return f"Reply with only a JSON object that conforms to this JSON schema:\n{body}"


def _messages(request: LLMRequest, instructions: str) -> list[dict[str, Any]]:
    system = "\n\n".join(
        [b.text for b in request.system] + ([instructions] if instructions else [])
    )
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    return messages + [_message(m) for m in request.messages]


def _message(message: Message) -> dict[str, Any]:
    if message.role == "assistant":
        return {
            "role": "assistant",
            "content": "".join(getattr(p, "text", "") for p in message.content),
        }
    return {"role": "user", "content": [_part(p) for p in message.content]}


def _part(part: Any) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        return {
            "type": "image_url",
            "image_url": {"url": f"data:{part.media_type};base64,{part.data}"},
        }
    return {"type": "text", "text": part.text}


def _raw(completion: Any) -> RawOutput:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice else None
    return RawOutput(
        text=(message.content or "") if message else "",
        stop_reason=choice.finish_reason if choice else None,
        refusal=getattr(message, "refusal", None),
        usage=_usage(completion.usage),
        model=completion.model or "",
        request_id=getattr(completion, "_request_id", None),
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details else 0
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )
