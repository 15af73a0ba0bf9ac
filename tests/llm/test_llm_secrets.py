"""No API key ever reaches the cache, the ledger, exported fixtures or exception text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llm.conftest import CANARY_ANTHROPIC, CANARY_OPENAI, verify_request
from tests.llm.stub_api import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Reply,
    StubAPI,
    anthropic_message,
    error_body,
    openai_completion,
)
from toolkit.errors import LLMError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.client import build_client
from toolkit.llm.settings import LLMSettings

GOOD = '{"reasoning": "fine", "result": true}'


def settings(stub: StubAPI, tmp_path: Path, provider: str, base: str) -> LLMSettings:
    return LLMSettings(
        provider=provider,
        model="claude-sonnet-5-5" if provider == "anthropic" else "o4-mini",
        base_url=stub.url(base),
        cache_path=tmp_path / "cache.sqlite",
        ledger_path=tmp_path / "ledger.jsonl",
        max_retries=0,
    )


def written_text(root: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize(
    ("provider", "base", "path", "ok_body"),
    [
        ("anthropic", "", ANTHROPIC_PATH, anthropic_message(GOOD)),
        ("openai", "/v1", OPENAI_PATH, openai_completion(GOOD)),
    ],
)
async def test_canary_key_is_never_written_or_raised(
    stub: StubAPI, tmp_path: Path, provider: str, base: str, path: str, ok_body: dict
) -> None:
    echo = error_body(
        "authentication_error", f"invalid x-api-key {CANARY_ANTHROPIC} {CANARY_OPENAI}"
    )
    stub.queue(path, Reply(body=ok_body), Reply(401, echo))
    client = build_client(settings(stub, tmp_path, provider, base))
    await client.complete(verify_request("first", model=client.model or ""))
    with pytest.raises(LLMError) as caught:
        await client.complete(verify_request("second", model=client.model or ""))
    await client.aclose()
    ResponseCache(tmp_path / "cache.sqlite").export_dir(tmp_path / "fixtures")
    sent_headers = " ".join(stub.received[0][2].values())
    assert CANARY_ANTHROPIC in sent_headers or CANARY_OPENAI in sent_headers
    everything = written_text(tmp_path) + str(caught.value) + repr(caught.value.args)
    assert (tmp_path / "fixtures").is_dir() and (tmp_path / "ledger.jsonl").is_file()
    assert CANARY_ANTHROPIC not in everything
    assert CANARY_OPENAI not in everything
    assert caught.value.kind == "auth"
