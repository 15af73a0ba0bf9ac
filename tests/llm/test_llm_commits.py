"""The commit barrier: one wait for a unit of work's cache commits, which reports a failure."""

from __future__ import annotations

import asyncio

import pytest

from toolkit.errors import CacheError
from toolkit.llm.commits import CommitBarrier, current_barrier, deferring_commits


async def test_settling_waits_for_every_commit_and_raises_a_failed_one() -> None:
    loop = asyncio.get_running_loop()
    fine, failed = loop.create_future(), loop.create_future()
    barrier = CommitBarrier()
    barrier.add(fine)
    barrier.add(failed)
    settling = asyncio.ensure_future(barrier.settled())
    fine.set_result(None)
    await asyncio.sleep(0)
    assert not settling.done()  # one commit is still out
    failed.set_exception(CacheError("c.sqlite", "disk I/O error"))
    with pytest.raises(CacheError, match="disk I/O error"):
        await settling
    await barrier.settled()  # each commit is reported once


async def test_a_barrier_given_up_does_not_cancel_a_commit_others_wait_for() -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    barrier = CommitBarrier()
    barrier.add(commit)
    other = asyncio.ensure_future(asyncio.shield(commit))  # a caller that shared the call
    settling = asyncio.ensure_future(barrier.settled())
    await asyncio.sleep(0)
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling
    assert not commit.cancelled()
    commit.set_result(None)
    await other


async def test_the_barrier_is_open_only_inside_its_block() -> None:
    assert current_barrier.get() is None
    with deferring_commits() as barrier:
        assert current_barrier.get() is barrier
    assert current_barrier.get() is None


async def test_a_barrier_that_has_begun_to_settle_takes_no_more_commits() -> None:
    barrier = CommitBarrier()
    await barrier.settled()
    late: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    assert barrier.add(late) is False
    late.set_result(None)
