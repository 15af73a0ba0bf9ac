"""The source files a scripted policy runs: its module, the packages holding it and the user's own
modules it imports, transitively, so editing a helper module (`from mypolicies.tables import
ANSWERS`, `import helpers`, `from . import data`) makes the answers' hash change too.

Imports are read from the source (`ast`) and resolved as import would resolve them (relative
ones, and `from pkg import submodule`, included) without running them. The user's own are the
modules found on the sys.path entry the policy was found on (the working directory, or the
folder holding its top-level package); the standard library, installed packages and judgegen
itself are the tool's, not the answers, and are neither hashed nor read. On a site-packages
entry only the policy's own top-level package is the user's.

Not seen: a module imported by a name computed at run time (`importlib.import_module(name)`),
and data files a policy reads (`json.load(open("answers.json"))`). Keep such answers where the
hash sees them: in a module the policy imports (`tables.py` holding the dict), or recorded
and replayed with `--provider replay:DIR`, whose recordings are hashed.

`user_modules_imported` reads a judge, which is one module, the same way: it names the user's
modules the judge imports (anything but the standard library, installed packages and
judgegen's own), which the runner refuses (`toolkit.runner.loader.user_import_problem`).

Stdlib only and nothing imported from the user: a rerun with nothing to redo computes this.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

TOOL_PACKAGES = ("toolkit", "generator", "prompts")
"""judgegen's own packages (the fresh stamp's `CODE_PACKAGES`): the tool, not a policy's
answers, even in a checkout that puts them on the policy's sys.path entry."""
JUDGE_PACKAGES = ("toolkit", "prompts")
"""judgegen's packages a judge may import: those the sandbox mounts for it
(`isolation.PROJECT_PACKAGES`; `generator` is not mounted), so a judge importing any other runs
the same in process and sandboxed: refused."""
PACKAGES_FOLDERS = ("site-packages", "dist-packages")


def importable_from_cwd() -> None:
    """Let modules of the working directory be imported, as `--backend` factories are."""
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))


def policy_sources(module_name: str, *, importing: bool = True) -> list[Path]:
    """The files (resolved, sorted) of the policy module `module_name` (as `load_policy` would
    import it, from the working directory too) and of the user's modules it runs; none when
    there is no module file. Its parent packages are imported, as `importlib.util.find_spec`
    does, unless not `importing`: the module is then found in its parents' folders as they
    are on disk (a package that edits its `__path__` when run may list otherwise); nothing
    else is imported."""
    if not module_name:
        return []
    importable_from_cwd()
    try:
        if importing:
            spec = importlib.util.find_spec(module_name)
        else:
            chain = list(_Finder().chain(module_name))
            spec = chain[-1] if len(chain) == module_name.count(".") + 1 else None
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.has_location or not spec.origin:
        return []
    policy = Path(spec.origin)
    walk = _Walk(_entry(spec.name, policy), module_name.partition(".")[0])
    walk.run(module_name)
    return sorted({policy.resolve(), *walk.files})


class _Walk:
    """Follows imports from a module through the user's modules found on `root`."""

    def __init__(self, root: Path, top: str) -> None:
        self.root = root.resolve()
        self.only = top if self.root.name in PACKAGES_FOLDERS else None
        self.finder = _Finder()
        self.sources: dict[str, Path | None] = {}
        self.read: set[str] = set()
        self.files: set[Path] = set()

    def run(self, module_name: str) -> None:
        """Read `module_name` and every user module it imports, transitively."""
        pending = [module_name]
        while pending:
            name = pending.pop()
            top = name.partition(".")[0]
            if top in TOOL_PACKAGES or (self.only is not None and top != self.only):
                continue
            for spec in self._chain(name):
                if spec.name not in self.read:
                    self.read.add(spec.name)
                    pending += self._read(spec)

    def _chain(self, name: str) -> list[ModuleSpec]:
        """The user's modules `import name` runs: each package on the way, then the module,
        stopping at the first that is not found or not the user's."""
        chain: list[ModuleSpec] = []
        for spec in self.finder.chain(name):
            if spec.origin is not None and spec.has_location:
                if self._source(spec) is None:
                    break  # the standard library's, an installed package's: not followed
                chain.append(spec)
        return chain

    def _source(self, spec: ModuleSpec) -> Path | None:
        """The Python source of `spec` if it is the user's (found on `root`), else None."""
        if spec.name not in self.sources:
            origin = Path(spec.origin or "")
            mine = origin.suffix == ".py" and _entry(spec.name, origin).resolve() == self.root
            self.sources[spec.name] = origin if mine else None
        return self.sources[spec.name]

    def _read(self, spec: ModuleSpec) -> list[str]:
        """Note the user's module `spec` and return the absolute names its source imports."""
        origin = self._source(spec)
        if origin is None:
            return []
        self.files.add(origin.resolve())
        try:
            tree = ast.parse(origin.read_bytes(), str(origin))
        except (OSError, SyntaxError, ValueError):
            return []  # its bytes are hashed; importing it fails anyway
        package = spec.name if origin.name == "__init__.py" else spec.name.rpartition(".")[0]
        return imported_names(tree, package)


class _Finder:
    """Finds modules as import would find them now, without importing anything."""

    def __init__(self, cwd: Path | None = None) -> None:
        self.cwd = cwd
        self.found: dict[str, ModuleSpec | None] = {}

    def chain(self, name: str) -> Iterator[ModuleSpec]:
        """The specs `import name` would load, each package on the way then the module, up to
        the first not found; a namespace package (no file) is one too, and may hold modules."""
        parts = name.split(".")
        parent: ModuleSpec | None = None
        for depth in range(1, len(parts) + 1):
            spec = self._find(".".join(parts[:depth]), parent)
            if spec is None:
                return
            yield spec
            parent = spec

    def _find(self, name: str, parent: ModuleSpec | None) -> ModuleSpec | None:
        """`name`'s spec as import would find it now: the loaded module's, else searched for
        on sys.path (top level, then in `cwd` when given) or in `parent`'s folders."""
        if name not in self.found:
            self.found[name] = self._search(name, parent)
        return self.found[name]

    def _search(self, name: str, parent: ModuleSpec | None) -> ModuleSpec | None:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return getattr(loaded, "__spec__", None)
        if parent is None:
            try:
                found = importlib.util.find_spec(name)  # top level: no parent to import
            except (ImportError, ValueError):
                return None
            if found is None and self.cwd is not None:
                found = PathFinder.find_spec(name, [str(self.cwd)])
            return found
        if parent.submodule_search_locations is None:
            return None  # `from module import name`: an attribute, not a module
        folders = list(parent.submodule_search_locations)
        try:
            return PathFinder.find_spec(name, folders)
        except KeyError:  # a namespace package whose parent is not imported
            return _namespace(name, folders)


def _namespace(name: str, folders: list[str]) -> ModuleSpec | None:
    """The spec of namespace package `name` in its parent's `folders`: the folders of its name
    there (None when there are none). The one import would make asks the imported parent
    for its folders, and raises KeyError while the parent is not imported, which nothing
    here does to the user's packages."""
    own = name.rpartition(".")[2]
    found = [str(Path(folder) / own) for folder in folders if (Path(folder) / own).is_dir()]
    if not found:
        return None
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = found
    return spec


def imported_names(tree: ast.AST, package: str) -> list[str]:
    """Absolute names of the modules the statements in `tree` may import, nested ones
    included, relative ones resolved against `package` (the module's `__package__`):
    `from a import b` gives `a` and `a.b`, which is a module only if there is one."""
    return [name for _, name in _imports(tree, package)]


def _imports(tree: ast.AST, package: str) -> Iterator[tuple[ast.stmt, str]]:
    """(statement, absolute name) of each module `imported_names` gives."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is not None:
                yield node, base
                yield from ((node, f"{base}.{a.name}") for a in node.names if a.name != "*")


@dataclass(frozen=True)
class UserImport:
    """A module of the user's that a judge imports: its name, the import's line, its file."""

    name: str
    line: int
    path: Path


def user_modules_imported(tree: ast.AST, cwd: Path | None = None) -> list[UserImport]:
    """The user's modules the statements in `tree` import (nested ones included; the module
    has no package, as a judge run from its source), by line: each found as import would
    find it now, else in `cwd` (where `--backend` factories are imported from), and neither
    judgegen's packages a judge may import (`JUDGE_PACKAGES`) nor on the standard library's or
    an installed package's path (`_library_entry`); judgegen's other packages (`generator`,
    which the sandbox does not mount) count as the user's wherever installed. Nothing is
    imported: a loaded module's spec is its own.

    Not seen: a module imported by a name computed at run time
    (`importlib.import_module(name)`, `__import__(name)`); JG003 lints those calls."""
    finder = _Finder(cwd)
    roots = _library_roots()
    found: dict[str, UserImport] = {}
    for node, name in _imports(tree, ""):
        top = name.partition(".")[0]
        if top in JUDGE_PACKAGES:
            continue
        for spec in finder.chain(name):
            if spec.origin is None or not spec.has_location:
                continue  # a namespace package (it may hold the user's modules), or built in
            origin = Path(spec.origin)
            if top in TOOL_PACKAGES or not _library_entry(_entry(spec.name, origin), roots):
                found.setdefault(spec.name, UserImport(spec.name, node.lineno, origin))
            break  # a library's package holds the library's modules
    return sorted(found.values(), key=lambda user: (user.line, user.name))


def _library_roots() -> list[Path]:
    """The standard library's folders and this interpreter's installed packages' folders."""
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return list(dict.fromkeys(Path(paths[key]).resolve() for key in keys if key in paths))


def _library_entry(entry: Path, roots: list[Path]) -> bool:
    """Whether sys.path entry `entry` holds the standard library's or installed packages'
    modules (in `roots`, or in a site-packages or dist-packages folder), not the user's."""
    entry = entry.resolve()
    if any(part in PACKAGES_FOLDERS for part in entry.parts):
        return True
    return any(entry == root or root in entry.parents for root in roots)


def _absolute(module: str | None, level: int, package: str) -> str | None:
    """The absolute name `from <level dots><module> import ...` names in `package`; None when
    the dots climb above the top-level package (import raises)."""
    if not level:
        return module
    parts = package.split(".") if package else []
    if len(parts) < level:
        return None
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, module] if module else base)


def _entry(name: str, origin: Path) -> Path:
    """The sys.path entry (or package root) module `name` at `origin` was found on."""
    depth = name.count(".") + (1 if origin.name == "__init__.py" else 0)
    return origin.parents[min(depth, len(origin.parents) - 1)]
