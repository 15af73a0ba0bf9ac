"""The OpenAI provider against a loopback stub, through the real `openai` SDK."""

from __future__ import annotations

import pytest

from tests.llm.conftest import verify_request
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, error_body, openai_completion
from toolkit.errors import LLMError
from toolkit.llm.client import LLMClient
from toolkit.llm.models import Usage
from toolkit.llm.openai_provider import OpenAIProvider

GOOD = '{"reasoning": "It is.", "result": true}'
FAST_RETRY = {"retry-after-ms": "10"}


def provider(stub: StubAPI, **options: object) -> OpenAIProvider:
    options = {"max_retries": 2, "timeout_s": 5.0, **options}
    return OpenAIProvider(base_url=stub.url("/v1"), **options)  # type: ignore[arg-type]


async def test_structured_output_success_parses_and_splits_cached_tokens(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH, Reply(body=openai_completion(GOOD, prompt_tokens=1000, cached_tokens=800))
    )
    response = await provider(stub).complete(verify_request())
    assert response.parsed == {"reasoning": "It is.", "result": True}
    assert len(stub.calls(OPENAI_PATH)) == 1
    assert response.usage == Usage(input_tokens=200, output_tokens=20, cache_read_tokens=800)


async def test_native_mode_sends_a_strict_json_schema(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD)))
    await provider(stub).complete(verify_request())
    body = stub.calls(OPENAI_PATH)[0]
    spec = body["response_format"]["json_schema"]
    assert (body["response_format"]["type"], spec["strict"]) == ("json_schema", True)
    assert spec["schema"]["additionalProperties"] is False
    assert body["max_completion_tokens"] == 256


async def test_json_mode_puts_the_schema_in_the_prompt(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD)))
    await provider(stub, schema_mode="json").complete(verify_request())
    body = stub.calls(OPENAI_PATH)[0]
    assert body["response_format"] == {"type": "json_object"}
    assert "JSON schema" in body["messages"][0]["content"]


async def test_prompt_mode_accepts_a_fenced_answer(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(f"Sure:\n```json\n{GOOD}\n```")))
    response = await provider(stub, schema_mode="prompt").complete(verify_request())
    assert response.parsed["result"] is True
    assert "response_format" not in stub.calls(OPENAI_PATH)[0]


async def test_rate_limit_with_retry_after_is_retried_by_the_sdk(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH,
        Reply(429, error_body("rate_limit_exceeded", "slow down"), {"retry-after": "0.01"}),
        Reply(body=openai_completion(GOOD)),
    )
    response = await provider(stub).complete(verify_request())
    assert response.parsed["result"] is True
    assert len(stub.calls(OPENAI_PATH)) == 2
    assert response.usage.input_tokens == 100


async def test_server_errors_then_success(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH,
        Reply(500, error_body("server_error", "boom"), FAST_RETRY),
        Reply(503, error_body("server_error", "busy"), FAST_RETRY),
        Reply(body=openai_completion(GOOD)),
    )
    response = await provider(stub).complete(verify_request())
    assert response.parsed["result"] is True
    assert len(stub.calls(OPENAI_PATH)) == 3


async def test_rate_limit_after_all_retries_is_a_rate_limit_error(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(429, error_body("rate_limit_exceeded", "no"), FAST_RETRY))
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=0).complete(verify_request())
    assert caught.value.kind == "rate_limit"
    assert len(stub.calls(OPENAI_PATH)) == 1


async def test_timeout_is_reported_as_timeout(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD), delay_s=1.0))
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=0, timeout_s=0.2).complete(verify_request())
    assert caught.value.kind == "timeout"
    assert len(stub.calls(OPENAI_PATH)) == 1


async def test_malformed_json_is_reasked_once_and_usage_summed(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH,
        Reply(body=openai_completion('{"reasoning": "x", "result": tru')),
        Reply(body=openai_completion(GOOD)),
    )
    response = await provider(stub).complete(verify_request())
    calls = stub.calls(OPENAI_PATH)
    assert response.parsed["result"] is True
    assert len(calls) == 2
    assert calls[1]["messages"][-2]["role"] == "assistant"
    assert response.usage == Usage(input_tokens=200, output_tokens=40)


async def test_a_reask_that_times_out_keeps_the_usage_of_the_invalid_answer(
    stub: StubAPI,
) -> None:
    stub.queue(
        OPENAI_PATH,
        Reply(body=openai_completion('{"reasoning": "x", "result": tru')),
        Reply(body=openai_completion(GOOD), delay_s=1.0),
    )
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=0, timeout_s=0.2).complete(verify_request())
    assert caught.value.kind == "timeout"
    assert caught.value.attempts == 2
    assert caught.value.usage == Usage(input_tokens=100, output_tokens=20)
    assert len(stub.calls(OPENAI_PATH)) == 2


async def test_truncation_is_an_error_that_keeps_usage(stub: StubAPI) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion('{"reas', finish_reason="length")))
    with pytest.raises(LLMError) as caught:
        await provider(stub).complete(verify_request())
    assert caught.value.kind == "truncated"
    assert caught.value.usage == Usage(input_tokens=100, output_tokens=20)
    assert len(stub.calls(OPENAI_PATH)) == 1


async def test_refusal_is_an_error_that_keeps_usage(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH, Reply(body=openai_completion(None, refusal="I can't assist with that."))
    )
    with pytest.raises(LLMError) as caught:
        await provider(stub).complete(verify_request())
    assert caught.value.kind == "refused"
    assert "can't assist" in str(caught.value)
    assert caught.value.usage.input_tokens == 100
    assert len(stub.calls(OPENAI_PATH)) == 1


async def test_ledger_records_usage_and_cost_of_a_wire_call(stub: StubAPI) -> None:
    stub.queue(
        OPENAI_PATH, Reply(body=openai_completion(GOOD, prompt_tokens=1000, cached_tokens=400))
    )
    client = LLMClient(provider(stub))
    response = await client.complete(verify_request())
    row = client.ledger.rows[0]
    expected = (600 * 1.10 + 400 * 0.275 + 20 * 4.40) / 1_000_000
    assert (row.purpose, row.model) == ("verify", "o4-mini")
    assert row.provider == f"openai@{stub.url('/v1')}"  # the server answering, by name
    assert (row.input_tokens, row.cache_read_tokens, row.output_tokens) == (600, 400, 20)
    assert row.cost_usd == pytest.approx(expected)
    assert response.cost_usd == pytest.approx(expected)


async def test_missing_api_key_is_a_config_error_without_a_call(
    stub: StubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMError) as caught:
        await OpenAIProvider().complete(verify_request())
    assert caught.value.kind == "config"
    assert "OPENAI_API_KEY" in str(caught.value)
    assert stub.received == []


async def test_images_are_sent_as_data_urls(stub: StubAPI) -> None:
    from toolkit.llm.models import Message

    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD)))
    turn = Message.user("Look:", images=["aGVsbG8="])
    request = verify_request().model_copy(update={"messages": [turn]})
    await provider(stub).complete(request)
    content = stub.calls(OPENAI_PATH)[0]["messages"][1]["content"]
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64,aGVsbG8="},
    }
