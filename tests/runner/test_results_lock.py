"""One run per results folder: a second `judgegen run` waits for the first, or exits 2."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import (
    result_files,
    run_args,
)
from toolkit.errors import ResultsBusy
from toolkit.runner.results_lock import LOCK_FILE, results_lock

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from generator.cli import main; main()"]


def args(work: Path, backend: str, *extra: str) -> list[str]:
    return run_args(work, "--include-unreviewed", "--no-sandbox", "--json", *extra, backend=backend)


def environment(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JUDGEGEN_TEST_GATE": str(work / "gate"),
        "JUDGEGEN_TEST_STARTED": str(work / "started"),
    }


def start_run(work: Path) -> subprocess.Popen[str]:
    """`judgegen run` in its own process, with a backend that waits for `work/gate`."""
    return subprocess.Popen(
        [*CLI, *args(work, "tests.fixtures.runner.gated:factory")],
        cwd=REPO,
        env=environment(work),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_holding_run(work: Path) -> subprocess.Popen[str]:
    """A run that has reached its backend, so it holds the results folder."""
    process = start_run(work)
    deadline = time.monotonic() + 60
    while not (work / "started").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the first run never reached its backend"
        time.sleep(0.02)
    return process


def test_second_run_with_no_wait_exits_2_while_the_first_holds_the_folder(work: Path) -> None:
    first = start_holding_run(work)
    try:
        second = subprocess.run(
            [*CLI, *args(work, "tests.fixtures.runner.scripted:factory", "--no-wait")],
            cwd=REPO,
            env=environment(work),
            capture_output=True,
            text=True,
        )
        assert second.returncode == 2, second.stderr
        assert "another `judgegen run` is writing" in second.stderr
        assert second.stdout == ""
    finally:
        (work / "gate").touch()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["evaluated"] == 10


def test_second_run_waits_for_the_first_and_then_reuses_its_results(work: Path) -> None:
    first = start_holding_run(work)
    second = start_run(work)
    try:
        line = second.stderr.readline() if second.stderr else ""
        assert "waiting for it to finish" in line
        assert second.poll() is None
    finally:
        (work / "gate").touch()
    first_out, first_err = first.communicate(timeout=120)
    second_out, second_err = second.communicate(timeout=120)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert json.loads(first_out)["evaluated"] == 10
    assert json.loads(second_out)["evaluated"] == 0
    assert len(result_files(work / "results")) == 11


def test_a_lock_held_by_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from toolkit.runner.results_lock import results_lock\n"
            "with results_lock(sys.argv[1]):\n"
            "    print('held', flush=True); time.sleep(600)",
            str(tmp_path),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(ResultsBusy), results_lock(tmp_path, wait=False):
            pass
    finally:
        holder.kill()
        holder.wait()
    with results_lock(tmp_path, wait=False) as path:
        assert path == tmp_path / LOCK_FILE


def test_a_lock_file_removed_while_a_run_waits_is_locked_again_by_its_path(tmp_path: Path) -> None:
    acquired = threading.Event()
    release = threading.Event()
    messages: list[str] = []

    def waiter() -> None:
        with results_lock(tmp_path, notify=messages.append):
            acquired.set()
            release.wait(30)

    with results_lock(tmp_path):
        thread = threading.Thread(target=waiter)
        thread.start()
        deadline = time.monotonic() + 30
        while not messages:
            assert time.monotonic() < deadline, "the second holder never started waiting"
            time.sleep(0.01)
        (tmp_path / LOCK_FILE).unlink()  # e.g. someone cleaning the results folder
    try:
        assert acquired.wait(30)
        # The waiter holds the lock file that is now at the path, so a third run is refused.
        with pytest.raises(ResultsBusy), results_lock(tmp_path, wait=False):
            pass
    finally:
        release.set()
        thread.join(30)
    assert "waiting for it to finish" in messages[0]


def test_a_folder_on_a_filesystem_without_file_locks_is_used_unlocked_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(fd: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", unsupported)
    said: list[str] = []
    with results_lock(tmp_path, notify=said.append) as locked:
        assert locked is None
    assert len(said) == 1
    assert str(tmp_path / LOCK_FILE) in said[0] and "has no file locks" in said[0]
