"""Fixtures for the LLM layer tests: a loopback stub API, canary keys, clean proxy settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer

from tests.llm.stub_api import StubAPI
from toolkit.llm.models import LLMRequest, Message, RequestMeta, SystemBlock

CANARY_ANTHROPIC = "sk-ant-canary-7f3e9c1d2b4a"
CANARY_OPENAI = "sk-openai-canary-5d8a2f6e0c9b"

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "result": {"type": "boolean"}},
    "required": ["reasoning", "result"],
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No proxies, canary keys only, no user config file (cwd is an empty directory)."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("JUDGEGEN_CONFIG", raising=False)
    for name in list(os.environ):
        if (
            name.startswith("JUDGEGEN_") and name != "JUDGEGEN_SERVER"
        ):  # stays off (tests/conftest.py)
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def _stub_server() -> Iterator[HTTPServer]:
    """One threaded loopback server for the session (stopping one takes half a second)."""
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stub(_stub_server: HTTPServer) -> Iterator[StubAPI]:
    """The loopback server answering both APIs from this test's queued replies."""
    api = StubAPI(_stub_server)
    _stub_server.clear()
    _stub_server.expect_request("/v1/messages", method="POST").respond_with_handler(api.handle)
    _stub_server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(
        api.handle
    )
    yield api
    _stub_server.clear()


def verify_request(
    text: str = "Is the sky blue?", *, model: str = "o4-mini", index: int = 0
) -> LLMRequest:
    """A verification-shaped request with a schema and a cacheable system prefix."""
    return LLMRequest(
        model=model,
        system=[SystemBlock(text="You verify claims.", cache=True)],
        messages=[Message.user(text)],
        output_schema=VERDICT_SCHEMA,
        schema_name="VerificationResult",
        max_tokens=256,
        sample_index=index,
        metadata=RequestMeta(purpose="verify", task_id="demo"),
    )
