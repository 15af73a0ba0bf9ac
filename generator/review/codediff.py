"""Function-level comparison of two versions of a judge module, insensitive to formatting.

Top-level functions and classes are compared by `ast.dump`, so reformatting is no change.
`splice` keeps reviewed code byte-identical: it takes the old module and replaces only the
definitions that really changed, adding new ones and dropping removed ones.
"""

from __future__ import annotations

import ast

from pydantic import BaseModel, Field

CODEDIFF_VERSION = 1


class FunctionDiff(BaseModel):
    """Top-level definitions added, removed and changed between two module sources."""

    version: int = CODEDIFF_VERSION
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    module_level_changed: bool = False

    @property
    def empty(self) -> bool:
        """True when no definition and no module-level statement changed."""
        return not (self.added or self.removed or self.changed or self.module_level_changed)

    def to_text(self) -> str:
        """One line per changed definition."""
        if self.empty:
            return "code: no changes\n"
        lines = [f"+ def {name}" for name in self.added]
        lines += [f"- def {name}" for name in self.removed]
        lines += [f"~ def {name}" for name in self.changed]
        if self.module_level_changed:
            lines.append("~ module-level statements (imports, constants)")
        return "\n".join(lines) + "\n"


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name: node for node in tree.body if isinstance(node, kinds)}


def _module_level(tree: ast.Module) -> list[str]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [ast.dump(node) for node in tree.body if not isinstance(node, kinds)]


def diff_functions(old_source: str, new_source: str) -> FunctionDiff:
    """Which top-level definitions differ, ignoring formatting and comments."""
    old_tree, new_tree = ast.parse(old_source), ast.parse(new_source)
    old_defs, new_defs = _definitions(old_tree), _definitions(new_tree)
    return FunctionDiff(
        added=[name for name in new_defs if name not in old_defs],
        removed=[name for name in old_defs if name not in new_defs],
        changed=[
            name
            for name, node in new_defs.items()
            if name in old_defs and ast.dump(node) != ast.dump(old_defs[name])
        ],
        module_level_changed=_module_level(old_tree) != _module_level(new_tree),
    )


def _span(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    return start, node.end_lineno or node.lineno


def splice(old_source: str, new_source: str) -> str:
    """`new_source`'s behaviour with `old_source`'s text wherever a definition is unchanged.

    Module-level statements are taken from the new source only when they changed; changed
    definitions replace the old ones in place; new definitions are appended in new order.
    """
    diff = diff_functions(old_source, new_source)
    if diff.module_level_changed:
        base_source, base_is_new = new_source, True
    else:
        base_source, base_is_new = old_source, False
    if base_is_new:
        return _keep_unchanged(new_source, old_source, diff)
    return _apply_changes(base_source, new_source, diff)


def _apply_changes(old_source: str, new_source: str, diff: FunctionDiff) -> str:
    old_lines = old_source.splitlines(keepends=True)
    new_lines = new_source.splitlines(keepends=True)
    old_defs = _definitions(ast.parse(old_source))
    new_defs = _definitions(ast.parse(new_source))
    replacements: list[tuple[int, int, list[str]]] = []
    for name in diff.changed:
        start, end = _span(old_lines, old_defs[name])
        n_start, n_end = _span(new_lines, new_defs[name])
        replacements.append((start, end, new_lines[n_start:n_end]))
    for name in diff.removed:
        start, end = _span(old_lines, old_defs[name])
        replacements.append((start, end, []))
    for start, end, text in sorted(replacements, reverse=True):
        old_lines[start:end] = text
    for name in diff.added:
        n_start, n_end = _span(new_lines, new_defs[name])
        if old_lines and not old_lines[-1].endswith("\n"):
            old_lines[-1] += "\n"
        old_lines += ["\n", "\n", *new_lines[n_start:n_end]]
    return "".join(old_lines)


def _keep_unchanged(new_source: str, old_source: str, diff: FunctionDiff) -> str:
    new_lines = new_source.splitlines(keepends=True)
    old_lines = old_source.splitlines(keepends=True)
    old_defs = _definitions(ast.parse(old_source))
    new_defs = _definitions(ast.parse(new_source))
    unchanged = [n for n in new_defs if n in old_defs and n not in diff.changed]
    replacements = []
    for name in unchanged:
        start, end = _span(new_lines, new_defs[name])
        o_start, o_end = _span(old_lines, old_defs[name])
        replacements.append((start, end, old_lines[o_start:o_end]))
    for start, end, text in sorted(replacements, reverse=True):
        new_lines[start:end] = text
    return "".join(new_lines)
