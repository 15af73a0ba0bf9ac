"""Bytecode the fork server cannot write for itself.

The fork server imports the modules jobs need (`toolkit.sandbox.worker`) with the project
mounted read-only and `PYTHONDONTWRITEBYTECODE` set: a module whose cached bytecode is
missing or stale is compiled from source at every start, and nothing ever caches it. An
installed package has its bytecode written at install, but in an editable install
(`pip install -e .`) the modules only the fork server imports (`toolkit.sandbox.job`,
`toolkit.sandbox.worker`, `toolkit.compat`) stayed uncompiled: ~10 ms of the fork server's
~140 ms of imports, on a cold run's path to its first judge, at every start. So the parent,
which may write where the interpreter would, writes it for the project's files among those
the fork server reported loading — the same bytecode the import system writes, in the same
place, after the run's judging.

A cache is checked by its source's size and modification time (in whole seconds) only, so it
must name exactly the text it was compiled from: the file is stat-ed before it is read and
again before the cache is put in place (an edit meanwhile leaves it uncached), and a file
modified less than `SETTLE_S` ago is left alone (an edit of the same size within the same
second would otherwise run the cached code). The code is compiled as the fork server, started
without -O, would compile it, whatever this interpreter's optimization level.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import time
from collections.abc import Iterable
from importlib.util import MAGIC_NUMBER
from pathlib import Path

_HEADER_BYTES = 16
SETTLE_S = 2.0
"""How old a source's modification time must be before its cache is written: past its whole
second, with room for a file system's coarse clock."""


def write_missing_bytecode(files: Iterable[str], root: Path) -> list[str]:
    """Write the cached bytecode of each `.py` file of `files` under `root` whose cache is
    missing or stale, as an import would (nothing when this interpreter writes no bytecode,
    `-B` or `PYTHONDONTWRITEBYTECODE`); the files compiled. A file that cannot be compiled or
    a folder that cannot be written is left to compile at import, as before."""
    if sys.dont_write_bytecode:
        return []
    top = str(root.resolve()) + os.sep
    written = []
    for source in files:
        if not source.endswith(".py") or not source.startswith(top):
            continue
        cached = cache_path(source)
        if _current(source, cached) or not _writable(cached):
            continue
        try:
            compiled = _compile(source, cached)
        except (SyntaxError, OSError, ValueError, RecursionError, MemoryError):
            continue
        if compiled:
            written.append(source)
    return written


def _compile(source: str, cached: str) -> bool:
    """Write `cached` for `source` as a timestamp-checked cache of the text read now; False
    (nothing written) when the source was modified less than `SETTLE_S` ago or changed
    while it was read and compiled."""
    with open(source, "rb") as stream:
        before = os.fstat(stream.fileno())
        if time.time_ns() - before.st_mtime_ns < SETTLE_S * 1e9:
            return False
        text = stream.read()
    code = compile(text, source, "exec", dont_inherit=True, optimize=0)
    header = b"".join(
        (
            MAGIC_NUMBER,
            (0).to_bytes(4, "little"),
            (int(before.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"),
            (before.st_size & 0xFFFFFFFF).to_bytes(4, "little"),
        )
    )
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    partial = f"{cached}.{os.getpid()}.tmp"
    mode = (before.st_mode | 0o200) & 0o666  # as the import system gives its caches
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with open(fd, "wb") as stream:
            stream.write(header + marshal.dumps(code))
        if not _same_file(before, os.stat(source)):
            os.unlink(partial)
            return False
        os.replace(partial, cached)  # an importer reads the old cache or this one, whole
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return True


def _same_file(before: os.stat_result, after: os.stat_result) -> bool:
    """Whether two stats are of the same, unmodified file."""
    return (before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns) == (
        after.st_ino,
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    )


def cache_path(source: str) -> str:
    """Where an interpreter started without -O and without a bytecode prefix (the fork
    server's: its environment has no `PYTHONPYCACHEPREFIX`) looks for `source`'s bytecode."""
    folder, name = os.path.split(source)
    stem = name.rpartition(".")[0]
    return os.path.join(folder, "__pycache__", f"{stem}.{sys.implementation.cache_tag}.pyc")


def _writable(cached: str) -> bool:
    """Whether `cached` may be written: its `__pycache__` folder, or the folder that would
    hold it, is writable (a read-only checkout is not compiled in vain at every run)."""
    folder = os.path.dirname(cached)
    return os.access(folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK)


def _current(source: str, cached: str) -> bool:
    """Whether `cached` is what an import would use for `source` without compiling it: this
    interpreter's magic number, validated by the source's modification time and size."""
    try:
        with open(cached, "rb") as stream:
            header = stream.read(_HEADER_BYTES)
        stat = os.stat(source)
    except OSError:
        return False
    if len(header) != _HEADER_BYTES or header[:4] != MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & 0b1:  # hash-based: an import checks it (or not) by hash, never recompiles it
        return True
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF
