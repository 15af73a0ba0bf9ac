"""The cache key holds everything that changes what a provider answers, or how judgegen reads
the answer: two requests that differ in any one of those fields never share a cached answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.llm.conftest import verify_request
from tests.llm.stub_api import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Reply,
    StubAPI,
    anthropic_message,
    openai_completion,
)
from toolkit.llm.anthropic_provider import AnthropicProvider
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.cached_provider import CachedProvider
from toolkit.llm.endpoint import identity
from toolkit.llm.models import (
    BLOB_MIN_CHARS,
    SCHEMA_VERSION,
    ImagePart,
    LLMRequest,
    Message,
    RequestMeta,
    SystemBlock,
    TextPart,
)
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.scripted import ScriptedProvider

PAGE = "page text " * 1_000
"""Long enough to be keyed (and stored) by its digest."""
SHOT = "iVBORw0KGgo" * 1_000
"""A screenshot keyed by its digest."""
ICON = "R0lGODlhAQABAIAAAP"
"""An image short enough to be keyed inline."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "Why, from the page."},
        "result": {"type": "string", "enum": ["supported", "unsupported"]},
    },
    "required": ["reasoning", "result"],
}


def turn(
    claim: str = "Claim: the river is long.",
    page: str = PAGE,
    images: tuple[ImagePart, ...] = (ImagePart(data=SHOT), ImagePart(data=ICON)),
) -> tuple[Message, ...]:
    return (Message(role="user", content=(TextPart(text=claim), TextPart(text=page), *images)),)


def schema(**changes: dict[str, Any]) -> dict[str, Any]:
    return {**SCHEMA, "properties": {**SCHEMA["properties"], **changes}}


def request(**changes: Any) -> LLMRequest:
    """A verification-shaped request, built afresh, with `changes` to its fields."""
    fields: dict[str, Any] = {
        "provider": "openai",
        "model": "o4-mini",
        "system": (SystemBlock(text="You verify claims.", cache=True),),
        "messages": turn(),
        "output_schema": SCHEMA,
        "schema_name": "VerificationResult",
        "max_tokens": 1024,
        "metadata": RequestMeta(purpose="verify", task_id="t"),
    }
    return LLMRequest(**{**fields, **changes})


DIFFERENCES: dict[str, tuple[str, Callable[[], LLMRequest]]] = {
    "provider": ("provider", lambda: request(provider="anthropic")),
    "base-url": (
        "provider",
        lambda: request(provider=identity("openai", "http://gpu:8000/v1", "")),
    ),
    "structured-output-mode": (
        "provider",
        lambda: request(provider=identity("openai", None, "json")),
    ),
    "model-snapshot-vs-alias": ("model", lambda: request(model="o4-mini-2025-04-16")),
    "endpoint": ("endpoint", lambda: request(endpoint="responses")),
    "max-tokens": ("max_tokens", lambda: request(max_tokens=2048)),
    "system-prompt-text": (
        "system",
        lambda: request(system=(SystemBlock(text="You verify claims!", cache=True),)),
    ),
    "system-prompt-extra-block": (
        "system",
        lambda: request(
            system=(
                SystemBlock(text="You verify claims.", cache=True),
                SystemBlock(text="Be brief."),
            )
        ),
    ),
    "user-prompt-text": ("messages", lambda: request(messages=turn(claim="Claim: it is short."))),
    "page-text-last-char": ("messages", lambda: request(messages=turn(page=PAGE[:-1] + "!"))),
    "screenshot-bytes": (
        "messages",
        lambda: request(
            messages=turn(images=(ImagePart(data=SHOT[:-1] + "A"), ImagePart(data=ICON)))
        ),
    ),
    "small-image-bytes": (
        "messages",
        lambda: request(messages=turn(images=(ImagePart(data=SHOT), ImagePart(data=ICON + "A")))),
    ),
    "image-media-type": (
        "messages",
        lambda: request(
            messages=turn(
                images=(ImagePart(data=SHOT, media_type="image/png"), ImagePart(data=ICON))
            )
        ),
    ),
    "image-order": (
        "messages",
        lambda: request(messages=turn(images=(ImagePart(data=ICON), ImagePart(data=SHOT)))),
    ),
    "image-dropped": ("messages", lambda: request(messages=turn(images=(ImagePart(data=SHOT),)))),
    "image-sent-as-text": (
        "messages",
        lambda: request(
            messages=(Message(role="user", content=(TextPart(text="Claim"), TextPart(text=SHOT))),)
        ),
    ),
    "text-sent-as-image": (
        "messages",
        lambda: request(
            messages=(Message(role="user", content=(TextPart(text="Claim"), ImagePart(data=SHOT))),)
        ),
    ),
    "conversation-turns": (
        "messages",
        lambda: request(messages=(*turn(), Message.assistant("{}"), Message.user("Fix it."))),
    ),
    "schema-field-description": (
        "output_schema",
        lambda: request(output_schema=schema(reasoning={"type": "string", "description": "Why."})),
    ),
    "schema-enum-values": (
        "output_schema",
        lambda: request(output_schema=schema(result={"type": "string", "enum": ["yes", "no"]})),
    ),
    "schema-field-type": (
        "output_schema",
        lambda: request(output_schema=schema(result={"type": "boolean"})),
    ),
    "schema-field-added": (
        "output_schema",
        lambda: request(output_schema=schema(quote={"type": "string"})),
    ),
    "schema-required": (
        "output_schema",
        lambda: request(output_schema={**SCHEMA, "required": ["result"]}),
    ),
    "no-schema": ("output_schema", lambda: request(output_schema=None)),
    "schema-name": ("schema_name", lambda: request(schema_name="Verdict")),
    "trial-index": ("sample_index", lambda: request(sample_index=1)),
    "request-version": ("version", lambda: request(version=SCHEMA_VERSION + 1)),
}
"""Each way a request can differ, as (the field that differs, the request that differs)."""
KEY_NEUTRAL = {"metadata"}
"""Fields that never change the answer: why a request was made (purpose, task, label)."""


@pytest.mark.parametrize("difference", list(DIFFERENCES), ids=list(DIFFERENCES))
def test_a_request_differing_in_one_answer_changing_field_has_another_key(difference: str) -> None:
    _, changed = DIFFERENCES[difference]
    assert changed().cache_key() != request().cache_key()


def test_a_request_differing_only_in_why_it_was_made_has_the_same_key() -> None:
    relabelled = request(metadata=RequestMeta(purpose="extract", task_id="u", label="again"))
    assert relabelled.cache_key() == request().cache_key()


def test_every_request_field_is_keyed_or_declared_key_neutral() -> None:
    """A field added to `LLMRequest` (a temperature, a seed, stop sequences, tools, a reasoning
    effort) must get a row in DIFFERENCES, or be declared key-neutral with a reason."""
    keyed = {field for field, _ in DIFFERENCES.values()}
    assert keyed | KEY_NEUTRAL == set(LLMRequest.model_fields)
    assert not keyed & KEY_NEUTRAL


def test_the_page_and_screenshot_of_the_table_are_keyed_by_digest() -> None:
    """The table's large parts take the digest path, its icon and claim the inline one."""
    assert min(len(PAGE), len(SHOT)) >= BLOB_MIN_CHARS > max(len(ICON), len("Claim"))
    _, blobs = request().storage_form()
    assert set(blobs.values()) == {PAGE, SHOT}


@pytest.mark.parametrize(
    ("part", "update"),
    [
        (TextPart(text=PAGE), {"text": PAGE + "!"}),
        (ImagePart(data=SHOT), {"data": SHOT + "A"}),
    ],
    ids=["page-text", "screenshot"],
)
def test_a_hashed_part_copied_with_another_payload_is_keyed_by_its_own(
    part: TextPart | ImagePart, update: dict[str, str]
) -> None:
    """A part's digest is memoized once its request is hashed; a copy given another payload
    must not inherit it (it would be looked up, and stored, as the original)."""
    original = request(messages=(Message(role="user", content=(TextPart(text="Claim"), part)),))
    key = original.cache_key()  # memoizes the part's digest
    copied = part.model_copy(update=update)
    changed = request(messages=(Message(role="user", content=(TextPart(text="Claim"), copied)),))
    fresh = type(part).model_validate({**part.model_dump(), **update})
    rebuilt = request(messages=(Message(role="user", content=(TextPart(text="Claim"), fresh)),))
    assert key != changed.cache_key() == rebuilt.cache_key()
    assert set(changed.storage_form()[1].values()) == {copied.content()}


async def test_a_cache_keys_a_request_by_the_provider_it_wraps(tmp_path: Any) -> None:
    """Two providers sharing one cache file, sent a request that names neither, answer with
    their own answers: the cache layer keys it by the provider it wraps."""
    path = tmp_path / "c.sqlite"
    answers = []
    for name, result in (("scripted:yes", True), ("scripted:no", False), ("scripted:yes", True)):
        answer = {"reasoning": name, "result": result}
        provider = ScriptedProvider(lambda _, answer=answer: answer, name=name)
        cached = CachedProvider(provider, ResponseCache(path), CacheMode.RW)
        answers.append((await cached.complete(verify_request())).parsed["result"])
        cached.cache.close()  # type: ignore[union-attr]
    assert answers == [True, False, True]


OPENAI_PARAMETERS = {"model", "max_completion_tokens", "messages", "response_format", "stream"}
"""`stream` is the SDK's own (false for `parse`): judgegen never streams."""
ANTHROPIC_PARAMETERS = {"model", "max_tokens", "system", "messages", "output_config"}


async def test_the_openai_provider_sends_only_parameters_the_key_holds(stub: StubAPI) -> None:
    """No sampling setting (temperature, top_p, seed, stop, tools, reasoning effort) is sent,
    so the server's defaults answer and nothing outside the key shapes the answer."""
    stub.queue(OPENAI_PATH, Reply(body=openai_completion('{"reasoning": "r", "result": true}')))
    await OpenAIProvider(base_url=stub.url("/v1"), max_retries=0).complete(verify_request())
    assert set(stub.calls(OPENAI_PATH)[0]) == OPENAI_PARAMETERS


async def test_the_anthropic_provider_sends_only_parameters_the_key_holds(stub: StubAPI) -> None:
    """As for OpenAI: no sampling setting, only what the request (and its key) holds."""
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message('{"reasoning": "r", "result": true}')))
    provider = AnthropicProvider(base_url=stub.url(), max_retries=0)
    await provider.complete(verify_request(model="claude-sonnet-5-5"))
    assert set(stub.calls(ANTHROPIC_PATH)[0]) == ANTHROPIC_PARAMETERS
