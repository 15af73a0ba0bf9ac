"""A provider's name says which service answers (server and structured-output mode when not
the defaults), so one server's cached answers are never served as another's, and a result
judged on one server is stale on another."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from generator.cli.run_backend import LLMIdentity
from tests.llm.conftest import verify_request
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, anthropic_message, openai_completion
from toolkit.backends import LLMBackend, VerifyRequest
from toolkit.errors import LLMError
from toolkit.llm.anthropic_provider import AnthropicProvider
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.endpoint import check_client_server
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.settings import LLMSettings

OTHER_PATH = "/other" + OPENAI_PATH
"""A second OpenAI-compatible server on the stub, serving the same model name."""
YES = '{"reasoning": "Server A says yes.", "result": true}'
NO = '{"reasoning": "Server B says no.", "result": false}'


@pytest.fixture
def two_servers(stub: StubAPI, _stub_server: HTTPServer) -> Iterator[tuple[str, str]]:
    _stub_server.expect_request(OTHER_PATH, method="POST").respond_with_handler(stub.handle)
    yield stub.url("/v1"), stub.url("/other/v1")


async def test_two_servers_serving_one_model_name_never_share_cached_answers(
    stub: StubAPI, two_servers: tuple[str, str], tmp_path: Path
) -> None:
    first, second = two_servers
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(YES)))
    stub.queue(OTHER_PATH, Reply(body=openai_completion(NO)))
    answers = []
    for url in (first, second, first):
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = LLMClient(OpenAIProvider(base_url=url), cache=cache, cache_mode=CacheMode.RW)
        answers.append((await client.complete(verify_request())).parsed["result"])
        await client.aclose()
    assert answers == [True, False, True]  # the third is server A's answer, from the cache
    assert (len(stub.calls(OPENAI_PATH)), len(stub.calls(OTHER_PATH))) == (1, 1)


async def test_a_request_naming_another_provider_is_cached_as_the_provider_that_answers(
    stub: StubAPI, two_servers: tuple[str, str], tmp_path: Path
) -> None:
    first, second = two_servers
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(YES)))
    stub.queue(OTHER_PATH, Reply(body=openai_completion(NO)))
    answers = []
    for url in (first, second):
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = LLMClient(OpenAIProvider(base_url=url), cache=cache, cache_mode=CacheMode.RW)
        backend = LLMBackend(client, provider="openai", trials=1)  # names no server
        answers.append((await backend.verify(VerifyRequest(claim="The sky is blue."))).passed)
        await client.aclose()
    assert answers == [True, False]
    assert (len(stub.calls(OPENAI_PATH)), len(stub.calls(OTHER_PATH))) == (1, 1)


def test_the_official_api_keeps_the_plain_name() -> None:
    for url in (None, "", "https://api.openai.com/v1", "https://mtls.api.openai.com/v1/"):
        assert OpenAIProvider(base_url=url).name == "openai"
    assert AnthropicProvider(base_url="https://api.anthropic.com").name == "anthropic"


def test_a_local_server_and_a_non_default_mode_are_part_of_the_name() -> None:
    local = "http://localhost:8000/v1"
    assert OpenAIProvider(base_url=local).name == f"openai@{local}"
    assert OpenAIProvider(base_url=local, schema_mode="json").name == f"openai@{local} mode=json"
    assert AnthropicProvider(structured="tool").name == "anthropic mode=tool"


def test_credentials_and_query_in_a_server_url_stay_out_of_the_name() -> None:
    provider = OpenAIProvider(base_url="https://user:s3cret@proxy.example/v1?key=s3cret")
    assert provider.name == "openai@https://proxy.example/v1"


def test_the_sdks_own_variable_names_the_server_as_the_setting_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8080/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.internal")
    assert OpenAIProvider().name == "openai@http://gpu-box:8080/v1"
    assert AnthropicProvider().name == "anthropic@https://gateway.internal"
    assert OpenAIProvider(base_url="http://other:1/v1").name == "openai@http://other:1/v1"


def test_an_sdk_client_calling_another_server_than_its_name_says_is_a_config_error() -> None:
    check_client_server("openai", None, "https://api.openai.com/v1/")
    check_client_server("openai", "http://LocalHost:8000/v1", "http://localhost:8000/v1/")
    with pytest.raises(LLMError, match="JUDGEGEN_LLM_BASE_URL=http://profile-server/v1") as caught:
        check_client_server("openai", None, "http://profile-server/v1/")
    assert caught.value.kind == "config"
    with pytest.raises(LLMError, match="judgegen was told http://a/v1"):
        check_client_server("openai", "http://a/v1", "http://b/v1/")
    with pytest.raises(LLMError) as caught:
        check_client_server("openai", None, "http://user:s3cret@b/v1/?key=s3cret")
    assert "s3cret" not in str(caught.value)


async def test_the_client_checks_the_server_its_sdk_calls(
    stub: StubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.queue("/v1/messages", Reply(body=anthropic_message(YES)))
    provider = AnthropicProvider(base_url=stub.url())
    assert provider.name == f"anthropic@{stub.url()}"
    await provider.complete(verify_request(model="claude-x"))
    sneaky = OpenAIProvider()  # named for the official API; its SDK will read the variable
    monkeypatch.setenv("OPENAI_BASE_URL", "http://not-what-the-name-says/v1")
    with pytest.raises(LLMError, match="not-what-the-name-says"):
        await sneaky.complete(verify_request())


def test_a_result_judged_on_another_server_or_mode_is_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = LLMIdentity(model="o4-mini", extract_model="o4-mini", trials=3)
    official = llm.spec(LLMSettings())
    assert official == "llm provider=openai model=o4-mini trials=3"
    local = llm.spec(LLMSettings(base_url="http://localhost:8000/v1"))
    assert local == "llm provider=openai model=o4-mini base_url=http://localhost:8000/v1 trials=3"
    assert llm.spec(LLMSettings(openai_schema_mode="prompt")) != official
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert llm.spec(LLMSettings()) == local
