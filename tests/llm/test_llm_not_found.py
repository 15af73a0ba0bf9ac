"""A server with no such endpoint or model fails every call as `not_found`, naming the fix.

A --base-url without its API path (`/v1`), a web page's URL, a server that does not implement
the API, or a model the server does not serve: the server answers HTTP 404 (or 405, or 501)
to every call, whatever it asks, so the error is the configuration's and stops the command
(exit 3), after one request: the SDKs retry every other 5xx, not a 501. A 400 for one request (too long for the model's context) stays that request's own
`request` error. The real SDKs talk to a loopback stub.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.llm.conftest import verify_request
from tests.llm.stub_api import (
    ANTHROPIC_PATH,
    NOT_FOUND,
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
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.provider import NOT_FOUND_FIX, Provider
from toolkit.runner.scheduler import STOP_KINDS

ROOT = Path(__file__).resolve().parents[2]
GOOD = '{"reasoning": "fine", "result": true}'
OPENAI_NO_MODEL = {
    "error": {
        "message": "The model `o4-mimi` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
}


def provider(kind: str, base_url: str, retries: int = 0) -> Provider:
    """The `kind` SDK provider calling `base_url`."""
    if kind == "anthropic":
        return AnthropicProvider(base_url=base_url, max_retries=retries)
    return OpenAIProvider(base_url=base_url, max_retries=retries)


def answering_404_elsewhere(stub: StubAPI) -> None:
    """Make the stub answer 404 on every path but the APIs' own (as a server does whose API
    lives under /v1)."""
    stub.server.expect_request(re.compile(".*")).respond_with_json(NOT_FOUND, status=404)


async def failure(client: LLMClient | Provider, model: str = "o4-mini") -> LLMError:
    """The `LLMError` one verification request to `client` fails with."""
    with pytest.raises(LLMError) as failed:
        await client.complete(verify_request(model=model))
    return failed.value


@pytest.mark.parametrize(
    ("kind", "base", "called"),
    [("openai", "", "/chat/completions"), ("anthropic", "/api", "/api/v1/messages")],
)
async def test_a_base_url_without_the_api_path_is_not_found_naming_url_model_answer_and_fix(
    stub: StubAPI, kind: str, base: str, called: str
) -> None:
    answering_404_elsewhere(stub)
    error = await failure(provider(kind, stub.url(base), retries=2), model="some-model")
    message = str(error)
    assert error.kind == "not_found" and error.kind in STOP_KINDS
    assert f"POST {stub.url()}{called} with HTTP 404" in message
    assert "'some-model'" in message and "Not Found" in message
    assert message.endswith(f"Fix: {NOT_FOUND_FIX}")
    assert stub.received == []  # it reached no API path, and was sent once (no retry)
    assert len(stub.server.log) == 1


@pytest.mark.parametrize(
    ("kind", "base", "path", "body", "said"),
    [
        ("openai", "/v1", OPENAI_PATH, OPENAI_NO_MODEL, "The model `o4-mimi` does not exist"),
        (
            "anthropic",
            "",
            ANTHROPIC_PATH,
            error_body("not_found_error", "model: o4-mimi"),
            "model: o4-mimi",
        ),
    ],
)
async def test_a_model_the_server_does_not_serve_is_not_found_with_the_servers_words(
    stub: StubAPI, kind: str, base: str, path: str, body: dict, said: str
) -> None:
    stub.queue(path, Reply(404, body))
    error = await failure(provider(kind, stub.url(base)), model="o4-mimi")
    assert error.kind == "not_found"
    assert said in str(error) and "'o4-mimi'" in str(error) and "--model" in str(error)


async def test_a_405_from_a_url_that_takes_no_calls_is_not_found(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(405, {"detail": "Method Not Allowed"}))
    error = await failure(provider("openai", stub.url("/v1")))
    assert error.kind == "not_found" and "HTTP 405" in str(error)


SDK_PATHS = [("openai", "/v1", OPENAI_PATH), ("anthropic", "", ANTHROPIC_PATH)]
FAST_RETRY = {"retry-after-ms": "10"}


@pytest.mark.parametrize(("kind", "base", "path"), SDK_PATHS)
async def test_a_501_from_a_server_without_this_api_is_not_found_after_one_request(
    stub: StubAPI, kind: str, base: str, path: str
) -> None:
    stub.queue(path, *[Reply(501, {"detail": "Not Implemented"}, FAST_RETRY)] * 3)
    client = LLMClient(provider(kind, stub.url(base), retries=2), concurrency=1)
    error = await failure(client, model="some-model")
    message = str(error)
    assert error.kind == "not_found" and "HTTP 501" in message
    assert f"POST {stub.url()}{path} with HTTP 501" in message and "'some-model'" in message
    assert "does not implement" in message and message.endswith(f"Fix: {NOT_FOUND_FIX}")
    assert len(stub.server.log) == 1  # the SDK, retrying every 5xx, did not retry it
    assert [row.error for row in client.ledger.rows] == ["not_found"]
    assert client.breaker.failures == 0 and not client.breaker.open
    await client.aclose()


@pytest.mark.parametrize(("kind", "base", "path"), SDK_PATHS)
async def test_a_503_is_still_retried_by_the_sdk(
    stub: StubAPI, kind: str, base: str, path: str
) -> None:
    unavailable = Reply(503, error_body("api_error", "unavailable"), FAST_RETRY)
    answer = openai_completion(GOOD) if kind == "openai" else anthropic_message(GOOD)
    stub.queue(path, unavailable, unavailable, Reply(body=answer))
    client = LLMClient(provider(kind, stub.url(base), retries=2), concurrency=1)
    response = await client.complete(verify_request())
    assert response.parsed["result"] is True
    assert len(stub.calls(path)) == 3
    assert [row.error for row in client.ledger.rows] == [None]
    await client.aclose()


@pytest.mark.parametrize(
    ("kind", "base", "path", "answer"),
    [
        ("openai", "/v1", OPENAI_PATH, openai_completion(GOOD)),
        ("anthropic", "", ANTHROPIC_PATH, anthropic_message(GOOD)),
    ],
)
async def test_a_400_for_one_oversized_request_is_its_own_and_the_next_call_is_answered(
    stub: StubAPI, kind: str, base: str, path: str, answer: dict
) -> None:
    stub.queue(path, Reply(400, TOO_LONG), Reply(body=answer))
    client = LLMClient(provider(kind, stub.url(base)), concurrency=1)
    error = await failure(client)
    assert error.kind == "request" and error.kind not in STOP_KINDS
    assert "Fix:" not in str(error)
    assert (await client.complete(verify_request("the next claim"))).parsed["result"] is True
    await client.aclose()


async def test_a_cached_answer_is_still_served_when_the_server_answers_404(
    stub: StubAPI, tmp_path: Path
) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD)), Reply(404, OPENAI_NO_MODEL))
    cache = ResponseCache(tmp_path / "cache.sqlite")
    openai = provider("openai", stub.url("/v1"))
    client = LLMClient(openai, cache=cache, cache_mode=CacheMode.RW, concurrency=1)
    answered = await client.complete(verify_request("cached claim"))
    assert (await failure(client)).kind == "not_found"
    hit = await client.complete(verify_request("cached claim"))
    assert hit.cache_hit and hit.parsed == answered.parsed
    assert len(stub.received) == 2
    await client.aclose()


def test_generate_on_a_base_url_answering_404_exits_3_naming_the_fix(
    stub: StubAPI, tmp_path: Path
) -> None:
    answering_404_elsewhere(stub)
    args = ["generate", "rust_2024_edition", "--tasks-dir", str(ROOT / "tasks")]
    args += ["--judges", str(tmp_path / "judges"), "--reviews", str(tmp_path / "reviews")]
    args += ["--no-commit", "--no-acceptance", "--cache-mode", "off"]
    args += ["--provider", "openai", "--model", "some-model", "--base-url", stub.url()]
    env = {"JUDGEGEN_LEDGER_PATH": str(tmp_path / "ledger.jsonl"), "JUDGEGEN_LLM_MAX_RETRIES": "0"}
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 3, result.stderr
    assert "error: LLM call failed (not_found, HTTP 404)" in result.stderr
    assert f"POST {stub.url()}/chat/completions" in result.stderr
    assert "'some-model'" in result.stderr and f"Fix: {NOT_FOUND_FIX}" in result.stderr
    assert len(stub.server.log) == 1
