"""A call its maker stopped waiting for goes on (it is shared and paid for): the ledger still
gets its row when it ends, so the ledger, the budget and the cache agree on what was spent."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from toolkit.errors import LedgerError
from toolkit.llm.abandoned import tracking_abandoned
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger
from toolkit.llm.pricing import PriceTable
from toolkit.llm.scripted import Policy, ScriptedProvider

GOOD = {"reasoning": "r", "result": True}
FULL_DISK = Path("/dev/full")


def gated_client(tmp_path: Path, gate: asyncio.Event) -> LLMClient:
    async def answer(request: object) -> dict[str, object]:
        await gate.wait()
        return GOOD

    return cached_client(tmp_path, answer)


def cached_client(tmp_path: Path, model: Policy) -> LLMClient:
    """A client of `model` with the response cache on (a call its maker leaves goes on)."""
    return LLMClient(
        ScriptedProvider(model),
        cache=ResponseCache(tmp_path / "cache.sqlite"),
        cache_mode=CacheMode.RW,
        ledger=Ledger(tmp_path / "ledger.jsonl", PriceTable(), keep_rows=True),
        budget_usd=10.0,
    )


async def settle(client: LLMClient, rows: int) -> None:
    for _ in range(200):
        if len(client.ledger.rows) >= rows:
            return
        await asyncio.sleep(0.01)


async def test_an_abandoned_call_that_completes_still_gets_its_paid_row(tmp_path: Path) -> None:
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    request = verify_request("a")
    waiting = asyncio.ensure_future(client.complete(request))
    await asyncio.sleep(0.05)
    waiting.cancel()
    gate.set()
    await settle(client, 1)
    rows = client.ledger.rows
    assert len(rows) == 1 and not rows[0].cache_hit and rows[0].error is None
    assert rows[0].input_tokens > 0 and rows[0].cost_usd == client.budget.spent_usd
    assert rows[0].answered_by == "o4-mini"  # the model the (scripted) answer names
    stored = client.cache.lookup(request.cache_key(client.provider.name))  # type: ignore[union-attr]
    assert stored is not None  # the answer is kept: a rerun will not pay again
    await client.aclose()


async def test_a_call_cancelled_while_its_answer_is_committed_still_gets_its_paid_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer came back (paid, charged to the budget); its caller was cancelled while
    waiting for the cache's writer, held up here, to commit it."""
    gate = asyncio.Event()
    gate.set()
    client = gated_client(tmp_path, gate)
    behind = client.cache._behind  # type: ignore[union-attr]
    write, writer_free = behind._write, threading.Event()

    def slow_write(items: list[object]) -> None:
        writer_free.wait(5)
        write(items)

    monkeypatch.setattr(behind, "_write", slow_write)
    waiting = asyncio.ensure_future(client.complete(verify_request("a")))
    for _ in range(200):
        if client.budget.spent_usd > 0:
            break
        await asyncio.sleep(0.01)
    assert client.budget.spent_usd > 0 and not waiting.done()  # paid, waiting for the commit
    waiting.cancel()
    await settle(client, 1)
    writer_free.set()
    rows = client.ledger.rows
    assert len(rows) == 1 and not rows[0].cache_hit and rows[0].error is None
    assert rows[0].input_tokens > 0 and rows[0].cost_usd == client.budget.spent_usd
    await client.aclose()


async def test_a_cancelled_follower_adds_no_row_and_the_leader_keeps_its_own(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    leader = asyncio.ensure_future(client.complete(verify_request("a")))
    follower = asyncio.ensure_future(client.complete(verify_request("a")))
    await asyncio.sleep(0.05)
    follower.cancel()
    gate.set()
    await leader
    await asyncio.sleep(0.05)
    assert [row.cache_hit for row in client.ledger.rows] == [False]
    await client.aclose()


async def test_an_abandoned_calls_latency_counts_from_its_own_start_when_its_request_is_reused(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    request = verify_request("a").model_copy(update={"provider": "scripted"})  # sent as is
    leader = asyncio.ensure_future(client.complete(request))
    await asyncio.sleep(0.1)
    follower = asyncio.ensure_future(client.complete(request))  # the same object, in flight
    await asyncio.sleep(0.02)
    leader.cancel()
    gate.set()
    await follower
    await settle(client, 2)
    paid = [row for row in client.ledger.rows if not row.cache_hit]
    assert len(paid) == 1 and paid[0].latency_s >= 0.1  # not from the follower's start
    await client.aclose()


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full")
async def test_a_late_row_that_cannot_be_written_fails_the_close_not_an_asyncio_log(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    client.ledger.path = FULL_DISK  # every write fails with ENOSPC, as on a full disk
    logged: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: logged.append(context))
    waiting = asyncio.ensure_future(client.complete(verify_request("a")))
    await asyncio.sleep(0.05)
    waiting.cancel()
    gate.set()
    await settle(client, 1)
    await asyncio.sleep(0.01)
    assert logged == []  # the failure is not left to asyncio's log
    with pytest.raises(LedgerError, match="usage ledger /dev/full cannot be written"):
        await client.aclose()
    client.ledger.close()  # raised once: closing again is quiet


def test_an_abandoned_call_the_command_outlives_is_counted_with_no_known_cost(
    tmp_path: Path,
) -> None:
    """The request was sent: the ledger and the `LLM:` line count it although it never ended
    (`asyncio.run` cancels what is left when the command's work returns)."""
    made: list[LLMClient] = []

    async def command() -> None:
        client = gated_client(tmp_path, asyncio.Event())  # the model never answers
        made.append(client)
        waiting = asyncio.ensure_future(client.complete(verify_request("a")))
        await asyncio.sleep(0.05)
        waiting.cancel()  # e.g. the judge timed out
        await asyncio.gather(waiting, return_exceptions=True)

    asyncio.run(command())
    client = made[0]
    assert [(row.error, row.input_tokens, row.cost_usd) for row in client.ledger.rows] == [
        ("abandoned", 0, 0.0)
    ]
    assert client.summary_line().endswith("; 1 failed")
    client.ledger.close()
    assert '"error":"abandoned"' in (tmp_path / "ledger.jsonl").read_text()


async def test_a_call_cancelled_in_flight_with_the_cache_off_gets_an_abandoned_row() -> None:
    """Without a cache the call is cancelled with its caller; it was sent, so it is counted as
    a shared call the command outlived is: `abandoned`, with no known cost."""
    client = LLMClient(
        ScriptedProvider(lambda request: asyncio.Event().wait()),  # the model never answers
        ledger=Ledger(None, PriceTable()),
        budget_usd=10.0,
    )
    waiting = asyncio.ensure_future(client.complete(verify_request("a")))
    await asyncio.sleep(0.05)
    waiting.cancel()  # e.g. the judge timed out
    await asyncio.gather(waiting, return_exceptions=True)
    await settle(client, 1)
    assert [(row.error, row.input_tokens, row.cost_usd) for row in client.ledger.rows] == [
        ("abandoned", 0, 0.0)
    ]
    assert client.budget.spent_usd == 0.0
    assert client.summary_line().endswith("; 1 failed")
    await client.aclose()


async def test_the_work_that_abandoned_a_call_is_handed_its_row_once_it_is_paid(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    with tracking_abandoned() as abandoned:
        waiting = asyncio.ensure_future(client.complete(verify_request("a")))
        await asyncio.sleep(0.05)
        waiting.cancel()  # e.g. the judge timed out
        await asyncio.gather(waiting, return_exceptions=True)
    asyncio.get_running_loop().call_later(0.05, gate.set)  # the model answers after that
    spend = await abandoned.settle(5.0)
    assert (spend.running, spend.rows) == (0, tuple(client.ledger.rows))
    assert spend.rows[0].error is None and spend.rows[0].cost_usd > 0
    await client.aclose()


async def test_a_call_still_running_when_the_wait_ends_is_told_as_running(
    tmp_path: Path,
) -> None:
    client = gated_client(tmp_path, asyncio.Event())  # the model never answers
    with tracking_abandoned() as abandoned:
        waiting = asyncio.ensure_future(client.complete(verify_request("a")))
        await asyncio.sleep(0.05)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
    spend = await abandoned.settle(0.05)
    assert (spend.running, spend.rows, client.ledger.rows) == (1, (), [])
    await client.aclose()


def ignoring_cancellation(tmp_path: Path, answer: asyncio.Event) -> LLMClient:
    """A client whose model, once its call is cancelled, goes on regardless (as a provider
    ignoring the cancellation does) and answers when `answer` is set; its close waits 0.05 s."""

    async def model(request: object) -> dict[str, object]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await answer.wait()
        return GOOD

    client = cached_client(tmp_path, model)
    client.close_wait_s = 0.05
    return client


async def abandon_one_call(client: LLMClient) -> None:
    waiting = asyncio.ensure_future(client.complete(verify_request("a")))
    await asyncio.sleep(0.05)
    waiting.cancel()  # e.g. the judge timed out: the shared call goes on
    await asyncio.gather(waiting, return_exceptions=True)


async def test_a_call_still_running_after_the_close_wait_is_counted_as_having_no_ledger_row(
    tmp_path: Path,
) -> None:
    answer = asyncio.Event()
    client = ignoring_cancellation(tmp_path, answer)
    await abandon_one_call(client)
    await client.aclose()
    summary = client.summary()
    assert (summary.calls, summary.unrecorded_calls, client.ledger.rows) == (0, 1, [])
    assert client.summary_line().endswith("; 1 more with no ledger row (cost unknown)")
    answer.set()  # (let it end)


async def test_a_row_that_comes_after_the_close_wait_is_no_longer_counted_as_missing(
    tmp_path: Path,
) -> None:
    """A local command's end (`asyncio.run`) waits for such a call: its row may come after all."""
    answer = asyncio.Event()
    client = ignoring_cancellation(tmp_path, answer)
    await abandon_one_call(client)
    await client.aclose()
    answer.set()
    await settle(client, 1)
    summary = client.summary()
    assert (summary.calls, summary.unrecorded_calls) == (1, 0)
    assert [row.error for row in client.ledger.rows] == [None]  # it answered: paid
    client.ledger.close()


async def followed_on_leaving_a_shared_call(tmp_path: Path, *, maker_apart: bool) -> int:
    """How many calls of other units of work the tracker of a unit of work counts once it
    stops waiting for a shared call, made in another unit of work (`maker_apart`) or its own."""
    gate = asyncio.Event()
    client = gated_client(tmp_path, gate)
    with tracking_abandoned() as work:
        with tracking_abandoned() if maker_apart else contextlib.nullcontext():
            maker = asyncio.ensure_future(client.complete(verify_request("a")))
        await asyncio.sleep(0.05)
        follower = asyncio.ensure_future(client.complete(verify_request("a")))  # shares it
        await asyncio.sleep(0.05)
        follower.cancel()  # e.g. its judge timed out
        await asyncio.gather(follower, return_exceptions=True)
    gate.set()
    await maker
    followed = (await work.settle(0.0)).followed
    await client.aclose()
    return followed


async def test_leaving_a_call_another_unit_of_work_made_is_counted_as_followed(
    tmp_path: Path,
) -> None:
    assert await followed_on_leaving_a_shared_call(tmp_path, maker_apart=True) == 1


async def test_leaving_a_call_of_its_own_unit_of_work_is_not_counted_as_followed(
    tmp_path: Path,
) -> None:
    assert await followed_on_leaving_a_shared_call(tmp_path, maker_apart=False) == 0
