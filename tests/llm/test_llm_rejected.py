"""A server that gives every request the same 400 stops the command as `rejected`, naming the fix.

A local server that does not take `response_format`, or a model that refuses a parameter,
answers every request with the very same 400: after `REJECTION_THRESHOLD` different requests
in a row the client stops calling it (a stop kind: exit 3). A 400 about one request's content
(too long for the context), different 400s, or 400s with answers between them stay each
request's own. The real SDKs talk to a loopback stub.
"""

from __future__ import annotations

import pytest

from tests.llm.conftest import verify_request
from tests.llm.stub_api import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    TOO_LONG,
    Reply,
    StubAPI,
    anthropic_message,
    error_body,
    openai_completion,
)
from toolkit.errors import LLMError
from toolkit.llm.anthropic_provider import AnthropicProvider
from toolkit.llm.client import LLMClient
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.provider import Provider
from toolkit.llm.rejection import REJECTION_THRESHOLD, STRUCTURED_FIXES
from toolkit.runner.scheduler import STOP_KINDS

GOOD = '{"reasoning": "fine", "result": true}'
NO_RESPONSE_FORMAT = {
    "error": {
        "code": 400,
        "message": '"response_format" must be one of "text" or "json_object"',
        "type": "invalid_request_error",
    }
}
"""What llama.cpp's server answers a request asking for a `json_schema` response format."""
NO_BIG_OUTPUT = error_body(
    "invalid_request_error",
    "max_tokens: 256 > 128, which is the maximum allowed number of output tokens for tiny-1",
)
"""An Anthropic-style refusal of a parameter every request carries."""
PATHS = {"openai": OPENAI_PATH, "anthropic": ANTHROPIC_PATH}
ANSWERS = {"openai": openai_completion(GOOD), "anthropic": anthropic_message(GOOD)}


def client_for(kind: str, stub: StubAPI) -> LLMClient:
    """A client of the `kind` SDK calling the stub, one call at a time."""
    provider: Provider
    if kind == "anthropic":
        provider = AnthropicProvider(base_url=stub.url(), max_retries=0)
    else:
        provider = OpenAIProvider(base_url=stub.url("/v1"), max_retries=0)
    return LLMClient(provider, concurrency=1)


def parameter_error(kind: str, param: str) -> Reply:
    """A 400 refusing `param`, the way the `kind` API words it."""
    if kind == "anthropic":
        return Reply(400, error_body("invalid_request_error", f"{param}: Extra inputs"))
    body = {"message": f"Unrecognized request argument supplied: {param}", "param": param}
    return Reply(400, {"error": {**body, "type": "invalid_request_error", "code": None}})


async def outcomes(client: LLMClient, claims: list[str]) -> list[str]:
    """The error kind (or `ok`) of one verification request per claim, in turn."""
    found = []
    for claim in claims:
        try:
            await client.complete(verify_request(claim))
        except LLMError as exc:
            found.append(exc.kind)
        else:
            found.append("ok")
    return found


async def failure(client: LLMClient, claim: str) -> LLMError:
    """The `LLMError` one verification request of `claim` fails with."""
    with pytest.raises(LLMError) as failed:
        await client.complete(verify_request(claim))
    return failed.value


@pytest.mark.parametrize(
    ("kind", "body", "fix"),
    [
        ("openai", NO_RESPONSE_FORMAT, STRUCTURED_FIXES["openai"]),
        ("anthropic", NO_BIG_OUTPUT, "takes the parameter the server names"),
    ],
)
async def test_the_same_400_for_different_requests_in_a_row_stops_the_third_naming_the_fix(
    stub: StubAPI, kind: str, body: dict, fix: str
) -> None:
    stub.queue(PATHS[kind], *[Reply(400, body)] * REJECTION_THRESHOLD)
    client = client_for(kind, stub)
    earlier = await outcomes(client, [f"claim {n}" for n in range(REJECTION_THRESHOLD - 1)])
    stop = await failure(client, "the last claim")
    said = str(stop)
    assert earlier == ["request"] * (REJECTION_THRESHOLD - 1)
    assert stop.kind == "rejected" and stop.kind in STOP_KINDS
    assert f"to POST {stub.url()}{PATHS[kind]} for model 'o4-mini'" in said
    assert body["error"]["message"] in said and fix in said
    assert len(stub.received) == REJECTION_THRESHOLD
    await client.aclose()


async def test_once_stopped_later_requests_fail_as_rejected_without_a_call(
    stub: StubAPI,
) -> None:
    stub.queue(OPENAI_PATH, *[Reply(400, NO_RESPONSE_FORMAT)] * REJECTION_THRESHOLD)
    client = client_for("openai", stub)
    await outcomes(client, [f"claim {n}" for n in range(REJECTION_THRESHOLD)])
    later = await failure(client, "another claim")
    assert later.kind == "rejected" and "--schema-mode json" in str(later)
    assert len(stub.received) == REJECTION_THRESHOLD
    await client.aclose()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_same_400_with_answers_between_never_stops(stub: StubAPI, kind: str) -> None:
    refused, answered = parameter_error(kind, "seed"), Reply(body=ANSWERS[kind])
    stub.queue(PATHS[kind], *[refused, answered] * REJECTION_THRESHOLD, refused)
    client = client_for(kind, stub)
    found = await outcomes(client, [f"claim {n}" for n in range(2 * REJECTION_THRESHOLD + 1)])
    assert found == ["request", "ok"] * REJECTION_THRESHOLD + ["request"]
    await client.aclose()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_different_400s_in_a_row_never_stop(stub: StubAPI, kind: str) -> None:
    params = ["seed", "top_k", "seed", "top_k", "seed", "top_k"]
    stub.queue(PATHS[kind], *[parameter_error(kind, param) for param in params])
    client = client_for(kind, stub)
    found = await outcomes(client, [f"claim {n}" for n in range(len(params))])
    assert found == ["request"] * len(params)
    await client.aclose()


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("openai", TOO_LONG),
        (
            "openai",
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
        ),
        ("anthropic", error_body("invalid_request_error", "prompt is too long: 210000 tokens")),
        (
            "anthropic",
            error_body(
                "invalid_request_error",
                "messages.0.content.1.image.source: Could not process image",
            ),
        ),
    ],
    ids=["openai_context", "llama_cpp_context", "anthropic_too_long", "anthropic_image"],
)
async def test_the_same_400_about_the_requests_content_never_stops(
    stub: StubAPI, kind: str, body: dict
) -> None:
    count = 2 * REJECTION_THRESHOLD
    stub.queue(PATHS[kind], *[Reply(400, body)] * count)
    client = client_for(kind, stub)
    found = await outcomes(client, [f"claim {n}" for n in range(count)])
    assert found == ["request"] * count
    await client.aclose()


async def test_one_request_refused_again_and_again_counts_once(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, *[Reply(400, NO_RESPONSE_FORMAT)] * REJECTION_THRESHOLD)
    client = client_for("openai", stub)
    found = await outcomes(client, ["the same claim"] * REJECTION_THRESHOLD)
    assert found == ["request"] * REJECTION_THRESHOLD
    await client.aclose()
