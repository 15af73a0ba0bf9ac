"""What an attempt lost with its node spent is charged to its evaluation, on in-process actors
(`fake_cluster`).

A node that dies in the middle of an evaluation has had LLM calls answered (and paid) through
the gateway, and may have calls still running there. The evaluation is retried on another
node; its result must count what both attempts spent, so per-result costs add up to what the
gateway's ledger says the run spent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import BACKEND
from tests.fixtures.runner.llm_policy import verifications_never_answered
from tests.fixtures.runner.scripted import make_backend
from tests.scale import lost_nodes
from tests.scale.fake_cluster import Actor, fake_sessions
from tests.scale.lost_nodes import POLICY, Killer, KnownNodes
from toolkit.backends import LLMBackend, VerifyRequest
from toolkit.llm import LLMRequest
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import ABANDONED, Ledger
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner.metering import Meter, MeteredBackend, MeteredClient, current_meter
from toolkit.sandbox.protocol import Call, EvalJob
from toolkit.scale import run as cluster_run
from toolkit.scale.executor import ClusterExecutor
from toolkit.scale.gateway import Gateway, GatewayServices
from toolkit.scale.messages import NodeResult, RunnerSettings
from toolkit.scale.node import NodeRunner
from toolkit.scale.nodes import NodeSet, Runner
from toolkit.util.hashing import sha256_text

CLAIMS = 3
CALLS = 2 * CLAIMS
"""LLM calls of one whole attempt: each claim's verification votes 2 of 3 trials at once."""
JUDGE = f'''"""{CLAIMS} claims verified one after the other (2 LLM calls each)."""

from toolkit import Evaluator

TASK_ID = "claims"
TASK_DESCRIPTION = "Which Python version introduced the match statement?"


async def evaluate(ev: Evaluator) -> None:
    for index in range({CLAIMS}):
        leaf = ev.add_leaf(id=f"claim_{{index}}", desc=f"Claim {{index}} holds")
        await ev.verify(claim=f"Python 3.10 introduced the match statement ({{index}}).", node=leaf)
'''


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """One task with one answer, as the working directory (the gateway runs in the driver's)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "claims.py").write_text(JUDGE)
    answer_path = tmp_path / "answers" / "agent" / "claims" / "answer_1.md"
    answer_path.parent.mkdir(parents=True)
    answer_path.write_text("Python 3.10 introduced the match statement.\n")
    yield tmp_path
    lost_nodes.KILLER = None


def run(work: Path, monkeypatch: pytest.MonkeyPatch, killer: Killer, *extra: str) -> dict:
    """`judgegen run --ray --json` on two fake nodes; the run's JSON record."""
    lost_nodes.KILLER = killer
    monkeypatch.setattr(cluster_run, "cluster_session", fake_sessions(KnownNodes(str(work), 2)))
    args = ["run", "--answers", "answers", "--judges", "judges", "--results", "results"]
    args += ["--include-unreviewed", "--no-sandbox", "--provider", POLICY, "--jobs", "1"]
    args += ["--cache-mode", "off", "--json", "--ray", "127.0.0.1:1", *extra]
    done = CliRunner(env={"JUDGEGEN_LEDGER_PATH": "ledger.jsonl"}).invoke(main, args)
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    assert done.stdout, done.output
    record: dict = json.loads(done.stdout)
    return record


def result(work: Path) -> dict:
    return json.loads((work / "results" / "agent" / "claims" / "answer_1.json").read_text())


def ledger(work: Path) -> list[dict]:
    return [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]


def test_a_result_counts_the_llm_calls_and_cost_of_its_attempt_lost_with_its_node(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attempt 1 had 4 calls answered or running when its node died; attempt 2 made all 6."""
    killer = Killer(4)
    record = run(work, monkeypatch, killer)
    assert record["exit_code"] == 0 and killer.killed
    done = result(work)
    assert done["status"] == "complete" and done["final_score"] == 1.0
    rows = ledger(work)
    assert len(rows) == 4 + CALLS and not any(row.get("error") for row in rows)
    assert done["usage"]["llm_calls"] == 4 + CALLS
    assert done["usage"]["cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in rows))
    assert done["usage"]["cost_usd"] > 0


def test_a_result_notes_what_its_attempt_lost_with_its_node_spent(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killer = Killer(4)
    run(work, monkeypatch, killer)
    notes = [n for n in result(work)["notes"] if "lost with its Ray node" in n]
    assert len(notes) == 1, result(work)["notes"]
    assert killer.killed[0][:12] in notes[0] and "4 LLM call(s)" in notes[0]
    assert "counted in this result's usage" in notes[0]


def test_the_results_usage_adds_up_to_the_gateways_llm_totals_after_a_node_is_lost(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No call is left out, and none counted twice: the record's `usage` (the sum over the
    results) and its `llm` (the gateway's ledger) agree on calls, tokens and cost."""
    record = run(work, monkeypatch, Killer(4))
    usage, llm = record["usage"], record["llm"]
    assert usage["llm_calls"] == llm["calls"] == 4 + CALLS
    tokens = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"]
    assert (tokens, usage["output_tokens"]) == (llm["input_tokens"], llm["output_tokens"])
    assert usage["cost_usd"] == pytest.approx(llm["cost_usd"])


def test_an_evaluation_lost_on_every_attempt_is_charged_what_each_attempt_spent(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both nodes die, each in its attempt's 3rd call: incomplete, and charged 2 × 3 calls."""
    record = run(work, monkeypatch, Killer(3, 6), "--ray-attempts", "2")
    assert record["exit_code"] == 1
    done = result(work)
    assert done["status"] == "incomplete" and done["errors"][0]["kind"] == "cluster"
    assert done["usage"]["llm_calls"] == len(ledger(work)) == 6
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    assert len([n for n in done["notes"] if "lost with its Ray node" in n]) == 2


def test_the_gateway_keeps_no_tally_of_attempts_whose_node_reported(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tally is only needed until the node reports: a long run's gateway does not grow."""
    gateways: list[Gateway] = []
    create = KnownNodes.create_gateway

    def kept(self: KnownNodes, services: Any) -> Actor:
        actor = create(self, services)
        gateways.append(actor.obj)
        return actor

    monkeypatch.setattr(KnownNodes, "create_gateway", kept)
    record = run(work, monkeypatch, Killer())
    assert record["exit_code"] == 0 and record["usage"]["llm_calls"] == CALLS
    assert gateways[0]._attempts == {}


def claims_job() -> EvalJob:
    return EvalJob(
        judge_path="judges/claims.py",
        judge_source=JUDGE,
        judge_sha256=sha256_text(JUDGE),
        answer="Python 3.10 introduced the match statement.",
        agent_name="agent",
        answer_name="answer_1",
        task_id="claims",
    )


def gateway_serving(work: Path, backend: Any) -> Actor:
    services = GatewayServices(backend=MeteredBackend(backend), identity=BACKEND)
    return Actor(Gateway(str(work), lambda: services))


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in_process"])
def test_the_gateway_tallies_an_attempts_calls_as_its_node_counts_them(
    work: Path, sandbox: bool
) -> None:
    """The attempt's name reaches the gateway with each call, from a sandboxed judge too."""

    async def attempt() -> tuple[NodeResult, Any]:
        gateway = gateway_serving(work, make_backend())
        await gateway.start.remote()
        node = Actor(NodeRunner("node0", gateway, RunnerSettings(sandbox=sandbox, jobs=1)))
        try:
            reported: NodeResult = await node.evaluate.remote(claims_job(), "tag#1")
        finally:
            await node.aclose.remote()
        return reported, await gateway.spent.remote("tag#1", 1.0)

    reported, spent = asyncio.run(attempt())
    assert reported.outcome.status == "complete" and reported.attempt == "tag#1"
    assert reported.usage.verify_calls == CLAIMS
    assert spent.usage == reported.usage and spent.cancelled == 0


class Stalls:
    """A backend whose verifications never end; `started` counts them, `began` is set by the
    first."""

    model = "scripted-judge"

    def __init__(self) -> None:
        self.started = 0
        self.began = asyncio.Event()

    async def verify(self, request: VerifyRequest) -> Any:
        self.started += 1
        self.began.set()
        await asyncio.Event().wait()

    async def extract(self, request: Any) -> Any:
        raise AssertionError("not called")


def verify_call(call_id: int) -> Call:
    payload = VerifyRequest(claim="Python 3.10 introduced the match statement.")
    return Call(call_id=call_id, method="verify", payload=payload.model_dump(mode="json"))


def test_a_lost_attempts_call_still_running_after_the_wait_is_cancelled_and_counted_so(
    work: Path,
) -> None:
    """No judge is left to read it: the gateway stops it, and says its cost is not known."""
    backend = Stalls()

    async def lose() -> Any:
        gateway = gateway_serving(work, backend)
        await gateway.start.remote()
        call = gateway.handle.remote(verify_call(1), "tag#1")
        await backend.began.wait()
        spent = await gateway.spent.remote("tag#1", 0.05)
        with pytest.raises(asyncio.CancelledError):
            await call
        return spent

    spent = asyncio.run(asyncio.wait_for(lose(), timeout=30))
    assert spent.cancelled == 1 and spent.usage.verify_calls == 1


def test_a_call_for_an_attempt_found_lost_is_refused_without_reaching_the_backend(
    work: Path,
) -> None:
    """A node the driver gave up on may still be running (a partition): it spends no more."""
    backend = Stalls()

    async def refused() -> Any:
        gateway = gateway_serving(work, backend)
        await gateway.start.remote()
        await gateway.spent.remote("tag#1", 0.0)
        return await gateway.handle.remote(verify_call(1), "tag#1")

    reply = asyncio.run(asyncio.wait_for(refused(), timeout=30))
    assert reply.reply.error is not None and reply.reply.error["kind"] == "cluster"
    assert backend.started == 0 and reply.usage.backend_calls == 0


def test_the_spend_of_a_lost_attempt_the_gateway_cannot_report_is_noted_as_unknown() -> None:
    """The node and then the gateway are lost: the result must not look like it cost 0."""

    async def lose() -> Meter:
        node, gateway = Actor(None), Actor(None)
        node.dead = gateway.dead = True
        executor = ClusterExecutor(NodeSet([Runner("node00000000aaaa", node)], attempts=1), gateway)
        meter = Meter()
        current_meter.set(meter)
        outcome = await executor.evaluate(claims_job())
        assert outcome.errors[0]["kind"] == "cluster"
        return meter

    (note,) = asyncio.run(lose()).notes
    assert "node00000000" in note and "unknown" in note and "leaves it out" in note


def test_the_llm_calls_a_lost_attempts_cancelled_call_left_running_get_their_ledger_rows_to_charge(
    work: Path,
) -> None:
    """Cancelled at the gateway, its LLM call is cancelled too (cache off), but the request was
    sent: its `abandoned` row is what the gateway hands over to charge, as for an ended attempt."""
    asked = asyncio.Event()

    async def model(request: LLMRequest) -> dict[str, Any]:
        asked.set()
        return await verifications_never_answered(request)

    client = LLMClient(ScriptedProvider(model), ledger=Ledger())
    backend = LLMBackend(MeteredClient(client), model="scripted-judge")

    async def lose() -> tuple[Any, Any]:
        gateway = gateway_serving(work, backend)
        await gateway.start.remote()
        call = gateway.handle.remote(verify_call(1), "tag#1")
        await asyncio.wait_for(asked.wait(), timeout=10)  # the verification reached the model
        spent = await gateway.spent.remote("tag#1", 0.05)
        with pytest.raises(asyncio.CancelledError):
            await call
        return spent, await gateway.settle.remote("tag#1", 5.0)

    spent, left = asyncio.run(asyncio.wait_for(lose(), timeout=30))
    assert spent.cancelled == 1 and spent.left_running == len(left.rows) >= 1
    assert all(row.error == ABANDONED for row in left.rows) and left.running == 0
    assert len(left.rows) == len(client.ledger.rows)
