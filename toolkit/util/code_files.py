"""The files a process's code came from, stamped, so that a look later tells whether a process
started now would load the same code: an edit (in place or by rename), a reinstall, a removal —
of a module, or of a native library it loaded (`mapped_libraries`).

A long-lived process — the sandbox's fork server, a warm server — runs the code it imported
when it started; judging with it after its files changed would judge with other code than the
results' toolkit hash names. Standard library only: the fork server stamps before `Ready`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

Stamp = tuple[int, int, int]
"""A file's size, mtime (ns) and inode: what changes when it is written or replaced."""
REPLACED: Stamp = (-1, -1, -1)
"""The stamp of a mapped file already replaced or removed when stamped: no file has it."""
LINKER_CACHE = "/etc/ld.so.cache"
"""Where the dynamic linker (and `ctypes.util.find_library`) looks library names up: `ldconfig`
rewrites it when a library is installed, upgraded or removed."""
LIBRARY_PATH_ENV = "LD_LIBRARY_PATH"
"""Folders the dynamic linker (and `ctypes.util.find_library`) looks in before its cache."""
_DELETED = " (deleted)"
CLOCK_SLACK_NS = 100_000_000
"""How much earlier than the moment it happened a change may be dated: a file's times come
from the kernel's coarse clock, a tick or so behind the one `time.time_ns` reads."""
CLOCK_TICK_NS = 20_000_000
"""Twice the longest tick of that coarse clock (10 ms at HZ=100): the least slack that still
dates every change after the moment it is compared with, where a change wrongly dated after
costs more than a restart (a stopped run: a checkout just before it must not count)."""


def stamp(path: str) -> Stamp | None:
    """`path`'s stamp, None when it cannot be read (gone, or never a file: a zip member)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def loaded_files(importing_since_ns: int | None = None) -> dict[str, Stamp | None]:
    """Every loaded module's file and every loaded package's folder (a module added beside
    the ones loaded), stamped now. A module file changed since `importing_since_ns` (when this
    process began importing) may have been imported as it was before the change, which its
    stamp now would not show: it stamps `REPLACED`, a change whenever it is looked at."""
    since = None if importing_since_ns is None else importing_since_ns - CLOCK_SLACK_NS
    files: dict[str, Stamp | None] = {}
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str):
            continue
        files[origin] = stamp(origin) if since is None else _stamp_unless_changed(origin, since)
        if hasattr(module, "__path__"):
            folder = os.path.dirname(origin)
            files[folder] = stamp(folder)
    return files


def stamps_unless_changed(
    paths: Iterable[str], since_ns: int, slack_ns: int = CLOCK_SLACK_NS
) -> dict[str, Stamp | None]:
    """Each of `paths` stamped now, or `REPLACED` when its status changed at `since_ns` (less
    `slack_ns`, how far behind the file clock may be) or later: what was read of it since may
    not be what it holds now."""
    since = since_ns - slack_ns
    return {path: _stamp_unless_changed(path, since) for path in paths}


def _stamp_unless_changed(path: str, since_ns: int) -> Stamp | None:
    """`path`'s stamp, or `REPLACED` when its status changed at `since_ns` or later (its
    ctime: an edit, even one that puts its modification time back)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_ctime_ns >= since_ns:
        return REPLACED
    return info.st_size, info.st_mtime_ns, info.st_ino


def first_change(files: Mapping[str, Stamp | None]) -> str | None:
    """The first of `files` whose stamp is not what it was ("<path> changed"); None when a
    process started now would load the same files."""
    for path, was in files.items():
        if stamp(path) != was:
            return f"{path} changed"
    return None


def library_path_folders(value: str | None) -> list[str]:
    """The folders an LD_LIBRARY_PATH of `value` names, in order, as absolute paths (an empty
    entry is the working folder, as the linker reads it; `:` and `;` both separate)."""
    if not value:
        return []
    entries = value.replace(";", ":").split(":")
    return list(dict.fromkeys(os.path.abspath(entry or ".") for entry in entries))


def linker_lookup() -> dict[str, Stamp | None]:
    """Where the dynamic linker finds a library by name, stamped now: this process's
    LD_LIBRARY_PATH folders (a library added, removed or renamed in one changes its stamp)
    and the linker's cache."""
    folders = library_path_folders(os.environ.get(LIBRARY_PATH_ENV))
    files = {folder: stamp(folder) for folder in folders}
    files[LINKER_CACHE] = stamp(LINKER_CACHE)
    return files


def mapped_libraries(maps: str = "/proc/self/maps") -> dict[str, Stamp | None]:
    """Every file mapped executable into this process — the interpreter, the shared objects
    the dynamic linker, extension modules or ctypes loaded — stamped now, and where the linker
    finds libraries by name (`linker_lookup`: a library installed since would be found). A
    file replaced or removed since it was mapped stamps `REPLACED`. Anonymous memory and
    memfds are no files; nor are libffi's closure trampolines (`ffiXXXXXX`, mapped from a
    file it removes at once)."""
    files = linker_lookup()
    try:
        with open(maps) as listing:
            lines = listing.read().splitlines()
    except OSError:
        return files
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or "x" not in fields[1] or not fields[5].startswith("/"):
            continue
        path = fields[5]
        if path.startswith("/memfd:"):
            continue
        if path.endswith(_DELETED):
            path = path[: -len(_DELETED)]
            if not os.path.basename(path).startswith("ffi"):
                files[path] = REPLACED
        elif path not in files:
            files[path] = stamp(path)
    return files
