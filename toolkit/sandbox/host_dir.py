"""The host-side temp folder of one sandbox launch, and the sweep of those whose run died.

A launch keeps two things in the host's temp dir: the fork server's working folder (`home`,
its HOME when bubblewrap is missing) and the probe file it must not see. A run killed with
SIGKILL (or by the OOM killer) cannot remove them, so each launch's folder holds a lock file
its process keeps locked (`flock`) while it lives; the kernel drops the lock when the process
dies, however it dies. Each launch first removes the folders whose lock nobody holds:
folders of live runs, of other users, or without a lock file (one being created) are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import BinaryIO

PREFIX = "judgegen-sandbox-"
OWNER_FILE = ".owner"


@dataclass(frozen=True)
class HostDir:
    """A launch's folder (`root`, which also holds the probe file), its `home` subfolder,
    and the open lock file holding its owner lock (`discard` releases it). A file object,
    not a bare descriptor: closing it twice is harmless, where closing a descriptor number
    again could close whatever reused it."""

    root: str
    lock: BinaryIO

    @property
    def home(self) -> str:
        return os.path.join(self.root, "home")

    def discard(self) -> None:
        """Remove the folder and release its lock; idempotent."""
        discard(self.root, self.lock)


def create() -> HostDir:
    """A new locked folder with an empty `home` subfolder, after sweeping the folders of
    dead launches."""
    sweep()
    root = tempfile.mkdtemp(prefix=PREFIX)
    unnamed = os.path.join(root, OWNER_FILE + ".new")
    made = HostDir(root, _open(unnamed, os.O_CREAT))
    try:
        fcntl.flock(made.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(unnamed, os.path.join(root, OWNER_FILE))  # a sweep only ever sees it locked
        os.mkdir(made.home, 0o700)
    except BaseException:
        made.discard()
        raise
    return made


def discard(root: str, lock: BinaryIO) -> None:
    """Remove `root`, then release its lock (so no sweep sees a folder that is half gone
    but unlocked while this process still removes it); idempotent."""
    shutil.rmtree(root, ignore_errors=True)
    with contextlib.suppress(OSError):
        lock.close()


def _open(path: str, flags: int = 0) -> BinaryIO:
    """`path` opened for locking, unbuffered, not inherited by child processes."""
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | flags, 0o600)
    return os.fdopen(fd, "r+b", buffering=0)


def sweep(directory: str | None = None) -> list[str]:
    """Remove the launch folders under `directory` (default: the temp dir) owned by this
    user whose lock no process holds; returns the folders removed."""
    directory = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if entry.name.startswith(PREFIX) and _remove_if_abandoned(entry):
            removed.append(entry.path)
    return removed


def _remove_if_abandoned(entry: os.DirEntry[str]) -> bool:
    """Remove `entry` if it is this user's launch folder and its owner is gone; whether
    it was removed."""
    try:
        if (
            not entry.is_dir(follow_symlinks=False)
            or entry.stat(follow_symlinks=False).st_uid != os.getuid()
        ):
            return False
        lock = _open(os.path.join(entry.path, OWNER_FILE))
    except OSError:
        return False  # not a folder of ours, gone already, or not locked yet: leave it
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return False  # its run is alive
    discard(entry.path, lock)
    return True
