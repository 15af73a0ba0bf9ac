"""Killing a worker node in the middle of a cluster run: nothing finished is lost, its
evaluations are retried on the other nodes (bounded), what still fails is incomplete, and what
the lost attempts spent is charged to their evaluations."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.scale.local_cluster import LocalCluster
from tests.scale.workspace import CLI, POLICY, add_slow_answers, cli_env, result_files

pytestmark = pytest.mark.timeout(300)
ANSWERS = 12
SPENDING_JUDGE = '''"""A judge that pays for a verification, then takes a while (so its node can be
killed after it spent), then pays for another."""

import asyncio

from toolkit import Evaluator

TASK_ID = "slow_task"
TASK_DESCRIPTION = "Which Python version introduced the match statement?"


async def evaluate(ev: Evaluator) -> None:
    first = ev.add_leaf(id="first", desc="The version is 3.10")
    await ev.verify(claim="Python 3.10 introduced the match statement.", node=first)
    await asyncio.sleep(1.5)
    second = ev.add_leaf(id="second", desc="It is still 3.10")
    await ev.verify(claim="Python 3.10 introduced the match statement, still.", node=second)
'''


def slow_workspace(work: Path) -> Path:
    (work / "judges").mkdir()
    add_slow_answers(work, ANSWERS, seconds=1.5)
    return work


def run_and_kill(work: Path, cluster: LocalCluster, *extra: str) -> tuple[int, str, list[str]]:
    """Run on the cluster plus one extra node; kill that node once 2 results are written.

    Returns the exit code, stderr, and the answers finished before the kill.
    """
    victim = cluster.add_worker(cpus=1)
    args = ["run", "--answers", "answers", "--judges", "judges", "--results", "results"]
    args += ["--include-unreviewed", "--provider", POLICY, "--cache-mode", "off", "--jobs", "6"]
    process = subprocess.Popen(
        [*CLI, *args, "--ray", cluster.address, *extra],
        cwd=work,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    finished: list[str] = []
    while len(finished) < 2:
        line = process.stderr.readline()
        assert line, "the run ended before the node was killed:\n" + "".join(lines)
        lines.append(line)
        if ": complete score" in line:
            finished.append(line.split("] ", 1)[1].split(":", 1)[0])
    before = {
        name: path.stat().st_mtime_ns for name, path in result_files(work / "results").items()
    }
    cluster.kill(victim)
    rest = process.stderr.read()
    code = process.wait(timeout=240)
    after = result_files(work / "results")
    for name, mtime in before.items():  # written once, never again
        assert after[name].stat().st_mtime_ns == mtime, name
    return code, "".join(lines) + rest, finished


def test_a_killed_node_loses_nothing_finished_and_its_evaluations_are_retried(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    work = slow_workspace(tmp_path)
    code, stderr, finished = run_and_kill(work, cluster)
    assert code == 0, stderr
    results = {n: json.loads(p.read_text()) for n, p in result_files(work / "results").items()}
    assert len(results) == ANSWERS and all(f"{name}.json" in results for name in finished)
    assert all(r["status"] == "complete" and r["final_score"] == 1.0 for r in results.values())
    assert "lost the Ray node" in stderr
    cluster_line = next(line for line in stderr.splitlines() if line.startswith("Ray:"))
    assert "3 node(s), 1 lost" in cluster_line and "0 evaluations retried" not in cluster_line
    assert len(stderr.split(": complete score")) - 1 == ANSWERS  # each reported once


def test_with_one_attempt_evaluations_lost_with_their_node_are_incomplete_with_the_reason(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    work = slow_workspace(tmp_path)
    code, stderr, finished = run_and_kill(work, cluster, "--ray-attempts", "1")
    assert code == 1, stderr
    results = [json.loads(p.read_text()) for p in result_files(work / "results").values()]
    assert len(results) == ANSWERS
    lost = [r for r in results if r["status"] == "incomplete"]
    assert lost and len(lost) <= ANSWERS - len(finished)
    for result in lost:
        (error,) = result["errors"]
        assert error["kind"] == "cluster" and "lost with its Ray node" in error["message"]
        assert result["final_score"] is None
    rerun = subprocess.run(
        [*CLI, "run", "--answers", "answers", "--judges", "judges", "--results", "results",
         "--include-unreviewed", "--provider", POLICY, "--cache-mode", "off", "--json"],
        cwd=work, env=cli_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    report = json.loads(rerun.stdout)
    assert (report["evaluated"], report["reused"]) == (len(lost), ANSWERS - len(lost))


def test_the_results_of_a_run_that_lost_a_node_count_every_llm_call_of_its_ledger(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """Attempts lost with the node had verified a claim: their calls are in their results."""
    work = slow_workspace(tmp_path)
    (work / "judges" / "slow_task.py").write_text(SPENDING_JUDGE)
    code, stderr, _ = run_and_kill(work, cluster)
    assert code == 0, stderr
    results = [json.loads(p.read_text()) for p in result_files(work / "results").values()]
    assert len(results) == ANSWERS and all(r["status"] == "complete" for r in results)
    ledger = work / ".judgegen" / "llm-ledger.jsonl"
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    notes = [n for r in results for n in r["notes"] if "lost with its Ray node" in n]
    assert notes and all("counted in this result's usage" in n for n in notes), stderr
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows)
    cost = sum(r["usage"]["cost_usd"] for r in results)
    assert cost == pytest.approx(sum(row["cost_usd"] for row in rows))
