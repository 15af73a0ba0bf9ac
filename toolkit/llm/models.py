"""The provider-neutral request and response that every LLM call in judgegen goes through.

Invariant: `LLMRequest.cache_key()` depends only on what changes the model's answer
(provider, model, endpoint, system, messages, schema, max tokens, sample index), never on
metadata, credentials, timeouts or retries.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

Purpose = Literal["draft", "repair", "reflect", "regenerate", "extract", "verify", "test", "other"]


class TextPart(BaseModel):
    """Plain text inside a message."""

    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image inside a message, base64-encoded (e.g. a page screenshot)."""

    model_config = ConfigDict(frozen=True)
    type: Literal["image"] = "image"
    media_type: str = "image/jpeg"
    data: str


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    """One conversation turn."""

    role: Literal["user", "assistant"]
    content: list[ContentPart]

    @classmethod
    def user(cls, text: str, images: list[str] | None = None) -> Message:
        """A user turn with text and optional base64 JPEG images."""
        parts: list[TextPart | ImagePart] = [TextPart(text=text)]
        parts += [ImagePart(data=image) for image in images or []]
        return cls(role="user", content=parts)

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant turn (used for re-asks)."""
        return cls(role="assistant", content=[TextPart(text=text)])


class SystemBlock(BaseModel):
    """A system prompt block; `cache=True` marks the stable prefix providers may cache."""

    text: str
    cache: bool = False


class RequestMeta(BaseModel):
    """Why a request was made; recorded in the ledger, excluded from the cache key."""

    purpose: Purpose = "other"
    task_id: str | None = None
    label: str | None = None


class LLMRequest(BaseModel):
    """A complete, provider-neutral LLM request."""

    version: int = SCHEMA_VERSION
    provider: str = ""
    model: str
    endpoint: str = "chat"
    system: list[SystemBlock] = Field(default_factory=list)
    messages: list[Message]
    output_schema: dict[str, Any] | None = None
    schema_name: str | None = None
    max_tokens: int = 4096
    sample_index: int = 0
    metadata: RequestMeta = Field(default_factory=RequestMeta)

    def canonical(self) -> dict[str, Any]:
        """The part of the request that determines the answer, as plain JSON data."""
        return self.model_dump(mode="json", exclude={"metadata"})

    def canonical_json(self) -> str:
        """Canonical JSON: sorted keys, no whitespace, UTF-8 kept."""
        return json.dumps(
            self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )

    def cache_key(self) -> str:
        """Content address of the request, with its algorithm as a prefix."""
        digest = hashlib.sha256(self.canonical_json().encode()).hexdigest()
        return f"sha256-v{SCHEMA_VERSION}:{digest}"

    def prompt_text(self) -> str:
        """All text of the request, system first; for diffs and debugging."""
        texts = [block.text for block in self.system]
        for message in self.messages:
            texts += [p.text for p in message.content if isinstance(p, TextPart)]
        return "\n\n".join(texts)


class Usage(BaseModel):
    """Token counts of one call. `input_tokens` excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class LLMResponse(BaseModel):
    """What came back: text, the parsed object when a schema was asked for, usage and cost."""

    version: int = SCHEMA_VERSION
    text: str = ""
    parsed: Any = None
    model: str = ""
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    request_id: str | None = None
    cache_hit: bool = False
    latency_s: float = 0.0
