"""One run per results folder at a time: an OS file lock (`flock`) held for the whole run.

Two runs writing one results folder would judge every answer twice and race on the summary.
The lock lives in the folder (`.judgegen-run.lock`); the OS releases it when its holder exits,
however it exits, so a killed run never leaves the folder locked. On a filesystem without
file locks (some FUSE mounts) the caller is told so and holds nothing: it should then vouch
for nothing it writes there. `run`'s fresh-stamp check takes the same lock shared, so it never
reads a folder a run is writing. Standard library only: the lock is on `run`'s start-up path.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from toolkit.errors import ResultsBusy

LOCK_FILE = ".judgegen-run.lock"
_NO_LOCKS = frozenset({errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP})


@contextmanager
def results_lock(
    results_dir: str | Path, *, wait: bool = True, notify: Callable[[str], None] | None = None
) -> Iterator[Path | None]:
    """Hold the results folder's lock and yield its path. When another run holds it, call
    `notify` with a message and block until it is free (`wait`), or raise `ResultsBusy` at
    once. When the folder's filesystem has no file locks, `notify` why and yield None."""
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    say = notify or (lambda message: None)
    try:
        fd = _locked(path, fcntl.LOCK_NB)
    except BlockingIOError:
        busy = f"another `judgegen run` is writing {folder} (lock {path})"
        if not wait:
            raise ResultsBusy(
                f"{busy}; wait for it to finish, drop --no-wait to queue behind it, "
                "or pass another --results folder"
            ) from None
        say(f"{busy}; waiting for it to finish (--no-wait exits instead)")
        fd = _locked(path, 0)
    except _NoFileLocks as exc:
        say(
            f"warning: {path} cannot be locked ({exc}): its filesystem has no file locks, so "
            "nothing stops another run writing this folder at once; a --results folder on a "
            "local disk avoids that"
        )
        yield None
        return
    try:
        yield path
    finally:
        os.close(fd)  # closing releases the lock


class _NoFileLocks(Exception):
    """The filesystem does not implement `flock`."""


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
        except OSError as exc:
            os.close(fd)
            if exc.errno in _NO_LOCKS:
                raise _NoFileLocks(exc.strerror) from exc
            raise
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)
