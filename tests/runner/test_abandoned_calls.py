"""LLM calls an evaluation left running when it ended (its judge timed out, its process
ended) are charged to its result: what they cost once they end, or, when that cannot be
known, how many there were, said in the result's notes. So the results add up to the
ledger and the `LLM:` line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import llm_run, result_files, run_args
from tests.fixtures.runner.llm_policy import SHARED_CLAIM
from toolkit.backends import ScriptedBackend, VerifyRequest
from toolkit.llm.abandoned import AbandonedSpend
from toolkit.llm.client import LLMClient
from toolkit.runner.metering import (
    Meter,
    MeteredBackend,
    abandoned_note,
    current_meter,
    end_calls,
    judge_call,
)

OUTLIVED = "scripted:tests.fixtures.runner.llm_policy:verifications_outlive_their_evaluation"
"""A model whose verifications end only once their evaluation is over: still running when it
ends, and ended right after, however loaded the machine. (A model slow by a fixed delay raced
a sandboxed judge's end, in another process, and the result's wait.)"""


def timed_out_run(work: Path, provider: str, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    """`judgegen run --json` of louvre_hours with a judge --timeout (1 s) that its
    verifications outlast; its record and ledger rows. A result waits up to the --timeout
    for the calls its judge left running: `OUTLIVED`'s end within it."""
    args = run_args(work, "--include-unreviewed", "--task", "louvre_hours", "--json", *extra)
    at = args.index("--backend")
    del args[at : at + 2]
    args += ["--provider", provider, "--timeout", "1"]
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output  # every evaluation timed out: incomplete
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    return json.loads(result.stdout), rows


def abandoned_notes(result: dict[str, Any]) -> list[str]:
    return [note for note in result["notes"] if "still running when" in note]


@pytest.mark.parametrize("mode", ["--no-sandbox", "--jobs=2"], ids=["in_process", "sandboxed"])
def test_calls_a_timed_out_judge_left_running_are_charged_to_its_result_once_paid(
    work: Path, mode: str
) -> None:
    record, rows = timed_out_run(work, OUTLIVED, mode)
    results = result_files(work / "results").values()
    assert all(r["status"] == "incomplete" for r in results)
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows)
    assert all(row["error"] is None for row in rows)  # all answered (waited for), all paid
    cost = sum(row["cost_usd"] for row in rows)
    assert cost > 0
    assert sum(r["usage"]["cost_usd"] for r in results) == pytest.approx(cost)
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    notes = [note for result in results for note in abandoned_notes(result)]
    assert notes  # (a call another evaluation shared was its maker's: it cost the other nothing)
    assert all("counted in this result's usage" in n and "not known" not in n for n in notes)
    assert record["usage"]["unknown_cost_calls"] == 0


def test_calls_cancelled_with_the_cache_off_are_counted_with_their_cost_unknown(
    work: Path,
) -> None:
    record, rows = timed_out_run(work, OUTLIVED, "--no-sandbox", "--cache-mode", "off")
    abandoned = [row for row in rows if row["error"] == "abandoned"]
    assert abandoned and all(row["cost_usd"] == 0 for row in abandoned)
    results = result_files(work / "results").values()
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows) == record["llm"]["calls"]
    assert record["usage"]["unknown_cost_calls"] == len(abandoned)
    for result in results:
        (note,) = abandoned_notes(result)
        assert "cancelled" in note and "cost is not known" in note
        assert "may bill" in note


LEAVES_A_CALL_RUNNING = '''"""louvre_hours, judged by starting a verification in a task and returning without it."""

import asyncio

from toolkit import Evaluator

TASK_ID = "louvre_hours"
TASK_DESCRIPTION = "What are the Louvre Museum's opening hours on Wednesdays?"
LEFT: list[asyncio.Future[object]] = []  # referenced, so the task is not collected


async def evaluate(ev: Evaluator) -> None:
    node = ev.add_leaf(id="left_running", desc="A check its judge does not wait for")
    LEFT.append(asyncio.ensure_future(ev.verify(claim="The Louvre opens on Wednesdays.", node=node)))
    await asyncio.sleep(0.1)  # the verification is out: its calls have reached the model
'''


@pytest.mark.parametrize("mode", ["--no-sandbox", "--jobs=2"], ids=["in_process", "sandboxed"])
def test_calls_a_judge_left_running_in_its_own_tasks_are_charged_to_its_result(
    work: Path, mode: str
) -> None:
    (work / "judges" / "louvre_hours.py").write_text(LEAVES_A_CALL_RUNNING)
    args = run_args(work, "--include-unreviewed", "--task", "louvre_hours", "--json", mode)
    at = args.index("--backend")
    del args[at : at + 2]
    args += ["--provider", OUTLIVED]
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    results = result_files(work / "results").values()
    assert rows and all(row["error"] is None for row in rows)  # went on and were paid
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows)
    cost = sum(row["cost_usd"] for row in rows)
    assert sum(r["usage"]["cost_usd"] for r in results) == pytest.approx(cost)
    record = json.loads(result.stdout)
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    assert any(abandoned_notes(r) for r in results)  # shared calls are charged to their maker


def test_a_task_its_judge_left_running_cannot_call_once_its_evaluation_is_over() -> None:
    async def scenario() -> tuple[bool, list[object]]:
        meter = Meter()
        current_meter.set(meter)
        scripted = ScriptedBackend()
        backend = MeteredBackend(scripted)

        async def leftover() -> None:
            await asyncio.sleep(0.05)
            await backend.verify(VerifyRequest(claim="too late"))

        task = asyncio.ensure_future(leftover())
        await end_calls(meter, 1.0)
        await asyncio.wait([task], timeout=1.0)
        return task.cancelled(), scripted.calls

    cancelled, calls = asyncio.run(scenario())
    assert cancelled and calls == []


def test_a_call_made_inside_another_keeps_its_task_known_until_the_outer_one_ends() -> None:
    async def scenario() -> tuple[bool, bool]:
        meter = Meter()
        current_meter.set(meter)
        task = asyncio.current_task()
        with judge_call():
            with judge_call():
                pass
            inside = task in meter.calling
        return inside, task in meter.calling

    assert asyncio.run(scenario()) == (True, False)


VERIFIES_ITS_OWN_ANSWER = '''"""louvre_hours, judged by one verification whose claim quotes the answer."""

from toolkit import Evaluator

TASK_ID = "louvre_hours"
TASK_DESCRIPTION = "What are the Louvre Museum's opening hours on Wednesdays?"


async def evaluate(ev: Evaluator) -> None:
    node = ev.add_leaf(id="stated", desc="The answer states the hours")
    await ev.verify(claim=f"This answer states the hours: {ev.answer[:60]!r}", node=node)
'''


@pytest.mark.parametrize("mode", ["--no-sandbox", "--jobs=1"], ids=["in_process", "sandboxed"])
def test_a_timed_out_judge_frees_its_jobs_slot_while_its_result_waits_for_its_calls(
    work: Path, mode: str
) -> None:
    """The first claim's verifications answer only when another claim's arrive: with one
    --jobs slot, the next evaluation must start while the timed-out one waits for its calls,
    so they end within the wait and are charged (a held slot: they end after it, unknown)."""
    (work / "judges" / "louvre_hours.py").write_text(VERIFIES_ITS_OWN_ANSWER)
    policy = "scripted:tests.fixtures.runner.llm_policy:first_claim_waits_for_the_next"
    record, rows = timed_out_run(work, policy, mode, "--jobs", "1")
    results = result_files(work / "results").values()
    notes = [note for result in results for note in abandoned_notes(result)]
    assert len(notes) == 1  # the first evaluation's; the others answered at once
    assert "counted in this result's usage" in notes[0] and "not known" not in notes[0]
    assert record["usage"]["unknown_cost_calls"] == 0
    assert sum(r["usage"]["llm_calls"] for r in results) == len(rows)


IGNORES_A_CANCELLATION = (
    "scripted:tests.fixtures.runner.llm_policy:verifications_ignore_a_cancellation"
)
"""A model whose verifications go on past the LLM client's close, and end as the command's
event loop ends (`asyncio.run` cancels them again)."""


def test_a_late_ledger_row_that_cannot_be_written_after_the_client_closed_stops_the_run(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No row is written before the close (the judge's one verification is never answered),
    and the ledger's folder is a file: the row of the call that ends as the loop ends (error
    `abandoned`) is the first to fail, after the close."""
    (work / "judges" / "louvre_hours.py").write_text(LEAVES_A_CALL_RUNNING)
    (work / "taken").write_text("a file where the ledger's folder belongs\n")
    monkeypatch.setattr(LLMClient, "close_wait_s", 0.1)
    args, env = llm_run(work, "--task", "louvre_hours", "--timeout", "1")
    at = args.index("--provider")
    args[at + 1] = IGNORES_A_CANCELLATION
    env["JUDGEGEN_LEDGER_PATH"] = str(work / "taken" / "ledger.jsonl")
    done = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.output
    assert f"usage ledger {work / 'taken' / 'ledger.jsonl'} cannot be written" in done.stderr


def test_the_note_on_calls_still_running_points_at_the_count_of_calls_with_no_ledger_row() -> None:
    """Such a call may still be running when the LLM client closes (its provider ignoring the
    cancellation) and then never get a ledger row: the note must not promise one."""
    note = abandoned_note(AbandonedSpend(running=2), 1.0)
    assert "2 were still running 1 s after it ended" in note
    assert "may get no row" in note and "`llm.unrecorded_calls`" in note


SHARES_A_CALL = '''"""louvre_hours, judged by verifying a claim of its own answer, then one every answer shares."""

from toolkit import Evaluator

TASK_ID = "louvre_hours"
TASK_DESCRIPTION = "What are the Louvre Museum's opening hours on Wednesdays?"


async def evaluate(ev: Evaluator) -> None:
    stated = ev.add_leaf(id="stated", desc="The answer states the hours")
    await ev.verify(claim=f"This answer states the hours: {ev.answer[:60]!r}", node=stated)
    shared = ev.add_leaf(id="open_on_wednesdays", desc="The Louvre opens on Wednesdays")
    await ev.verify(claim=SHARED_CLAIM, node=shared)
'''.replace("SHARED_CLAIM", repr(SHARED_CLAIM))
"""With `SHARED_POLICY`, of two evaluations one makes the shared claim's call, and the other
is waiting for it when its judge times out."""

SHARED_POLICY = "scripted:tests.fixtures.runner.llm_policy:shared_claim_outlives_two_evaluations"


def assert_one_made_the_shared_call_and_one_waited(
    results: list[dict[str, Any]], ledger_rows: int
) -> None:
    """Of two results judged by `SHARES_A_CALL` with `SHARED_POLICY`: the one whose call went
    on is charged it; the other says it was waiting for it, charged to the one that made it
    (the results count the `ledger_rows` of the run, the shared call once)."""
    made = [r for r in results if any("went on and ended" in n for n in abandoned_notes(r))]
    waited = [r for r in results if r not in made]
    assert len(made) == len(waited) == 1
    notes = [n for n in waited[0]["notes"] if "another evaluation had made" in n]
    assert len(notes) == 1 and "charged to the evaluation that made it" in notes[0]
    assert sum(r["usage"]["llm_calls"] for r in results) == ledger_rows


@pytest.mark.parametrize("mode", ["--no-sandbox", "--jobs=2"], ids=["in_process", "sandboxed"])
def test_a_judge_timed_out_waiting_for_another_evaluations_call_says_so_in_its_result(
    work: Path, mode: str
) -> None:
    """alpha's two louvre_hours answers verify the same claim, sharing one call, which the
    model answers only once both evaluations are over."""
    (work / "judges" / "louvre_hours.py").write_text(SHARES_A_CALL)
    args = run_args(
        work,
        "--include-unreviewed",
        "--task",
        "louvre_hours",
        "--jobs",
        "2",
        mode,
        answers=work / "answers" / "alpha",
    )
    at = args.index("--backend")
    del args[at : at + 2]
    args += ["--provider", SHARED_POLICY, "--timeout", "1"]
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    results = list(result_files(work / "results").values())
    rows = (work / "ledger.jsonl").read_text().splitlines()
    assert_one_made_the_shared_call_and_one_waited(results, len(rows))
