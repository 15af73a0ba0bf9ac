"""The Anthropic provider against a loopback stub, through the real `anthropic` SDK."""

from __future__ import annotations

import pytest

from tests.llm.conftest import verify_request
from tests.llm.stub_api import ANTHROPIC_PATH, Reply, StubAPI, anthropic_message, error_body
from toolkit.errors import LLMError
from toolkit.llm.anthropic_provider import AnthropicProvider
from toolkit.llm.client import LLMClient
from toolkit.llm.models import Usage

GOOD = '{"reasoning": "It is.", "result": true}'
FAST_RETRY = {"retry-after-ms": "10"}


def provider(stub: StubAPI, **options: object) -> AnthropicProvider:
    options = {"max_retries": 2, "timeout_s": 5.0, **options}
    return AnthropicProvider(base_url=stub.url(), **options)  # type: ignore[arg-type]


async def test_structured_output_success_parses_and_keeps_usage(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(GOOD, cache_read=900, cache_write=50)))
    response = await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert response.parsed == {"reasoning": "It is.", "result": True}
    assert len(stub.calls(ANTHROPIC_PATH)) == 1
    assert response.usage == Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=900, cache_write_tokens=50
    )


async def test_request_uses_native_schema_and_caches_the_system_prefix(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(GOOD)))
    await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    body = stub.calls(ANTHROPIC_PATH)[0]
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "tools" not in body


async def test_rate_limit_with_retry_after_is_retried_by_the_sdk(stub: StubAPI) -> None:
    stub.queue(
        ANTHROPIC_PATH,
        Reply(429, error_body("rate_limit_error", "slow down"), {"retry-after": "0.01"}),
        Reply(body=anthropic_message(GOOD)),
    )
    response = await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert response.parsed["result"] is True
    assert len(stub.calls(ANTHROPIC_PATH)) == 2
    assert response.usage.input_tokens == 100


async def test_overloaded_then_server_error_then_success(stub: StubAPI) -> None:
    stub.queue(
        ANTHROPIC_PATH,
        Reply(529, error_body("overloaded_error", "Overloaded"), FAST_RETRY),
        Reply(500, error_body("api_error", "boom"), FAST_RETRY),
        Reply(body=anthropic_message(GOOD)),
    )
    response = await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert response.parsed["result"] is True
    assert len(stub.calls(ANTHROPIC_PATH)) == 3
    assert response.usage.output_tokens == 20


async def test_overloaded_after_all_retries_is_an_overloaded_error(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, *[Reply(529, error_body("overloaded_error", "x"), FAST_RETRY)] * 2)
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=1).complete(verify_request(model="claude-sonnet-5-5"))
    assert caught.value.kind == "overloaded"
    assert len(stub.calls(ANTHROPIC_PATH)) == 2


async def test_timeout_is_reported_as_timeout(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(GOOD), delay_s=1.0))
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=0, timeout_s=0.2).complete(
            verify_request(model="claude-sonnet-5-5")
        )
    assert caught.value.kind == "timeout"
    assert len(stub.calls(ANTHROPIC_PATH)) == 1
    assert caught.value.usage == Usage()


async def test_malformed_json_is_reasked_once_and_usage_summed(stub: StubAPI) -> None:
    stub.queue(
        ANTHROPIC_PATH,
        Reply(body=anthropic_message("{not json")),
        Reply(body=anthropic_message(GOOD)),
    )
    response = await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert response.parsed["result"] is True
    calls = stub.calls(ANTHROPIC_PATH)
    assert len(calls) == 2
    assert calls[1]["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "{not json"}],
    }
    assert "did not match" in calls[1]["messages"][2]["content"][0]["text"]
    assert response.usage == Usage(input_tokens=200, output_tokens=40)


async def test_invalid_output_gives_up_after_two_reasks(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, *[Reply(body=anthropic_message('{"result": "maybe"}'))] * 3)
    with pytest.raises(LLMError) as caught:
        await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert caught.value.kind == "invalid_output"
    assert caught.value.attempts == 3
    assert len(stub.calls(ANTHROPIC_PATH)) == 3
    assert caught.value.usage == Usage(input_tokens=300, output_tokens=60)


async def test_a_reask_that_times_out_keeps_the_usage_of_the_invalid_answer(
    stub: StubAPI,
) -> None:
    stub.queue(
        ANTHROPIC_PATH,
        Reply(body=anthropic_message("{not json")),
        Reply(body=anthropic_message(GOOD), delay_s=1.0),
    )
    with pytest.raises(LLMError) as caught:
        await provider(stub, max_retries=0, timeout_s=0.2).complete(
            verify_request(model="claude-sonnet-5-5")
        )
    assert caught.value.kind == "timeout"
    assert caught.value.attempts == 2
    assert caught.value.usage == Usage(input_tokens=100, output_tokens=20)
    assert len(stub.calls(ANTHROPIC_PATH)) == 2


async def test_truncation_is_an_error_that_keeps_usage(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message('{"reas', stop_reason="max_tokens")))
    with pytest.raises(LLMError) as caught:
        await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert caught.value.kind == "truncated"
    assert caught.value.usage == Usage(input_tokens=100, output_tokens=20)
    assert len(stub.calls(ANTHROPIC_PATH)) == 1


async def test_refusal_is_an_error_that_keeps_usage(stub: StubAPI) -> None:
    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("I can't help", stop_reason="refusal")))
    with pytest.raises(LLMError) as caught:
        await provider(stub).complete(verify_request(model="claude-sonnet-5-5"))
    assert caught.value.kind == "refused"
    assert caught.value.usage.output_tokens == 20
    assert len(stub.calls(ANTHROPIC_PATH)) == 1


async def test_native_schema_rejection_falls_back_to_forced_tool_use(stub: StubAPI) -> None:
    rejection = error_body("invalid_request_error", "output_config.format: not supported by model")
    tool_reply = anthropic_message(
        tool_input={"reasoning": "ok", "result": False}, stop_reason="tool_use"
    )
    stub.queue(
        ANTHROPIC_PATH, Reply(400, rejection), Reply(body=tool_reply), Reply(body=tool_reply)
    )
    chosen = provider(stub)
    first = await chosen.complete(verify_request(model="claude-old"))
    second = await chosen.complete(verify_request("again", model="claude-old"))
    calls = stub.calls(ANTHROPIC_PATH)
    assert first.parsed == second.parsed == {"reasoning": "ok", "result": False}
    assert len(calls) == 3
    assert calls[1]["tool_choice"] == {"type": "tool", "name": "VerificationResult"}
    assert "output_config" not in calls[2]


async def test_truncated_call_is_recorded_in_ledger_and_not_cached(stub: StubAPI, tmp_path) -> None:
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.cache_mode import CacheMode

    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("{", stop_reason="max_tokens")))
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(provider(stub), cache=cache, cache_mode=CacheMode.RW)
    with pytest.raises(LLMError):
        await client.complete(verify_request(model="claude-sonnet-5-5"))
    row = client.ledger.rows[0]
    assert (row.error, row.input_tokens, row.output_tokens) == ("truncated", 100, 20)
    assert row.cost_usd == pytest.approx((100 * 2.0 + 20 * 10.0) / 1_000_000)
    assert cache.stats().entries == 0


async def test_at_most_four_cache_breakpoints_are_sent(stub: StubAPI) -> None:
    from toolkit.llm.models import SystemBlock

    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(GOOD)))
    blocks = [SystemBlock(text=f"block {i}", cache=True) for i in range(6)]
    request = verify_request(model="claude-sonnet-5-5").model_copy(update={"system": blocks})
    await provider(stub).complete(request)
    marks = ["cache_control" in block for block in stub.calls(ANTHROPIC_PATH)[0]["system"]]
    assert marks == [False, False, True, True, True, True]


async def test_images_are_sent_as_base64_sources(stub: StubAPI) -> None:
    from toolkit.llm.models import Message

    stub.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(GOOD)))
    turn = Message.user("Does the screenshot show it?", images=["aGVsbG8="])
    request = verify_request(model="claude-sonnet-5-5").model_copy(update={"messages": [turn]})
    await provider(stub).complete(request)
    content = stub.calls(ANTHROPIC_PATH)[0]["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "aGVsbG8="},
    }


async def test_configured_tool_mode_forces_the_tool_from_the_start(stub: StubAPI) -> None:
    tool_reply = anthropic_message(
        tool_input={"reasoning": "r", "result": True}, stop_reason="tool_use"
    )
    stub.queue(ANTHROPIC_PATH, Reply(body=tool_reply))
    response = await provider(stub, structured="tool").complete(verify_request(model="claude-x"))
    body = stub.calls(ANTHROPIC_PATH)[0]
    assert response.parsed == {"reasoning": "r", "result": True}
    assert body["tools"][0]["input_schema"]["required"] == ["reasoning", "result"]
    assert "output_config" not in body
