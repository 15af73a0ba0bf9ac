"""The cache's background writer lingers before it commits, so it does not take the
interpreter lock while the event loop handles the answer it was given; anyone who waits for
a commit has it written at once."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from toolkit.llm import cache_writer
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.cache_writer import PendingWrite, WriteBehind
from toolkit.llm.client import LLMClient
from toolkit.llm.commits import deferring_commits
from toolkit.llm.models import LLMResponse
from toolkit.llm.scripted import ScriptedProvider

GOOD = {"reasoning": "r", "result": True}
A_MINUTE = 60.0  # a linger no test may wait out: each must end because someone hurried


class Recorder:
    """A `write` for WriteBehind that notes the keys of each batch it is given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, items: list[PendingWrite]) -> None:
        self.batches.append([item.key for item in items])


def pending(key: str) -> PendingWrite:
    request = verify_request(key)
    return PendingWrite(key, request, LLMResponse(text="{}", model="m"), False, True)


async def test_answers_queued_while_the_writer_lingers_share_one_write() -> None:
    recorder = Recorder()
    writer = WriteBehind(recorder, "test", linger_s=A_MINUTE)
    first = writer.queue(pending("a"))
    await asyncio.sleep(0.05)
    second = writer.queue(pending("b"))
    assert recorder.batches == []  # still lingering
    writer.hurry()
    await asyncio.wait_for(asyncio.gather(first, second), timeout=30)
    assert recorder.batches == [["a", "b"]]
    writer.close()


class CountingCondition(threading.Condition):
    """A condition that counts how often a thread waiting on it woke up."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups = 0

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        self.wakeups += 1
        return woken


async def test_answers_queued_while_the_writer_lingers_do_not_wake_it() -> None:
    recorder = Recorder()
    writer = WriteBehind(recorder, "test", linger_s=A_MINUTE)
    condition = writer._cond = CountingCondition()
    commits = [writer.queue(pending("first"))]
    await asyncio.sleep(0.05)  # the writer took the first answer and lingers
    woken = condition.wakeups
    keys = [f"a{n}" for n in range(20)]
    for key in keys:
        commits.append(writer.queue(pending(key)))
        await asyncio.sleep(0.005)  # time for a woken writer to run
    assert condition.wakeups == woken
    writer.hurry()
    await asyncio.wait_for(asyncio.gather(*commits), timeout=30)
    assert recorder.batches == [["first", *keys]]
    writer.close()


async def test_an_answer_nobody_waits_for_is_written_once_the_linger_is_over() -> None:
    recorder = Recorder()
    writer = WriteBehind(recorder, "test", linger_s=0.1)
    await asyncio.wait_for(writer.queue(pending("a")), timeout=30)
    assert recorder.batches == [["a"]]
    writer.close()


async def test_waiting_for_a_commit_writes_it_without_lingering() -> None:
    recorder = Recorder()
    writer = WriteBehind(recorder, "test", linger_s=A_MINUTE)
    await asyncio.wait_for(writer.committed(pending("a")), timeout=30)
    assert recorder.batches == [["a"]]
    writer.close()


async def test_flush_and_close_write_without_lingering() -> None:
    recorder = Recorder()
    writer = WriteBehind(recorder, "test", linger_s=A_MINUTE)
    writer.queue(pending("a"))
    started = time.monotonic()
    writer.flush()
    assert recorder.batches == [["a"]]
    writer.queue(pending("b"))
    writer.close()
    assert recorder.batches == [["a"], ["b"]]
    assert time.monotonic() - started < A_MINUTE / 2


@pytest.fixture
def lingering_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ResponseCache:
    """A response cache whose writer would linger a minute unless hurried."""
    monkeypatch.setattr(cache_writer, "WRITE_LINGER_S", A_MINUTE)
    return ResponseCache(tmp_path / "c.sqlite")


async def test_a_call_outside_a_barrier_returns_once_its_answer_is_committed(
    lingering_cache: ResponseCache, tmp_path: Path
) -> None:
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD), cache=lingering_cache, cache_mode=CacheMode.RW
    )
    request = verify_request("a")
    await asyncio.wait_for(client.complete(request), timeout=30)
    assert len(ResponseCache(tmp_path / "c.sqlite").records()) == 1  # seen by another reader
    await client.aclose()


async def test_a_settling_barrier_has_its_answers_committed_at_once(
    lingering_cache: ResponseCache, tmp_path: Path
) -> None:
    client = LLMClient(
        ScriptedProvider(lambda r: GOOD), cache=lingering_cache, cache_mode=CacheMode.RW
    )
    requests = [verify_request("a"), verify_request("b")]
    with deferring_commits() as barrier:
        await asyncio.gather(*(client.complete(request) for request in requests))
    await asyncio.wait_for(barrier.settled(), timeout=30)
    assert len(ResponseCache(tmp_path / "c.sqlite").records()) == len(requests)
    await client.aclose()
