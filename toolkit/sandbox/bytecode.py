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
"""

from __future__ import annotations

import os
import py_compile
import sys
from collections.abc import Iterable
from importlib.util import MAGIC_NUMBER
from pathlib import Path

_HEADER_BYTES = 16


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
            py_compile.compile(
                source,
                cfile=cached,
                doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
            )
        except (py_compile.PyCompileError, OSError, ValueError):
            continue
        written.append(source)
    return written


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
