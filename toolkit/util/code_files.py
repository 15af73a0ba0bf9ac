"""The files a process's code came from, stamped, so that a look later tells whether a process
started now would load the same code: an edit (in place or by rename), a reinstall, a removal.

A long-lived process — the sandbox's fork server, a warm server — runs the code it imported
when it started; judging with it after its files changed would judge with other code than the
results' toolkit hash names. Standard library only: the fork server stamps before `Ready`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

Stamp = tuple[int, int, int]
"""A file's size, mtime (ns) and inode: what changes when it is written or replaced."""


def stamp(path: str) -> Stamp | None:
    """`path`'s stamp, None when it cannot be read (gone, or never a file: a zip member)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def loaded_files() -> dict[str, Stamp | None]:
    """Every loaded module's file and every loaded package's folder (a module added beside
    the ones loaded), stamped now."""
    files: dict[str, Stamp | None] = {}
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str):
            continue
        files[origin] = stamp(origin)
        if hasattr(module, "__path__"):
            folder = os.path.dirname(origin)
            files[folder] = stamp(folder)
    return files


def first_change(files: Mapping[str, Stamp | None]) -> str | None:
    """The first of `files` whose stamp is not what it was ("<path> changed"); None when a
    process started now would load the same files."""
    for path, was in files.items():
        if stamp(path) != was:
            return f"{path} changed"
    return None
