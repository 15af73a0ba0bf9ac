"""What a server imported, and whether it is still what a fresh process would import.

Taken once the server has imported everything: every loaded module's file and every loaded
package's folder (size, mtime and inode: an edit, a reinstall or a new module beside it), and
which import-path entry each top-level module came from (a new file earlier on the path,
which would shadow it). `changed` answers before every command, in a few milliseconds; any
difference is stale, and the server then exits rather than judge with other code.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib.machinery import all_suffixes

from toolkit.util.code_files import Stamp, first_change, loaded_files

_SUFFIXES = tuple(sorted(all_suffixes(), key=len, reverse=True))


def _stem(name: str) -> str:
    """The module a folder entry would be imported as (`x.cpython-311-…so` → `x`)."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)].split(".")[0]
    return name


def _providers(path: list[str], wanted: set[str]) -> dict[str, int]:
    """For each top-level name in `wanted`, the first import-path entry holding it."""
    found: dict[str, int] = {}
    for index, entry in enumerate(path):
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem = _stem(name)
            if stem in wanted and stem not in found:
                found[stem] = index
    return found


@dataclass(frozen=True)
class CodeSnapshot:
    """The files and folders a server's code came from, as they were when it imported it."""

    files: dict[str, Stamp | None]
    path: tuple[str, ...]
    providers: dict[str, int]

    @classmethod
    def take(cls) -> CodeSnapshot:
        """The snapshot of what this process has imported."""
        top = {
            name.partition(".")[0]
            for name, module in list(sys.modules.items())
            if isinstance(getattr(module, "__file__", None), str)
        }
        path = tuple(sys.path)
        return cls(loaded_files(), path, _providers(list(path), top))

    def changed(self) -> str | None:
        """What differs from the snapshot (None: a fresh process would import the same)."""
        if tuple(sys.path) != self.path:
            return "the import path changed"
        changed = first_change(self.files)
        if changed is not None:
            return changed
        now = _providers(list(self.path), set(self.providers))
        for name, index in self.providers.items():
            if now.get(name) != index:
                return f"{name} would now be imported from {self.path[now[name]] or '.'}"
        return None
