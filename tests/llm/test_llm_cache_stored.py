"""What the response cache stores: only answers that are answers. A refused, truncated,
schema-breaking or empty output, a failed, stopped or cancelled call is never stored, so a
rerun asks again instead of replaying it; one stored before (or imported) is a miss."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.errors import BudgetExceeded, LLMError
from toolkit.llm.cache import CacheRecord, ResponseCache, record_json
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta, Usage
from toolkit.llm.pricing import ModelPrice, PriceTable
from toolkit.llm.scripted import ScriptedProvider

CODE = "```python\ndef evaluate(answer):\n    return 1\n```"


def client_on(path: Path, policy: Callable[[LLMRequest], Any], **options: Any) -> LLMClient:
    provider = ScriptedProvider(policy)
    return LLMClient(provider, cache=ResponseCache(path), cache_mode=CacheMode.RW, **options)


def draft_request() -> LLMRequest:
    """A request without a schema (a judge draft): its answer is text nobody validates."""
    return LLMRequest(
        provider="scripted",
        model="claude-sonnet-5-5",
        messages=(Message.user("Write the judge."),),
        metadata=RequestMeta(purpose="draft"),
    )


def stopped(reason: str) -> Callable[[LLMRequest], LLMResponse]:
    return lambda request: LLMResponse(text="{}", model=request.model, stop_reason=reason)


def failing(request: LLMRequest) -> LLMResponse:
    raise LLMError("boom", kind="server")


NOT_ANSWERS: dict[str, tuple[Callable[[], LLMRequest], Callable[[LLMRequest], Any]]] = {
    "refused": (verify_request, stopped("refusal")),
    "content-filtered": (verify_request, stopped("content_filter")),
    "truncated-max-tokens": (verify_request, stopped("max_tokens")),
    "truncated-length": (verify_request, stopped("length")),
    "context-window-exceeded": (verify_request, stopped("model_context_window_exceeded")),
    "schema-breaking": (verify_request, lambda request: {"unexpected": 1}),
    "provider-error": (verify_request, failing),
    "empty-text": (draft_request, lambda request: ""),
    "blank-text": (draft_request, lambda request: " \n\t"),
}
"""Each kind of output that is not an answer: the request it answers, and the policy giving it."""


@pytest.mark.parametrize("kind", list(NOT_ANSWERS), ids=list(NOT_ANSWERS))
async def test_an_output_that_is_not_an_answer_is_never_stored(kind: str, tmp_path: Path) -> None:
    make_request, policy = NOT_ANSWERS[kind]
    client = client_on(tmp_path / "c.sqlite", policy)
    served = []
    for _ in range(2):
        try:
            served.append((await client.complete(make_request())).cache_hit)
        except LLMError:
            served.append(False)
    await client.aclose()
    assert served == [False, False]  # the rerun asked the provider again
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


async def test_a_stored_empty_answer_is_a_miss_replaced_by_the_next_answer(tmp_path: Path) -> None:
    """An empty answer stored by an older judgegen (or imported) is asked again, not replayed."""
    path = tmp_path / "c.sqlite"
    request = draft_request()
    ResponseCache(path).put(CacheRecord.of(request, LLMResponse(text="", stop_reason="end_turn")))
    client = client_on(path, lambda _: CODE)
    response = await client.complete(request)
    await client.aclose()
    assert (response.cache_hit, response.text) == (False, CODE)
    assert ResponseCache(path).get_response(request.cache_key()).text == CODE  # type: ignore[union-attr]


def test_an_import_replaces_a_held_empty_answer_without_being_told_to(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = draft_request()
    cache.put(CacheRecord.of(request, LLMResponse(text=" ", stop_reason="end_turn")))
    recorded = CacheRecord.of(request, LLMResponse(text=CODE, stop_reason="end_turn"))
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / recorded.file_name()).write_text(record_json(recorded))
    report = cache.import_dir(tmp_path / "records")
    assert report.replaced == 1
    assert cache.get_response(request.cache_key()).text == CODE  # type: ignore[union-attr]


async def test_a_call_the_budget_stops_stores_nothing(tmp_path: Path) -> None:
    prices = PriceTable(prices={"m": ModelPrice(input=1_000_000.0, output=0.0)})

    def paid(request: LLMRequest) -> LLMResponse:
        answer = verdict(request)
        return LLMResponse(parsed=answer, text="{}", model="m", usage=Usage(input_tokens=1))

    client = client_on(tmp_path / "c.sqlite", paid, budget_usd=1.0, prices=prices)
    await client.complete(verify_request("first", model="m"))
    with pytest.raises(BudgetExceeded):
        await client.complete(verify_request("second", model="m"))
    await client.aclose()
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.stats().entries == 1
    assert cache.get_response(verify_request("second", model="m").cache_key()) is None


async def test_a_call_cancelled_before_its_answer_stores_nothing(tmp_path: Path) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(request: LLMRequest) -> dict[str, Any]:
        started.set()
        await release.wait()
        return verdict(request)

    client = client_on(tmp_path / "c.sqlite", slow)
    call = asyncio.ensure_future(client.complete(verify_request()))
    await started.wait()
    call.cancel()
    await client.aclose()  # cancels the call nobody waits for any more
    release.set()
    await asyncio.sleep(0.05)
    assert call.cancelled()
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


async def test_an_answer_given_after_a_re_ask_is_stored_for_the_request_as_asked(
    tmp_path: Path,
) -> None:
    """The corrected answer is a valid answer to the original request: stored under its key,
    with the original conversation (not the re-ask's), and served next time."""
    answers = iter([{"unexpected": 1}, {"reasoning": "fixed", "result": True}])
    client = client_on(tmp_path / "c.sqlite", lambda request: next(answers))
    first = await client.complete(verify_request())
    again = await client.complete(verify_request())
    await client.aclose()
    assert first.parsed == again.parsed == {"reasoning": "fixed", "result": True}
    assert again.cache_hit
    (record,) = ResponseCache(tmp_path / "c.sqlite").records()
    assert record.request.messages == verify_request().messages
