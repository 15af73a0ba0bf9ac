"""A sandbox launch's host folder: removed with its launch, and swept by the next launch
once the run that made it is gone, however it died (SIGKILL included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from toolkit.sandbox import host_dir

REPO = Path(__file__).resolve().parents[2]

HOLD = """
import sys, time
from toolkit.sandbox import host_dir
folder = host_dir.create()
print(folder.root, flush=True)
time.sleep(60)
"""


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's and its children's temp dir, for this test only."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def holder() -> tuple[subprocess.Popen[str], Path]:
    """A process holding a launch folder of its own, and that folder."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD], env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def test_a_new_folder_has_a_home_and_goes_when_discarded(temp: Path) -> None:
    folder = host_dir.create()
    assert Path(folder.home).is_dir() and not any(Path(folder.home).iterdir())
    assert Path(folder.root).parent == temp
    folder.discard()
    assert not Path(folder.root).exists()
    folder.discard()  # idempotent


def test_the_folder_of_a_live_run_is_kept_and_swept_once_it_was_killed(temp: Path) -> None:
    process, root = holder()
    try:
        assert root.is_dir()
        assert host_dir.sweep() == []
        assert root.is_dir()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert root.is_dir()  # nobody could remove it
    host_dir.create().discard()  # the next launch sweeps it
    assert not root.exists()
    assert list(temp.iterdir()) == []


def test_a_folder_without_its_lock_file_yet_is_left_alone(temp: Path) -> None:
    creating = temp / f"{host_dir.PREFIX}creating"
    creating.mkdir()
    (creating / f"{host_dir.OWNER_FILE}.new").write_text("")
    assert host_dir.sweep() == []
    assert creating.is_dir()


def test_other_folders_in_the_temp_dir_are_never_touched(temp: Path) -> None:
    other = temp / "judgegen-worker-abc"
    other.mkdir()
    (temp / f"{host_dir.PREFIX}file").write_text("not a folder")
    assert host_dir.sweep() == []
    assert other.is_dir() and (temp / f"{host_dir.PREFIX}file").is_file()


def test_discarding_twice_never_closes_a_descriptor_that_reused_the_locks_number(
    temp: Path,
) -> None:
    folder = host_dir.create()
    number = folder.lock.fileno()
    folder.discard()
    reused = os.open(os.devnull, os.O_RDONLY)
    try:
        assert reused == number  # the lowest free number: the lock's
        folder.discard()  # as the launch's finalizer does after `kill`
        os.fstat(reused)  # still open
    finally:
        os.close(reused)
