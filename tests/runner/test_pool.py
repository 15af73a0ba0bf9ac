"""Sandboxed jobs forked from one fork server: bad judges end as incomplete outcomes, the
others complete, and the jobs in flight follow the work, not a process count."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from tests.fixtures.runner.helpers import fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox.launch import DEFAULT_MAX_FILE_MB, launch_sandbox
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits

FAST = SandboxLimits(timeout_s=1.5, cpu_s=5, memory_mb=512, max_output_bytes=4096)


def job(name: str, answer_name: str = "answer_1") -> EvalJob:
    answer = "Paris is the capital, see https://a"
    return fixture_job(name, answer, agent_name="agent", answer_name=answer_name)


def backend() -> ScriptedBackend:
    return ScriptedBackend(extract=lambda request: {"city": "Paris", "url": "https://a"})


def kinds(outcome: EvalOutcome) -> list[str]:
    return [error["kind"] for error in outcome.errors]


async def evaluate_one(name: str, limits: SandboxLimits = FAST) -> EvalOutcome:
    return await run_in_sandbox(job(name), backend(), limits=limits)


async def test_normal_judge_completes_with_its_summary() -> None:
    outcome = await evaluate_one("normal")
    assert outcome.status == "complete" and outcome.errors == []
    assert outcome.summary["final_score"] == 1.0
    assert (outcome.task_id, outcome.agent_name, outcome.answer_name) == (
        "normal",
        "agent",
        "answer_1",
    )


async def test_judge_that_raises_keeps_its_partial_tree() -> None:
    outcome = await evaluate_one("raises")
    assert outcome.status == "incomplete"
    assert kinds(outcome) == ["judge_exception"]
    error = outcome.errors[0]
    assert error["type"] == "ValueError" and "parse_items" in error["message"]
    assert "raises.py" in error["traceback"]
    tree = outcome.summary["eval_breakdown"][0]["verification_tree"]
    assert [child["id"] for child in tree["children"]] == ["first"]
    assert tree["children"][0]["status"] == "passed"
    assert outcome.summary["status"] == "incomplete"


async def test_judge_that_loops_forever_is_killed_at_the_timeout_and_the_pool_continues() -> None:
    async with WorkerPool(2, FAST, backend()) as pool:
        looping, *normal = await asyncio.gather(
            pool.evaluate(job("loops")),
            *(pool.evaluate(job("normal", f"answer_{i}")) for i in range(3)),
        )
        after = await pool.evaluate(job("normal", "answer_9"))
    assert looping.status == "incomplete" and kinds(looping) == ["timeout"]
    assert "did not finish within 1.5 s" in looping.errors[0]["message"]
    assert [o.status for o in normal] == ["complete"] * 3
    assert after.status == "complete"


async def test_judge_that_awaits_forever_is_killed_at_the_timeout() -> None:
    outcome = await evaluate_one("sleeps")
    assert outcome.status == "incomplete" and kinds(outcome) == ["timeout"]


async def test_judge_that_burns_cpu_hits_the_cpu_limit() -> None:
    outcome = await evaluate_one("loops", FAST.model_copy(update={"cpu_s": 1, "timeout_s": 20}))
    assert outcome.status == "incomplete" and kinds(outcome) == ["cpu_limit"]
    assert "CPU limit of 1 s" in outcome.errors[0]["message"]
    # what the limit let it burn, as the job's rusage says: the kernel holds the limit against
    # CPU time charged in whole clock ticks, rusage reports the precise run time, so on a busy
    # machine the limit trips early by the ticks the job shared (0.93 s seen under 1 s)
    assert outcome.cpu_s is not None and outcome.cpu_s >= 0.5


async def test_an_outcome_counts_the_cpu_its_job_process_used() -> None:
    outcome = await evaluate_one("normal")
    assert outcome.cpu_s is not None and 0 < outcome.cpu_s < FAST.cpu_s


async def test_judge_that_allocates_without_bound_hits_the_memory_limit() -> None:
    # The limit is reached within a few allocations; the wall-clock timeout is long only so
    # that a loaded machine's slow start never ends the job first (it would read `timeout`).
    limits = FAST.model_copy(update={"memory_mb": 256, "timeout_s": 30})
    outcome = await evaluate_one("memory_hog", limits)
    assert outcome.status == "incomplete" and kinds(outcome) == ["memory_limit"]
    assert "out of memory" in outcome.errors[0]["message"]


async def test_judge_that_exits_its_process_is_a_crash_with_its_output() -> None:
    outcome = await evaluate_one("exits")
    assert outcome.status == "incomplete" and kinds(outcome) == ["crash"]
    assert "exited with code 7" in outcome.errors[0]["message"]
    assert "about to vanish" in outcome.stdout_tail


async def test_judge_that_writes_garbage_into_the_channel_is_a_protocol_error() -> None:
    async with WorkerPool(1, FAST, backend()) as pool:
        garbage = await pool.evaluate(job("channel_garbage"))
        after = await pool.evaluate(job("normal"))
    assert garbage.status == "incomplete" and kinds(garbage) == ["protocol_violation"]
    assert after.status == "complete"


async def test_summary_that_does_not_serialize_is_incomplete_and_names_the_value() -> None:
    outcome = await evaluate_one("bad_summary")
    assert outcome.status == "incomplete" and kinds(outcome) == ["summary_not_serializable"]
    assert "['tags'] is a set" in outcome.errors[0]["message"]


async def test_judge_that_does_not_parse_is_a_load_error() -> None:
    outcome = await evaluate_one("syntax_error")
    assert outcome.status == "incomplete" and kinds(outcome) == ["judge_load"]
    assert outcome.errors[0]["type"] == "SyntaxError"


async def test_missing_judge_file_is_a_load_error() -> None:
    outcome = await evaluate_one("no_such_judge")
    assert outcome.status == "incomplete" and kinds(outcome) == ["judge_load"]


async def test_output_is_capped_to_its_tail() -> None:
    outcome = await evaluate_one("chatty")
    assert outcome.status == "complete"
    assert len(outcome.stdout_tail.encode()) <= FAST.max_output_bytes
    assert outcome.stdout_tail.rstrip().endswith("line 19999 " + "x" * 60)
    assert "last words" in outcome.stderr_tail


async def test_hostile_judges_end_incomplete_while_others_in_the_same_pool_complete() -> None:
    hostile = ["raises", "loops", "memory_hog", "opens_socket", "spawns_process", "exits"]
    limits = FAST.model_copy(update={"memory_mb": 256})
    async with WorkerPool(3, limits, backend()) as pool:
        outcomes = await asyncio.gather(
            *(pool.evaluate(job(name)) for name in hostile),
            *(pool.evaluate(job("normal", f"answer_{i}")) for i in range(6)),
        )
    assert [o.status for o in outcomes[: len(hostile)]] == ["incomplete"] * len(hostile)
    assert [o.status for o in outcomes[len(hostile) :]] == ["complete"] * 6
    assert all(o.errors for o in outcomes[: len(hostile)])


async def test_a_fork_server_killed_from_outside_is_reported_and_replaced() -> None:
    async with WorkerPool(None, SandboxLimits(timeout_s=3), backend()) as pool:
        await pool.evaluate(job("normal"))  # the fork server is ready
        running = asyncio.ensure_future(pool.evaluate(job("sleeps")))
        await asyncio.sleep(0.3)
        assert pool.server is not None
        os.killpg(pool.server.launch.process.pid, signal.SIGKILL)
        killed = await running
        after = await pool.evaluate(job("normal"))
    assert killed.status == "incomplete" and kinds(killed) == ["sandbox"]
    assert "worker process ended unexpectedly" in killed.errors[0]["message"]
    assert after.status == "complete"


async def test_one_fork_server_runs_many_evaluations_at_once() -> None:
    in_flight = {"now": 0, "max": 0}
    everyone = asyncio.Event()

    async def verify(request):
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        if in_flight["now"] == 15:
            everyone.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(everyone.wait(), timeout=2)
        in_flight["now"] -= 1
        return True

    limits = SandboxLimits(timeout_s=10)
    async with WorkerPool(None, limits, ScriptedBackend(verify=verify)) as pool:
        outcomes = await asyncio.gather(
            *(pool.evaluate(job("concurrent", f"answer_{i}")) for i in range(3))
        )
        server = pool.server
    assert [o.status for o in outcomes] == ["complete"] * 3
    assert in_flight["max"] == 15
    assert server is not None and server.launch.process.returncode is not None


async def test_work_a_judge_leaves_behind_does_not_hold_its_outcome_back() -> None:
    outcome = await evaluate_one("leaves_work_behind")
    assert outcome.status == "complete" and outcome.summary["final_score"] == 1.0


async def test_pool_used_without_async_with_starts_itself() -> None:
    pool = WorkerPool(1, FAST, backend())
    try:
        outcome = await pool.evaluate(job("normal"))
    finally:
        await pool.aclose()
    assert outcome.status == "complete"
    assert pool.isolation.bwrap or pool.isolation.warning


async def test_per_job_limits_override_the_pools() -> None:
    async with WorkerPool(1, SandboxLimits(timeout_s=30), backend()) as pool:
        outcome = await pool.evaluate(job("sleeps"), limits=FAST)
    assert outcome.status == "incomplete" and kinds(outcome) == ["timeout"]
    assert "within 1.5 s" in outcome.errors[0]["message"]


async def test_a_worker_that_cannot_start_gives_an_incomplete_outcome_not_an_exception(
    monkeypatch,
) -> None:
    monkeypatch.setattr(pool_module.sys, "executable", "/nonexistent/python3")
    async with WorkerPool(1, FAST, backend()) as pool:
        outcome = await pool.evaluate(job("normal"))
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox"]
    assert "cannot start a judge worker" in outcome.errors[0]["message"]


async def test_judge_that_calls_sys_exit_is_incomplete_with_its_partial_tree() -> None:
    outcome = await evaluate_one("calls_exit")
    assert outcome.status == "incomplete" and kinds(outcome) == ["judge_exit"]
    assert outcome.summary["eval_breakdown"][0]["verification_tree"]["children"][0]["id"] == (
        "started"
    )


async def test_judge_that_calls_the_quit_builtin_ends_as_one_that_calls_sys_exit() -> None:
    outcome = await evaluate_one("calls_quit")  # `quit` comes from `site`; the server skips it
    assert outcome.status == "incomplete" and kinds(outcome) == ["judge_exit"]


async def test_the_fork_server_is_launched_on_entry_and_waited_for_by_the_first_job() -> None:
    async with WorkerPool(None, FAST, backend()) as pool:
        assert pool._launch is not None and pool.server is None
        outcome = await pool.evaluate(job("normal"))
        assert outcome.status == "complete" and pool.server is not None
        assert pool.server.launch.process.returncode is None


async def test_a_server_launched_ahead_is_adopted_when_it_was_started_as_the_limits_need() -> None:
    launch = launch_sandbox()  # as the executable's early launch: default limits
    async with WorkerPool(None, FAST, backend(), launch=launch) as pool:
        outcome = await pool.evaluate(job("normal"))
        assert outcome.status == "complete"
        assert pool.server is not None and pool.server.launch is launch


async def test_a_server_launched_ahead_for_other_limits_is_replaced_not_adopted() -> None:
    launch = launch_sandbox()  # scratch space sized for the default largest file
    limits = FAST.model_copy(update={"max_file_mb": 2 * DEFAULT_MAX_FILE_MB})
    async with WorkerPool(None, limits, backend(), launch=launch) as pool:
        outcome = await pool.evaluate(job("normal"))
        assert outcome.status == "complete"
        assert pool.server is not None and pool.server.launch is not launch
        assert pool.server.launch.max_file_mb == 2 * DEFAULT_MAX_FILE_MB
        assert launch.process.poll() is not None  # killed, not left running
