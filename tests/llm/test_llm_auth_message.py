"""A refused key (HTTP 401/403) fails as `auth` naming the call, the model, the answer and the fix.

The message says where the key went (the URL without credentials, as `shown_url` shows it),
for which model, what the server said, and which settings to check: the provider's key
variable and --base-url. The real SDKs talk to a loopback stub.
"""

from __future__ import annotations

import pytest

from tests.llm.conftest import CANARY_ANTHROPIC, CANARY_OPENAI, verify_request
from tests.llm.stub_api import ANTHROPIC_PATH, OPENAI_PATH, Reply, StubAPI, error_body
from toolkit.errors import LLMError
from toolkit.llm.anthropic_provider import AnthropicProvider
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.provider import Provider
from toolkit.runner.scheduler import STOP_KINDS

CASES = [
    ("openai", "/v1", OPENAI_PATH, "OPENAI_API_KEY"),
    ("anthropic", "", ANTHROPIC_PATH, "ANTHROPIC_API_KEY"),
]


def provider(kind: str, base_url: str) -> Provider:
    """The `kind` SDK provider calling `base_url`, without retries."""
    if kind == "anthropic":
        return AnthropicProvider(base_url=base_url, max_retries=0)
    return OpenAIProvider(base_url=base_url, max_retries=0)


async def failure(called: Provider) -> LLMError:
    """The `LLMError` one verification request for o4-mini fails with."""
    with pytest.raises(LLMError) as failed:
        await called.complete(verify_request())
    return failed.value


@pytest.mark.parametrize(("kind", "base", "path", "key"), CASES)
async def test_a_401_names_the_url_called_the_model_the_answer_and_the_key_to_check(
    stub: StubAPI, kind: str, base: str, path: str, key: str
) -> None:
    stub.queue(path, Reply(401, error_body("authentication_error", "invalid x-api-key")))
    error = await failure(provider(kind, stub.url(base)))
    message = str(error)
    assert error.kind == "auth" and error.kind in STOP_KINDS
    assert f"the server answered POST {stub.url()}{path} with HTTP 401" in message
    assert "'o4-mini'" in message and "invalid x-api-key" in message
    assert f"Fix: check the key the SDK sends ({key}" in message and "--base-url" in message


@pytest.mark.parametrize(("kind", "base", "path", "key"), CASES)
async def test_a_403_says_the_key_is_denied_the_model(
    stub: StubAPI, kind: str, base: str, path: str, key: str
) -> None:
    said = "Project does not have access to model o4-mini"
    stub.queue(path, Reply(403, error_body("permission_error", said)))
    message = str(await failure(provider(kind, stub.url(base))))
    assert "with HTTP 403" in message and said in message
    assert "denies the key sent this endpoint or model 'o4-mini'" in message
    assert key in message and "--model" in message
    assert "JUDGEGEN_JUDGE_MODEL" in message  # `generate` extracts with the judge model


async def test_the_url_shown_has_no_credentials(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(401, error_body("authentication_error", "bad key")))
    port = stub.url().rsplit(":", 1)[1]
    base = f"http://someone:pa55word@127.0.0.1:{port}/v1"
    message = str(await failure(provider("openai", base)))
    assert f"POST http://127.0.0.1:{port}{OPENAI_PATH} with HTTP 401" in message
    assert "pa55word" not in message and "someone" not in message
    assert CANARY_OPENAI not in message and CANARY_ANTHROPIC not in message
