"""A `judgegen run` stopped by SIGTERM (`timeout`, `docker stop`, systemd, CI cancellation) or
Ctrl-C loses nothing it computed: answers paid for stay in the response cache, calls in flight
get their ledger rows, and it exits 143 (SIGTERM) or 130 (SIGINT) with one line saying how to
resume. The model is `answers_as_the_gate_opens`: the test lets it answer exactly as many calls
as it wants, one evaluation at a time and one call at a time, before it sends the signal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generator.cli.rerun import rerun_note
from tests.fixtures.runner.helpers import llm_run
from tests.fixtures.runner.llm_policy import GATE_ENV
from toolkit.llm.cache_mode import CacheMode

REPO = Path(__file__).resolve().parents[2]
GATED = "scripted:tests.fixtures.runner.llm_policy:answers_as_the_gate_opens"
IGNORING = "scripted:tests.fixtures.runner.llm_policy:calls_ignore_a_cancellation"
RESUME = rerun_note("run", CacheMode.RW)


class GatedRun:
    """A cold `judgegen run` in another process over the runner fixtures, one call at a time,
    whose model answers only the calls the test lets through (`open_to`)."""

    def __init__(self, work: Path, provider: str = GATED) -> None:
        self.work = work
        self.gate = work / "gate"
        args, llm_env = llm_run(work, "--jobs", "1", "--concurrency", "1", provider=provider)
        self.command = [sys.executable, "-c", "from generator.cli import entry; entry()", *args]
        self.env = {
            **os.environ,
            **llm_env,
            "PYTHONPATH": str(REPO),
            "JUDGEGEN_SERVER": "off",
            GATE_ENV: str(self.gate),
        }
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = subprocess.Popen(
            self.command,
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_default_signals,
        )
        return self.process

    def open_to(self, calls: int) -> None:
        """Let the model answer its first `calls` calls (written whole: the model reads it)."""
        ajar = self.gate.with_name("gate.tmp")
        ajar.write_text(str(calls))
        ajar.replace(self.gate)

    def keys(self, which: str) -> list[str]:
        """The cache keys of the calls that `arrived` at the model, or that it `answered`."""
        path = self.gate.with_name(f"gate.{which}")
        return path.read_text().split() if path.exists() else []

    def wait_for(self, what: Callable[[], bool], why: str) -> None:
        assert self.process is not None
        deadline = time.monotonic() + 60
        while not what():
            assert self.process.poll() is None, f"the run ended before {why}"
            assert time.monotonic() < deadline, f"never {why}"
            time.sleep(0.01)

    def stop(self, signum: int) -> subprocess.CompletedProcess[str]:
        """Send `signum` and wait for the run's end."""
        assert self.process is not None
        self.process.send_signal(signum)
        out, err = self.process.communicate(timeout=60)
        return subprocess.CompletedProcess(self.command, self.process.returncode, out, err)

    def ledger(self) -> list[dict[str, object]]:
        path = self.work / "ledger.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def cached(self) -> set[str]:
        with sqlite3.connect(self.work / "llm-cache.sqlite") as db:
            return {key for (key,) in db.execute("SELECT key FROM entries")}


def _default_signals() -> None:
    """SIGINT at its default in the run, as a terminal starts a command (a suite run in a
    shell's background job ignores it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def gated(work: Path) -> Iterator[GatedRun]:
    run = GatedRun(work)
    yield run
    if run.process is not None and run.process.poll() is None:
        run.process.kill()
        run.process.communicate()


def stopped_at_the_second_call(run: GatedRun, signum: int) -> subprocess.CompletedProcess[str]:
    """Start the run, let its model answer one call, and send `signum` once the next call is
    in flight."""
    run.open_to(1)
    run.start()
    run.wait_for(lambda: len(run.keys("arrived")) >= 2, "a second call reached the model")
    return run.stop(signum)


@pytest.mark.parametrize(
    ("signum", "code", "name"),
    [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT (Ctrl-C)")],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_stopped_run_exits_128_plus_the_signal_and_says_how_to_resume(
    gated: GatedRun, signum: int, code: int, name: str
) -> None:
    done = stopped_at_the_second_call(gated, signum)

    assert done.returncode == code, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"error: stopped by {name} before the run finished. {RESUME}"
    assert "Aborted!" not in done.stderr and "Traceback" not in done.stderr


def test_a_call_in_flight_at_sigterm_has_its_ledger_row(gated: GatedRun) -> None:
    done = stopped_at_the_second_call(gated, signal.SIGTERM)

    rows = gated.ledger()
    assert [row["error"] for row in rows if row["error"] is None] == [None]  # the answer paid
    assert "abandoned" in {row["error"] for row in rows}, done.stderr  # the call in flight
    assert done.returncode == 143, done.stderr


def test_an_answer_paid_for_before_sigterm_is_kept_though_its_commit_was_still_queued(
    gated: GatedRun,
) -> None:
    """Another process holds the response cache's write lock while the model answers the
    first call, so that answer is still queued for the cache's writer when SIGTERM comes
    (as it is for ~20 ms after each answer): the run commits it before it exits, once the
    lock is free, and its rerun does not pay for it again."""
    gated.start()
    gated.wait_for(lambda: len(gated.keys("arrived")) >= 1, "a call reached the model")
    with sqlite3.connect(gated.work / "llm-cache.sqlite", isolation_level=None) as other:
        other.execute("BEGIN IMMEDIATE")  # the run's writer waits for it (busy timeout)
        gated.open_to(1)
        gated.wait_for(lambda: len(gated.keys("arrived")) >= 2, "a second call was made")
        assert gated.process is not None
        gated.process.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # a run that SIGTERM kills is gone; one that stops waits for the lock
        other.execute("ROLLBACK")
    _, err = gated.process.communicate(timeout=60)

    paid = gated.keys("answered")
    assert len(paid) == 1
    assert set(paid) <= gated.cached(), err
    assert gated.process.returncode == 143, err
    gated.open_to(1_000_000)
    rerun = subprocess.run(
        gated.command, cwd=gated.work, env=gated.env, capture_output=True, text=True
    )
    assert rerun.returncode == 0, rerun.stderr
    answered = gated.keys("answered")
    assert len(answered) == len(set(answered))  # no answer paid for twice


def test_a_second_sigterm_ends_the_run_at_once(work: Path) -> None:
    """Its calls ignore the first cancellation, so the stopping run would wait for them
    (`LLMClient.close_wait_s`, 5 s): the second SIGTERM does not wait."""
    run = GatedRun(work, provider=IGNORING)
    process = run.start()
    try:
        arrived = work / "ledger.jsonl"
        run.wait_for(lambda: True, "")
        time.sleep(1.0)  # the run is under way, its first call out
        assert process.poll() is None and not arrived.exists()
        process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
        assert process.returncode == -signal.SIGTERM
        assert time.monotonic() - signalled < 2.0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
