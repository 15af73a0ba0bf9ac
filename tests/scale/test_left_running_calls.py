"""On a cluster, as locally, the LLM calls a judge left running when it stopped (it timed out,
or returned with a task still calling the model) are charged to its result: what they cost
once they end, or, when that cannot be known, how many there were, said in its notes. So the
results add up to the gateway's ledger and the `LLM:` line.

The model answers a verification only once its evaluation is over (`OUTLIVED`), so every
verification is still running when its judge stops, however loaded the machine.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.runner.helpers import copy_fixtures, result_files
from tests.runner.test_abandoned_calls import (
    LEAVES_A_CALL_RUNNING,
    OUTLIVED,
    SHARED_POLICY,
    SHARES_A_CALL,
    abandoned_notes,
    assert_one_made_the_shared_call_and_one_waited,
)
from tests.scale.local_cluster import LocalCluster
from tests.scale.test_lost_node_usage import Stalls, gateway_serving, verify_call
from tests.scale.workspace import judgegen

pytestmark = pytest.mark.timeout(300)


NEVER_ANSWERED = "scripted:tests.fixtures.runner.llm_policy:verifications_never_answered"
"""A model holding every verification until it is cancelled: still running after any wait."""


def cluster_run(
    work: Path, cluster: LocalCluster, *extra: str, provider: str = OUTLIVED
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """`judgegen run --ray --json` of louvre_hours's answers with the `OUTLIVED` model (or
    `provider`): the run's record, its results and its ledger rows."""
    args = ["run", "--answers", "answers", "--judges", "judges", "--results", "results"]
    args += ["--include-unreviewed", "--task", "louvre_hours", "--provider", provider]
    args += ["--json", "--ray", cluster.address, *extra]
    env = {"JUDGEGEN_CACHE_PATH": "llm-cache.sqlite", "JUDGEGEN_LEDGER_PATH": "ledger.jsonl"}
    done = judgegen(work, *args, env=env)
    assert done.stdout, done.stderr
    ledger = work / "ledger.jsonl"  # none: no call was recorded
    rows = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    return json.loads(done.stdout), list(result_files(work / "results").values()), rows


@pytest.mark.parametrize("mode", ["--jobs=2", "--no-sandbox"], ids=["sandboxed", "in_process"])
def test_calls_a_timed_out_judge_left_running_on_a_node_are_charged_to_its_result(
    tmp_path: Path, cluster: LocalCluster, mode: str
) -> None:
    work = copy_fixtures(tmp_path)
    record, results, rows = cluster_run(work, cluster, mode, "--timeout", "1")
    assert any(r["status"] == "incomplete" for r in results)  # (one sharing a call may not be)
    assert rows and all(row["error"] is None for row in rows)  # answered once it ended: paid
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows) == record["llm"]["calls"]
    assert sum(r["usage"]["cost_usd"] for r in results) == pytest.approx(
        sum(row["cost_usd"] for row in rows)
    )
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    notes = [note for result in results for note in abandoned_notes(result)]
    assert notes and all("counted in this result's usage" in n for n in notes)
    assert record["usage"]["unknown_cost_calls"] == 0


def test_a_judge_timed_out_on_a_node_waiting_for_another_evaluations_call_says_so(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """As locally: of alpha's two louvre_hours answers, sharing one call at the gateway, one
    made it and the other was waiting for it when its judge timed out."""
    work = copy_fixtures(tmp_path)
    (work / "judges" / "louvre_hours.py").write_text(SHARES_A_CALL)
    shutil.rmtree(work / "answers" / "beta")
    _, results, rows = cluster_run(
        work, cluster, "--jobs=2", "--timeout", "1", provider=SHARED_POLICY
    )
    assert_one_made_the_shared_call_and_one_waited(results, len(rows))


@pytest.mark.parametrize("mode", ["--jobs=2", "--no-sandbox"], ids=["sandboxed", "in_process"])
def test_calls_a_judge_left_running_in_its_own_tasks_on_a_node_are_charged_to_its_result(
    tmp_path: Path, cluster: LocalCluster, mode: str
) -> None:
    work = copy_fixtures(tmp_path)
    (work / "judges" / "louvre_hours.py").write_text(LEAVES_A_CALL_RUNNING)
    record, results, rows = cluster_run(work, cluster, mode)
    assert rows and all(row["error"] is None for row in rows)
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows) == record["llm"]["calls"]
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    assert any(abandoned_notes(r) for r in results)


def test_calls_cancelled_on_a_node_with_the_cache_off_are_counted_with_their_cost_unknown(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    work = copy_fixtures(tmp_path)
    extra = ("--no-sandbox", "--timeout", "1", "--cache-mode", "off")
    record, results, rows = cluster_run(work, cluster, *extra)
    abandoned = [row for row in rows if row["error"] == "abandoned"]
    assert abandoned and all(row["cost_usd"] == 0 for row in abandoned)
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows) == record["llm"]["calls"]
    assert record["usage"]["unknown_cost_calls"] == len(abandoned)
    for result in results:
        (note,) = abandoned_notes(result)
        assert "cancelled" in note and "cost is not known" in note


def test_calls_still_running_when_the_gateway_closes_get_an_abandoned_ledger_row(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """They outlive the wait for them (its results count them, cost unknown): the gateway's
    close cancels them and writes their rows, as a local command's end does, before its actor
    is killed. So the ledger and the `LLM:` line count every call the results count."""
    work = copy_fixtures(tmp_path)
    extra = ("--no-sandbox", "--timeout", "1")
    record, results, rows = cluster_run(work, cluster, *extra, provider=NEVER_ANSWERED)
    abandoned = [row for row in rows if row["error"] == "abandoned"]
    verifications = [row for row in rows if row["purpose"] != "extract"]
    assert abandoned and abandoned == verifications
    assert all(row["cost_usd"] == 0 for row in abandoned)
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows) == record["llm"]["calls"]
    assert record["usage"]["unknown_cost_calls"] == len(abandoned)


def test_an_attempts_call_still_running_at_the_gateway_when_its_evaluation_ended_is_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its node has reported: no judge is left to read the answer, so it costs no more."""
    monkeypatch.chdir(tmp_path)  # the gateway runs in the driver's directory
    backend = Stalls()

    async def end() -> Any:
        gateway = gateway_serving(tmp_path, backend)
        await gateway.start.remote()
        call = gateway.handle.remote(verify_call(1), "tag#1")
        await backend.began.wait()
        ended = await gateway.end.remote("tag#1", 5.0)
        with pytest.raises(asyncio.CancelledError):
            await call
        return ended

    ended = asyncio.run(asyncio.wait_for(end(), timeout=30))
    assert ended.usage.verify_calls == 1 and ended.left_running == 0


def test_a_call_for_an_attempt_whose_evaluation_ended_is_refused_without_reaching_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call sent just before its evaluation ended, arriving after, spends nothing."""
    monkeypatch.chdir(tmp_path)
    backend = Stalls()

    async def refused() -> Any:
        gateway = gateway_serving(tmp_path, backend)
        await gateway.start.remote()
        await gateway.end.remote("tag#1", 0.0)
        return await gateway.handle.remote(verify_call(1), "tag#1")

    reply = asyncio.run(asyncio.wait_for(refused(), timeout=30))
    assert reply.reply.error is not None and reply.reply.error["kind"] == "cluster"
    assert backend.started == 0 and reply.usage.backend_calls == 0
