"""One run per results folder at a time: an OS file lock (filelock) held for the whole run.

Two runs writing one results folder would judge every answer twice and race on the summary.
The lock lives in the folder (`.judgegen-run.lock`); the OS releases it when its holder exits,
however it exits, so a killed run never leaves the folder locked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

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
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        busy = f"another `judgegen run` is writing {folder} (lock {path})"
        if not wait:
            raise ResultsBusy(
                f"{busy}; wait for it to finish, drop --no-wait to queue behind it, "
                "or pass another --results folder"
            ) from None
        if on_wait is not None:
            on_wait(f"{busy}; waiting for it to finish (--no-wait exits instead)")
        lock.acquire()
    try:
        yield path
    finally:
        lock.release()
