"""The gateway actor dying during a cluster run, on in-process actors (`fake_cluster`).

The gateway holds the run's one LLM client, budget, ledger, cache and page store, so losing it
is an infrastructure failure of every evaluation that needed it: never a node's loss, never a
result a judge could turn complete by catching it; and every later evaluation would fail the
same way, so the run stops (exit 3) with the results so far kept.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    BACKEND,
    DictPages,
    copy_fixtures,
    options,
    run_args,
    stored,
)
from tests.fixtures.runner.scripted import make_backend
from tests.runner.test_runner_sees_infra import hostile_input, only_result
from tests.scale.fake_cluster import Actor, FakeSession, fake_sessions, node_set
from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.runner.inputs import AnswerInput, discover_answers
from toolkit.runner.metering import MeteredBackend
from toolkit.runner.report import RunReport
from toolkit.runner.scheduler import run_evaluations
from toolkit.scale import run as cluster_run
from toolkit.scale.executor import ClusterExecutor
from toolkit.scale.gateway import Gateway, GatewayServices
from toolkit.scale.messages import RunnerSettings
from toolkit.scale.nodes import NodeSet
from toolkit.scale.run import GatewayModels

SWALLOWS = "swallows_infra_error"
"""A fixture judge that turns any failure of its verification or page read into a failed check."""
LOST = {"type": "GatewayLost", "kind": "cluster"}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The runner fixtures, as the working directory (the gateway runs in the driver's)."""
    monkeypatch.chdir(tmp_path)
    return copy_fixtures(tmp_path)


class DiesAfter:
    """The scripted backend, at a gateway that dies once it has answered `calls` calls
    (0: as soon as it has started)."""

    def __init__(self, calls: int) -> None:
        self.inner = make_backend()
        self.model = self.inner.model
        self.left = calls
        self.gateway: Actor | None = None

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        return self._answered(await self.inner.extract(request))

    async def verify(self, request: VerifyRequest) -> Verdict:
        return self._answered(await self.inner.verify(request))

    def _answered(self, answer: Any) -> Any:
        self.left -= 1
        if self.left == 0 and self.gateway is not None:
            self.gateway.dead = True
        return answer


async def run_on_fake_cluster(
    work: Path, items: list[AnswerInput], backend: DiesAfter, nodes: int = 1
) -> tuple[RunReport, NodeSet]:
    """Run `items` one at a time on `nodes` node runners over a gateway serving `backend`."""
    services = GatewayServices(backend=MeteredBackend(backend), identity=BACKEND, pages=DictPages())
    gateway = Actor(Gateway(str(work), lambda: services))
    backend.gateway = gateway
    info = await gateway.start.remote()
    if backend.left == 0:
        gateway.dead = True
    node_runners = node_set(gateway, RunnerSettings(sandbox=False, jobs=1), nodes)
    try:
        report = await run_evaluations(
            items,
            backend=GatewayModels(info),
            executor=ClusterExecutor(node_runners),
            options=options(work, backend_spec=BACKEND, jobs=1),
            pages=DictPages(),
        )
    finally:
        for runner in node_runners.runners:
            await runner.handle.aclose.remote()
    return report, node_runners


def python_match(work: Path) -> list[AnswerInput]:
    return [i for i in discover_answers(work / "answers") if i.task_id == "python_match"]


def test_a_gateway_death_the_judge_swallowed_leaves_the_evaluation_incomplete(work: Path) -> None:
    """The gateway answers the judge's verification, then dies before its page read."""
    items = [hostile_input(work, SWALLOWS)]
    report, _ = asyncio.run(run_on_fake_cluster(work, items, DiesAfter(calls=1)))
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [{"type": e["type"], "kind": e["kind"]} for e in result.errors] == [LOST]
    assert "the gateway was lost (ActorDiedError" in result.errors[0]["message"]


def test_a_dead_gateway_stops_the_run_keeping_the_results_so_far(work: Path) -> None:
    """Every later evaluation would fail the same way: none starts, as after a budget stop."""
    items = [hostile_input(work, SWALLOWS), *python_match(work)]
    report, _ = asyncio.run(run_on_fake_cluster(work, items, DiesAfter(calls=1)))
    assert report.stopped is not None
    assert report.stopped.startswith("GatewayLost: the gateway was lost")
    assert report.exit_code == 3
    assert (report.evaluated, report.not_started) == (1, 3)  # 1 python_match answer is empty
    assert (work / "results" / "gamma" / SWALLOWS / "answer_1.json").is_file()


def test_a_gateway_lost_before_a_node_starts_its_pool_loses_no_node(work: Path) -> None:
    """The node asks the dead gateway what it serves: the gateway's loss, not the node's."""
    report, nodes = asyncio.run(run_on_fake_cluster(work, python_match(work), DiesAfter(0), 2))
    assert [runner.lost for runner in nodes.runners] == [None, None]
    assert nodes.line("evaluations").startswith("Ray: 2 node(s), 0 lost, 0 evaluations retried")
    (head,) = report.incomplete  # the first evaluation; then the run stopped
    assert report.exit_code == 3 and report.not_started == 2
    errors = stored(work, head).errors
    assert [{"type": e["type"], "kind": e["kind"]} for e in errors] == [LOST]


class GatewayDiesAtTheEnd(FakeSession):
    """The gateway dies once every evaluation is done, as the node runners are stopped."""

    async def stop_runners(self, nodes: NodeSet) -> None:
        await super().stop_runners(nodes)
        assert self.gateway is not None
        self.gateway.dead = True


def test_a_gateway_lost_at_the_end_of_the_run_exits_3_with_its_results_kept(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its LLM totals are gone and its ledger and cache may not be flushed: the run says
    so and exits 3, not with a traceback."""
    session = GatewayDiesAtTheEnd(str(work), nodes=2)
    monkeypatch.setattr(cluster_run, "cluster_session", fake_sessions(session))
    args = run_args(
        work, "--task", "python_match", "--include-unreviewed", "--no-sandbox", pages=False
    )
    done = CliRunner().invoke(main, [*args, "--ray", "127.0.0.1:1"])
    assert done.exit_code == 3, done.output
    assert "stopped: GatewayLost: the gateway was lost (ActorDiedError" in done.stderr
    assert "LLM: totals unknown, the gateway was lost" in done.stderr
    results = [json.loads(p.read_text()) for p in (work / "results").glob("*/*/*.json")]
    assert len(results) == 4 and all(r["status"] == "complete" for r in results)
