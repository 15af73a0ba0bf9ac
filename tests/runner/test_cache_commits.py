"""An evaluation's answers reach the response cache before its result is written, without
each LLM call waiting for its own commit; a store that fails never leaves a complete result."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import copy_fixtures, options, stored
from tests.fixtures.runner.llm_policy import policy
from tests.llm.conftest import verify_request
from toolkit.backends import LLMBackend
from toolkit.errors import CacheError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.commits import deferring_commits
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner import results as results_module
from toolkit.runner.builder import Isolation
from toolkit.runner.inputs import discover_answers
from toolkit.runner.report import RunReport
from toolkit.runner.scheduler import run_evaluations


def run_on_cache(
    work: Path,
    cache: ResponseCache,
    provider: ScriptedProvider,
    isolation: Isolation,
    task_id: str | None = None,
) -> RunReport:
    """Run the fixture answers (of `task_id`, or all) through the real LLM layer."""
    client = LLMClient(provider, cache=cache, cache_mode=CacheMode.RW)
    inputs = [i for i in discover_answers(work / "answers") if task_id in (None, i.task_id)]

    async def go() -> RunReport:
        try:
            return await run_evaluations(
                inputs,
                backend=LLMBackend(client),
                options=options(work, jobs=1),
                isolation=isolation,
            )
        finally:
            await client.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("isolation", ["in_process", "sandbox"])
def test_a_result_is_written_only_once_the_answers_it_used_are_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: Isolation
) -> None:
    work = copy_fixtures(tmp_path)
    path = tmp_path / "cache.sqlite"
    provider = ScriptedProvider(policy)
    seen: list[tuple[int, int]] = []
    write = results_module.ResultStore.write

    def checking_write(store: results_module.ResultStore, result: object) -> Path:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as reader:
            (entries,) = reader.execute("SELECT COUNT(*) FROM entries").fetchone()
        seen.append((entries, len(provider.calls)))  # what another process sees on disk
        return write(store, result)  # type: ignore[arg-type]

    monkeypatch.setattr(results_module.ResultStore, "write", checking_write)
    cache = ResponseCache(path)
    insert = cache._insert

    def slow(db: object, item: object) -> None:  # a slow disk: commits trail the calls
        time.sleep(0.02)
        insert(db, item)  # type: ignore[arg-type]

    monkeypatch.setattr(cache, "_insert", slow)
    report = run_on_cache(work, cache, provider, isolation, task_id="louvre_hours")
    assert report.evaluated > 1 and not report.incomplete
    # one evaluation at a time (--jobs 1): every answer paid for so far is on disk
    assert all(entries == paid for entries, paid in seen), seen
    assert seen[-1][1] > report.evaluated


@pytest.mark.parametrize("isolation", ["in_process", "sandbox"])
def test_a_store_that_fails_leaves_an_incomplete_result_and_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: Isolation
) -> None:
    work = copy_fixtures(tmp_path)
    cache = ResponseCache(tmp_path / "cache.sqlite")

    def broken(db: object, item: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")  # as SQLite reports it

    monkeypatch.setattr(cache, "_insert", broken)
    report = run_on_cache(work, cache, ScriptedProvider(policy), isolation)
    (head,) = [h for h in report.results if h.first_error]  # the first evaluation stops the run
    assert report.evaluated == 1 and report.not_started > 0
    assert head.status == "incomplete" and head.final_score is None
    assert head.first_error is not None and head.first_error["kind"] == "cache"
    assert "disk I/O error" in stored(work, head).errors[-1]["message"]
    assert report.stopped and "disk I/O error" in report.stopped
    assert report.exit_code == 3


async def test_inside_a_barrier_a_call_returns_before_its_commit_and_the_barrier_waits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    release = threading.Event()
    insert = cache._insert

    def held(db: object, item: object) -> None:
        release.wait(10)
        insert(db, item)  # type: ignore[arg-type]

    cache._insert = held  # type: ignore[method-assign]
    client = LLMClient(ScriptedProvider(policy), cache=cache, cache_mode=CacheMode.RW)
    with deferring_commits() as commits:
        answer = await asyncio.wait_for(client.complete(verify_request("a")), 5)
    assert not answer.cache_hit
    settling = asyncio.ensure_future(commits.settled())
    await asyncio.sleep(0.05)
    assert not settling.done()  # the store is still held
    release.set()
    await asyncio.wait_for(settling, 5)
    other = ResponseCache(path)
    assert other.stats().entries == 1
    other.close()
    await client.aclose()


async def test_a_call_that_outlives_its_barrier_waits_for_its_own_commit_and_sees_it_fail(
    tmp_path: Path,
) -> None:
    # a task a judge left running: it inherited the evaluation's barrier, which has settled
    cache = ResponseCache(tmp_path / "cache.sqlite")

    def failing(db: object, item: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    cache._insert = failing  # type: ignore[method-assign]
    client = LLMClient(ScriptedProvider(policy), cache=cache, cache_mode=CacheMode.RW)
    go = asyncio.Event()

    async def stray() -> None:
        await go.wait()
        await client.complete(verify_request("late"))

    with deferring_commits() as commits:
        task = asyncio.ensure_future(stray())
    await commits.settled()
    go.set()
    with pytest.raises(CacheError, match="disk I/O error"):
        await asyncio.wait_for(task, 5)
    await client.aclose()
