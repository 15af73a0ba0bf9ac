"""The import graph of the project's own modules: no cycles, and the layers point one way.

Read statically from every module's `import` statements (nested and TYPE_CHECKING ones
included), so a cycle hidden behind a lazy import still counts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = ("prompts", "toolkit", "generator")


@cache
def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the three packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _owner(name: str) -> str | None:
    """The project module `name` refers to (itself, or the nearest package holding it)."""
    modules = project_modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """The project modules `module` imports."""
    path = project_modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(_owner(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in project_modules() else _owner(base))
    found.discard(None)
    found.discard(module)
    return {name for name in found if name is not None}


@cache
def graph() -> dict[str, frozenset[str]]:
    return {module: frozenset(imports_of(module)) for module in project_modules()}


def cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert cycles() == []


@pytest.mark.parametrize(
    ("lower", "higher"),
    [("toolkit", "generator"), ("prompts", "toolkit"), ("prompts", "generator")],
)
def test_lower_layers_never_import_higher_ones(lower: str, higher: str) -> None:
    offenders = {
        module: sorted(name for name in imports if name.split(".")[0] == higher)
        for module, imports in graph().items()
        if module.split(".")[0] == lower
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_the_graph_sees_lazy_imports() -> None:
    assert "generator.cli.common" in graph()["generator.cli.tree"]
    assert any(name.startswith("toolkit.") for name in graph()["generator.cli.run"])


def test_every_module_imports_on_its_own_in_a_fresh_interpreter() -> None:
    script = (
        "import importlib, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] in "
        f"{PACKAGES!r}]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(failed))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *project_modules()],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
