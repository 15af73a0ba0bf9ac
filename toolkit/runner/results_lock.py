"""One run per results folder at a time: an OS file lock (`flock`) held for the whole run.

Two runs writing one results folder would judge every answer twice and race on the summary.
The lock lives in the folder (`.judgegen-run.lock`); the OS releases it when its holder exits,
however it exits, so a killed run never leaves the folder locked. The fresh stamp's check
(`generator.cli.fresh_stamp`) takes the same lock shared, so it never reads a folder a run is
writing. Standard library only: the lock is on `run`'s start-up path.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from toolkit.errors import ResultsBusy

LOCK_FILE = ".judgegen-run.lock"


@contextmanager
def results_lock(
    results_dir: str | Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Hold the results folder's lock; when another run holds it, call `on_wait` with a message
    and block until it is free (`wait`), or raise `ResultsBusy` at once."""
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    try:
        fd = _locked(path, fcntl.LOCK_NB)
    except BlockingIOError:
        busy = f"another `judgegen run` is writing {folder} (lock {path})"
        if not wait:
            raise ResultsBusy(
                f"{busy}; wait for it to finish, drop --no-wait to queue behind it, "
                "or pass another --results folder"
            ) from None
        if on_wait is not None:
            on_wait(f"{busy}; waiting for it to finish (--no-wait exits instead)")
        fd = _locked(path, 0)
    try:
        yield path
    finally:
        os.close(fd)  # closing releases the lock


def _locked(path: Path, flags: int) -> int:
    """A descriptor holding `path`'s exclusive lock (BlockingIOError when another holds it and
    `flags` has LOCK_NB). A lock file removed or replaced meanwhile is locked again by its path."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | flags)
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)
