"""The runner bench's schedule (bench/runner_workload.py): the chains and the shared-limit
floor it prints next to each wall time must be exact on its virtual clock."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory):
    """The bench's modules and a small chain workload; the latency the schedule sets in the
    environment (as the bench script does) is put back afterwards."""
    sys.path.insert(0, str(BENCH))
    saved = dict(os.environ)
    try:
        import runner_workload

        root = tmp_path_factory.mktemp("bench") / "chain"
        spec = runner_workload.Workload("chain", tasks=2, answers=1, items=2)
        runner_workload.build(root, spec, page_chars=2_000, screenshot_bytes=1_000)
        yield runner_workload, root
    finally:
        sys.path.remove(str(BENCH))
        os.environ.clear()
        os.environ.update(saved)


def test_with_room_for_every_call_the_shared_floor_is_the_longest_chain(workload) -> None:
    module, root = workload
    found = module.schedule(root, 1.0, concurrency=10_000)
    assert found.shared_steps == max(found.chains)


def test_with_one_call_at_a_time_the_shared_floor_is_every_call_in_turn(workload) -> None:
    """At most every call in turn: a speculative call cancelled while it waits for the one
    slot is never made."""
    module, root = workload
    found = module.schedule(root, 1.0, concurrency=1)
    assert max(found.chains) < found.shared_steps <= sum(found.calls)


def test_the_schedules_scores_are_what_a_cli_run_writes_and_a_changed_one_is_named(
    workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench checks every timed run against these scores: a run that judged differently
    (faster because a page check was skipped, say) is reported, never timed as a speed-up."""
    import shutil

    from click.testing import CliRunner

    monkeypatch.setattr(sys, "path", list(sys.path))  # runner_bench adds to it on import

    import latency_model
    import runner_bench

    from generator.cli import main

    module, built = workload
    root = tmp_path / "chain"
    shutil.copytree(built, root)
    found = module.schedule(root, 1.0)
    assert set(found.scores) == {f"bench_agent/chain_00{t}/answer_1" for t in range(2)}
    monkeypatch.setenv(latency_model.LATENCY_ENV, "0")  # the schedule set its virtual latency
    args = ["run", "--answers", str(root / "answers"), "--judges", str(root / "judges")]
    args += ["--pages", str(root / "pages"), "--results", str(root / "results")]
    args += ["--include-unreviewed", "--no-sandbox", "--provider", runner_bench.PROVIDER]
    args += ["--cache-mode", "off"]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    assert runner_bench.check_results(root, found, "cli") is None
    result = root / "results" / "bench_agent" / "chain_001" / "answer_1.json"
    result.write_text(result.read_text().replace('"final_score": ', '"final_score": 0.5 + 0 * '))
    message = runner_bench.check_results(root, found, "cli")
    assert message is not None and "bench_agent/chain_001/answer_1" in message


def test_the_simulated_model_answers_through_a_timerfd_never_before_its_latency(workload) -> None:
    """The bench's model wakes the loop as a reply does (a descriptor readable at the
    deadline), so it never answers early (which would flatter judgegen) and is not rounded up
    to the millisecond like an asyncio timer."""
    import asyncio
    import time

    import latency_model

    async def waited() -> tuple[str, float]:
        started = time.monotonic()
        timer = await latency_model.wait_precisely(0.02)
        return timer, time.monotonic() - started

    timer, elapsed = asyncio.run(waited())
    assert timer == "timerfd"
    assert elapsed >= 0.02


def test_on_the_schedules_virtual_clock_the_simulated_model_sleeps_virtually(workload) -> None:
    """A loop with its own clock (the schedule's) keeps asyncio's timer: a timerfd would wait
    in wall time and break the virtual clock."""
    module, _ = workload
    import latency_model

    loop = module.VirtualClockLoop()
    try:
        started = loop.time()
        timer = loop.run_until_complete(latency_model.wait_precisely(5.0))
        assert timer == "asyncio"
        assert loop.time() - started == pytest.approx(5.0)
    finally:
        loop.close()


def test_a_chains_time_adds_up_from_its_rounds_gaps_and_stalls(
    workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's account of a chain-bound run: calls in flight together are one round, a
    wait (between rounds, or before a round's last call was sent) is judgegen's work unless it
    is over half a latency (a stall: no free LLM slot), and it is the evaluation that finished
    last whose time is told."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # runner_bench adds to it on import
    import runner_bench

    spans = [
        ("short", 0.30, 0.40),
        ("long", 0.31, 0.41),  # round 1: two trials together, the second answered 2 ms late
        ("long", 0.31, 0.412),
        ("long", 0.415, 0.515),  # round 2, after 3 ms of judgegen's work
        ("long", 0.575, 0.675),  # round 3, after a 60 ms stall (over half the latency)
        ("long", 0.68, 0.78),  # round 4, 5 ms later; its second call waited 60 ms for a slot
        ("long", 0.74, 0.84),
    ]
    timed = runner_bench.chain_time(spans, 0.1)
    assert timed is not None
    assert timed.task == "long"
    assert timed.steps == 4
    assert timed.start == pytest.approx(0.31)
    assert timed.late == pytest.approx(0.002)
    assert timed.between == pytest.approx(0.008)
    assert (timed.stall_count, timed.stalls) == (2, pytest.approx(0.12))
    assert timed.end == pytest.approx(0.84)
    assert runner_bench.chain_time([], 0.1) is None
