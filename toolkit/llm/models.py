"""The provider-neutral request and response that every LLM call in judgegen goes through.

Invariant: `LLMRequest.cache_key()` depends only on what changes the model's answer
(provider, model, endpoint, system, messages, schema, max tokens, sample index), never on
metadata, credentials, timeouts or retries. Large parts (page text, screenshots) enter the
key by their content digest, computed once per part; the trials of one request share one
hash of the rest (`with_sample`), so a vote never re-hashes a 300 KB page, and the storage form
the hash is made of is built once per request and reused, as JSON text, when the answer is
stored. What a model memoizes lives in pydantic's private-state slot (`_memo`), not in
declared private attributes, which cost microseconds on every construction and read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from toolkit.llm.origin import RecordOrigin
from toolkit.util.hashing import sha256_text

SCHEMA_VERSION = 1
KEY_VERSION = 2
"""Version of the key derivation; it prefixes every key, so a change never silently splits a cache."""
BLOB_MIN_CHARS = 4096
"""Text or image data at least this long is keyed and stored by its content digest."""
_KEY_NEUTRAL = frozenset({"sample_index", "metadata", "provider"})
_SEQUENCES = frozenset({"system", "messages", "content"})
"""Tuple fields of requests and messages: their `model_copy` (which does not validate)
converts lists given for them."""

Purpose = Literal["draft", "repair", "reflect", "regenerate", "extract", "verify", "test", "other"]


class _Part(BaseModel):
    """What text and image parts share: a payload whose digest is memoized once computed."""

    model_config = ConfigDict(frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; one given new fields drops the memoized digest, which would otherwise key
        (and store as a blob) the new payload under the old payload's digest."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            object.__setattr__(copied, "__pydantic_private__", None)
        return copied


class TextPart(_Part):
    """Plain text inside a message."""

    type: Literal["text"] = "text"
    text: str

    def content(self) -> str:
        """The part's payload (what a blob holds)."""
        return self.text


class ImagePart(_Part):
    """An image inside a message, base64-encoded (e.g. a page screenshot)."""

    type: Literal["image"] = "image"
    media_type: str = "image/jpeg"
    data: str

    def content(self) -> str:
        """The part's payload (what a blob holds)."""
        return self.data


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    """One conversation turn."""

    model_config = ConfigDict(frozen=True)
    role: Literal["user", "assistant"]
    content: tuple[ContentPart, ...]

    @classmethod
    def user(cls, text: str, images: list[str] | None = None) -> Message:
        """A user turn with text and optional base64 JPEG images."""
        shots = tuple(ImagePart(data=image) for image in images or [])
        return cls(role="user", content=(TextPart(text=text), *shots))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant turn (used for re-asks)."""
        return cls(role="assistant", content=(TextPart(text=text),))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; a list given for `content` becomes a tuple."""
        return super().model_copy(update=_tupled(update), deep=deep)


class SystemBlock(BaseModel):
    """A system prompt block; `cache=True` marks the stable prefix providers may cache."""

    model_config = ConfigDict(frozen=True)
    text: str
    cache: bool = False


class RequestMeta(BaseModel):
    """Why a request was made; recorded in the ledger, excluded from the cache key."""

    purpose: Purpose = "other"
    task_id: str | None = None
    label: str | None = None


class LLMRequest(BaseModel):
    """A complete, provider-neutral LLM request. Frozen, as are its system blocks and
    messages, and they are tuples (lists are accepted and converted): its hash and storage
    form are computed once and kept (`_memo`), so a field assigned or a message appended
    afterwards would be looked up, cached and recorded under the old request's key. Change a
    request with `model_copy(update=...)`, which drops what the update invalidates. The
    output schema is a plain dict for the SDKs: do not edit one a request holds."""

    model_config = ConfigDict(frozen=True)
    version: int = SCHEMA_VERSION
    provider: str = ""
    model: str
    endpoint: str = "chat"
    system: tuple[SystemBlock, ...] = ()
    messages: tuple[Message, ...]
    output_schema: dict[str, Any] | None = None
    schema_name: str | None = None
    max_tokens: int = 4096
    sample_index: int = 0
    metadata: RequestMeta = Field(default_factory=RequestMeta)

    @property
    def _base_digest(self) -> str | None:
        """The memoized `base_digest()`, None until it is computed."""
        memo = self.__pydantic_private__
        return None if memo is None else memo.get("base_digest")

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; it keeps the memoized hash and storage form only when `update` leaves the
        hashed part alone."""
        update = _tupled(update)
        copied = super().model_copy(update=update, deep=deep)
        if deep or (update and not set(update) <= _KEY_NEUTRAL):
            object.__setattr__(copied, "__pydantic_private__", None)
        return copied

    def with_sample(self, index: int) -> LLMRequest:
        """Trial `index` of this request; all trials share one hash of the request."""
        self.base_digest()
        return self.model_copy(update={"sample_index": index})

    def storage_form(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The request as JSON data with large parts replaced by digests, and those blobs
        (shared with other calls: read, never mutate)."""
        core = self._core_form()
        return {**core.data, **self._neutral()}, core.blobs

    def storage_json(self) -> tuple[str, dict[str, str]]:
        """`storage_form` as compact JSON text (what the cache stores), and its blobs; the
        hashed part's text is encoded once per request and shared by its trials."""
        core = self._core_form()
        if core.text is None:
            core.text = _compact_json(core.data)
        return core.text[:-1] + "," + _compact_json(self._neutral())[1:], core.blobs

    def _neutral(self) -> dict[str, Any]:
        return self.model_dump(mode="json", include=set(_KEY_NEUTRAL))

    def _core_form(self) -> _Core:
        """The storage form without the key-neutral fields, built once per request."""
        memo = _memo(self)
        core: _Core | None = memo.get("core")
        if core is None:
            data = self.model_dump(mode="json", exclude=set(_KEY_NEUTRAL))
            blobs: dict[str, str] = {}
            for block, stored in zip(self.system, data["system"], strict=True):
                if len(block.text) >= BLOB_MIN_CHARS:
                    _to_blob(stored, "text", sha256_text(block.text), blobs)
            for message, stored_message in zip(self.messages, data["messages"], strict=True):
                for part, stored in zip(message.content, stored_message["content"], strict=True):
                    if len(part.content()) >= BLOB_MIN_CHARS:
                        field = "text" if isinstance(part, TextPart) else "data"
                        _to_blob(stored, field, _part_digest(part), blobs)
            core = memo["core"] = _Core(data, blobs)
        return core

    @classmethod
    def from_storage(cls, data: dict[str, Any], blobs: Mapping[str, str]) -> LLMRequest:
        """The request `storage_form` produced (a missing blob raises KeyError)."""
        for block in data.get("system", []):
            _from_blob(block, blobs)
        for message in data.get("messages", []):
            for part in message.get("content", []):
                _from_blob(part, blobs)
        return cls.model_validate(data)

    def base_digest(self) -> str:
        """Hash of everything that determines the answer except provider and sample index."""
        memo = _memo(self)
        digest = memo.get("base_digest")
        if digest is None:
            data = self._core_form().data
            text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest = memo["base_digest"] = sha256_text(text)
        return digest

    def cache_key(self, provider: str | None = None) -> str:
        """Content address of the request (for `provider`, default its own), algorithm-prefixed."""
        name = self.provider if provider is None else provider
        trial = f"{self.base_digest()}|{name}|{self.sample_index}"
        return f"sha256-v{KEY_VERSION}:" + sha256_text(trial).removeprefix("sha256:")

    def prompt_text(self) -> str:
        """All text of the request, system first; for diffs and debugging."""
        texts = [block.text for block in self.system]
        for message in self.messages:
            texts += [p.text for p in message.content if isinstance(p, TextPart)]
        return "\n\n".join(texts)


class _Core:
    """A request's storage form without its key-neutral fields, its blobs, and its compact
    JSON text once the cache needed it; shared by the request's trials (copies)."""

    __slots__ = ("blobs", "data", "text")

    def __init__(self, data: dict[str, Any], blobs: dict[str, str]) -> None:
        self.data = data
        self.blobs = blobs
        self.text: str | None = None

    def __eq__(self, other: object) -> bool:
        """Equal storage forms (as the requests holding them compare, by value)."""
        if not isinstance(other, _Core):
            return NotImplemented
        return self.data == other.data and self.blobs == other.blobs

    __hash__ = None  # type: ignore[assignment]


def _tupled(update: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """`update` with a list given for a tuple field made a tuple, as validation would."""
    if not update or not any(isinstance(update.get(name), list) for name in _SEQUENCES):
        return update
    return {
        k: tuple(v) if k in _SEQUENCES and isinstance(v, list) else v for k, v in update.items()
    }


def _compact_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _memo(model: BaseModel) -> dict[str, Any]:
    """What `model` memoizes about itself: kept in pydantic's private-state slot, which
    `model_copy` copies and nothing serializes. Declared private attributes would cost
    ~6 µs on every construction and ~5 µs on every read (pydantic's `__getattr__`); these
    models are built and read several times per LLM call."""
    memo = model.__pydantic_private__
    if memo is None:
        memo = {}
        object.__setattr__(model, "__pydantic_private__", memo)
    return memo


def _part_digest(part: TextPart | ImagePart) -> str:
    memo = _memo(part)
    digest = memo.get("digest")
    if digest is None:
        digest = memo["digest"] = sha256_text(part.content())
    return digest


def _to_blob(stored: dict[str, Any], field: str, digest: str, blobs: dict[str, str]) -> None:
    blobs[digest] = stored[field]
    stored[field] = ""
    stored["blob"] = digest


def _from_blob(stored: dict[str, Any], blobs: Mapping[str, str]) -> None:
    digest = stored.pop("blob", None)
    if digest is not None:
        field = "data" if stored.get("type") == "image" else "text"
        stored[field] = blobs[digest]


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
    saved_usd: float = Field(
        default=0.0,
        exclude=True,
        description="What a cache hit of an answer recorded live would have cost (per call; "
        "0 for any other hit).",
    )
    estimated_usd: float = Field(
        default=0.0,
        exclude=True,
        description="What a replayed response would have cost from a live model (it cost $0).",
    )
    request_id: str | None = None
    cache_hit: bool = False
    origin: RecordOrigin | None = Field(
        default=None,
        exclude=True,
        description="A cache hit's: where the stored answer came from; a replayed answer's: "
        "what its record says, the origin the cache gives its entry (per call, not part of "
        "the stored response).",
    )
    latency_s: float = 0.0

    def same_answer(self, other: LLMResponse) -> bool:
        """Whether `other` says the same: text, parsed output, answering model and stop reason
        (usage, cost, latency and request id aside). Parsed outputs compare as JSON, so
        `true` and `1` differ."""
        return (self.text, self.model, self.stop_reason) == (
            other.text,
            other.model,
            other.stop_reason,
        ) and json.dumps(self.parsed, sort_keys=True) == json.dumps(other.parsed, sort_keys=True)

    def mark_checked(self, schema: dict[str, Any] | None) -> None:
        """Record that `parsed` was validated against `schema` (this very object), so the
        layers above do not validate the same answer again."""
        _memo(self)["checked_schema"] = schema

    def checked_against(self, schema: dict[str, Any]) -> bool:
        """Whether `parsed` was validated against this very `schema` object."""
        memo = self.__pydantic_private__
        return memo is not None and memo.get("checked_schema") is schema
