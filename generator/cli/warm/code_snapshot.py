"""What a server imported, and whether it is still what a fresh process would import.

Taken once the server has imported everything: every loaded module's file and every loaded
package's folder (size, mtime and inode: an edit, a reinstall or a new module beside it), the
native libraries mapped into it, the linker's cache and LD_LIBRARY_PATH's folders (an upgrade
of libseccomp or libsqlite3, or a library installed where the linker would find it first),
which import-path entry each top-level module came from (a new file earlier on the path, which
would shadow it), the `.pth` files on the path (a new one can add an importer), and the imports
it looked for and did not get (an optional binding installed since: a fresh process would
import it). `changed` answers before every command, in a few milliseconds; any difference is
stale, and the server then exits rather than judge with other code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib.machinery import PathFinder, all_suffixes

from toolkit.util.code_files import Stamp, first_change, loaded_files, mapped_libraries, stamp

_SUFFIXES = tuple(sorted(all_suffixes(), key=len, reverse=True))
_STARTUP = ".pth"


def _stem(name: str) -> str:
    """The module a folder entry would be imported as (`x.cpython-311-…so` → `x`)."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)].split(".")[0]
    return name


def _scan(path: Iterable[str], wanted: set[str]) -> tuple[dict[str, int | None], frozenset[str]]:
    """For each top-level name in `wanted`, the index of the first import-path entry holding
    it (None: none does); and the `.pth` files in the entries."""
    found: dict[str, int | None] = dict.fromkeys(wanted)
    startup: set[str] = set()
    for index, entry in enumerate(path):
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem = _stem(name)
            if stem in wanted and found[stem] is None:
                found[stem] = index
            if name.endswith(_STARTUP):
                startup.add(os.path.join(entry, name))
    return found, frozenset(startup)


def _not_imported(tried: Iterable[str]) -> list[str]:
    """The names in `tried` that are not loaded — an import that found nothing, or found a
    module that failed (a binding whose library is missing) — and the start-up's own optional
    imports: `site` looks for sitecustomize and usercustomize before anything can watch."""
    names = set(tried)
    if "site" in sys.modules and not sys.flags.no_site:
        names.add("sitecustomize")
        if getattr(sys.modules["site"], "ENABLE_USER_SITE", False):
            names.add("usercustomize")
    return sorted(name for name in names if sys.modules.get(name) is None)


def _where_it_would_come_from(name: str) -> dict[str, Stamp | None]:
    """For a name that is not loaded: its parent package's folders (a submodule added there
    would be found), and the file and folders it was found in if it was found (its import
    failed: a fix there, or to what it loads, would let it succeed)."""
    parent_name, _, _ = name.rpartition(".")
    if parent_name:
        parent = sys.modules.get(parent_name)
        folders = list(getattr(parent, "__path__", None) or [])
        if not folders:
            return {}  # its parent is no loaded package: the parent's own entry covers it
    else:
        folders = list(sys.path)
    files = {folder: stamp(folder) for folder in folders} if parent_name else {}
    try:
        spec = PathFinder.find_spec(name, folders)
    except (ImportError, ValueError, OSError):
        spec = None
    if spec is not None:
        if spec.origin and os.path.isfile(spec.origin):
            files[spec.origin] = stamp(spec.origin)
        for folder in spec.submodule_search_locations or ():
            files[folder] = stamp(folder)
    return files


@dataclass(frozen=True)
class CodeSnapshot:
    """The files and folders a server's code came from, as they were when it imported it."""

    files: dict[str, Stamp | None]
    path: tuple[str, ...]
    providers: dict[str, int | None]
    """Top-level names — of loaded modules, and of imports that found nothing (None) — and
    the import-path entry a fresh process would find each in."""
    startup: frozenset[str]
    """The `.pth` files in the import path's entries."""
    not_imported: tuple[str, ...] = ()
    """The imports looked for that did not give a module (`_not_imported`)."""

    @classmethod
    def take(
        cls, tried: Collection[str] = (), importing_since_ns: int | None = None
    ) -> CodeSnapshot:
        """The snapshot of what this process has imported; `tried`: every module name its
        imports looked for (the server records them while it imports); `importing_since_ns`:
        when it began importing (a module file changed since is a change: `loaded_files`)."""
        missing = _not_imported(tried)
        top = {
            name.partition(".")[0]
            for name, module in list(sys.modules.items())
            if isinstance(getattr(module, "__file__", None), str)
        }
        top |= {name for name in missing if "." not in name}
        path = tuple(sys.path)
        files = loaded_files(importing_since_ns) | mapped_libraries()
        for name in missing:
            files |= _where_it_would_come_from(name)
        providers, startup = _scan(path, top)
        files |= {pth: stamp(pth) for pth in startup}
        return cls(files, path, providers, startup, tuple(missing))

    def changed(self) -> str | None:
        """What differs from the snapshot (None: a fresh process would import the same)."""
        if tuple(sys.path) != self.path:
            return "the import path changed"
        changed = first_change(self.files)
        if changed is not None:
            return changed
        now, startup = _scan(self.path, set(self.providers))
        for name, index in self.providers.items():
            found = now[name]
            if found == index:
                continue
            if found is None:
                return f"{name} would no longer be found on the import path"
            where = self.path[found] or "."
            if index is None:
                return f"{name}, which an import looked for and did not find, is now in {where}"
            return f"{name} would now be imported from {where}"
        if startup != self.startup:
            return f"the .pth files on the import path changed: {sorted(startup ^ self.startup)}"
        return None
