"""What changed between two versions of a judge module, insensitive to formatting.

Top-level functions and classes are compared by `ast.dump`, so reformatting is no change.
So are the module-level statements (imports, constants such as `TASK_ID`, `TASK_DESCRIPTION`
and `GROUND_TRUTH`, the module docstring), each named with its old and new text, and the
provenance header (`# judgegen-provenance: key=value` comments, read as `staleness` reads
them), field by field. Two modules whose parts are all equal but whose `ast.dump` still
differs (statements reordered, a definition repeated) are reported as such: "no change" means
the modules parse to the same tree and carry the same header.
`splice` keeps reviewed code byte-identical: it takes the old module and replaces only the
definitions that really changed, adding new ones and dropping removed ones.
"""

from __future__ import annotations

import ast
from typing import Literal

from pydantic import BaseModel, Field

from generator.stages.provenance import header_fields

CODEDIFF_VERSION = 2
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SHOWN = 72  # characters of an old or new value a text line shows


class HeaderChange(BaseModel):
    """One provenance header field that differs (None: the field is absent on that side)."""

    field: str
    old: str | None = None
    new: str | None = None

    def to_text(self) -> str:
        """`~ header spec_sha256: old -> new` (`+`/`-` for a field added or removed)."""
        if self.old is None:
            return f"+ header {self.field}: {self.new}"
        if self.new is None:
            return f"- header {self.field}: {self.old}"
        return f"~ header {self.field}: {self.old} -> {self.new}"


class StatementChange(BaseModel):
    """One module-level statement (not a definition) added, removed or changed.

    `name` is what the statement binds (`TASK_ID`; `a, b` for `a = b = …`), the import itself
    (`from toolkit import Evaluator`), `module docstring`, or the statement's first line; a
    name given twice gets ` (2)`. `old`/`new` are the statement's source (normalized).
    """

    name: str
    kind: Literal["added", "removed", "changed"]
    old: str | None = None
    new: str | None = None

    def to_text(self) -> str:
        """`+ import os`, `- LIMIT = 3`, or `~ GROUND_TRUTH: old value -> new value`."""
        if self.kind == "added":
            return "+ " + _clip(_one_line(self.new or ""))
        if self.kind == "removed":
            return "- " + _clip(_one_line(self.old or ""))
        old, new = _around_difference(_value(self.old or ""), _value(self.new or ""))
        return f"~ {self.name}: {old} -> {new}"


class FunctionDiff(BaseModel):
    """What differs between two module sources: top-level definitions, module-level
    statements, the provenance header, and the order of top-level statements."""

    version: int = CODEDIFF_VERSION
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    module_level_changed: bool = Field(
        default=False, description="The module-level statements (not definitions) differ."
    )
    module_level: list[StatementChange] = Field(
        default_factory=list, description="Each module-level statement added, removed, changed."
    )
    header: list[HeaderChange] = Field(
        default_factory=list, description="Provenance header fields that differ."
    )
    order_changed: bool = Field(
        default=False,
        description="Nothing above differs, yet the modules do: the same top-level statements "
        "in another order, or a definition repeated (what a name is bound to can change).",
    )

    @property
    def empty(self) -> bool:
        """True when the two modules parse to the same tree and carry the same header."""
        return not (
            self.added
            or self.removed
            or self.changed
            or self.module_level_changed
            or self.module_level
            or self.header
            or self.order_changed
        )

    def header_lines(self) -> list[str]:
        """One line per provenance header field that differs."""
        return [change.to_text() for change in self.header]

    def definition_lines(self) -> list[str]:
        """One line per top-level definition added, removed or changed."""
        lines = [f"+ def {name}" for name in self.added]
        lines += [f"- def {name}" for name in self.removed]
        return lines + [f"~ def {name}" for name in self.changed]

    def module_lines(self) -> list[str]:
        """One line per module-level statement added, removed or changed; then the order."""
        lines = [change.to_text() for change in self.module_level]
        if self.order_changed:
            lines.append(
                "~ top-level order: the same statements reordered or a definition repeated "
                "(what a name is bound to may differ; compare the files)"
            )
        return lines

    def to_text(self) -> str:
        """One line per change: header fields, definitions, module-level statements."""
        if self.empty:
            return "code: no changes\n"
        return "\n".join(self.header_lines() + self.definition_lines() + self.module_lines()) + "\n"

    def counts(self, kind: Literal["header", "module_level"]) -> tuple[int, int, int]:
        """(added, removed, changed) header fields or module-level statements."""
        if kind == "header":
            states = [
                "added" if c.old is None else "removed" if c.new is None else "changed"
                for c in self.header
            ]
        else:
            states = [c.kind for c in self.module_level]
        return states.count("added"), states.count("removed"), states.count("changed")


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    return {node.name: node for node in tree.body if isinstance(node, _DEFINITIONS)}


def _module_level(tree: ast.Module) -> list[str]:
    return [ast.dump(node) for node in tree.body if not isinstance(node, _DEFINITIONS)]


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _statement_name(node: ast.stmt, first: bool) -> str:
    if first and _is_docstring(node):
        return "module docstring"
    if isinstance(node, ast.Assign):
        return ", ".join(ast.unparse(target) for target in node.targets)
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return ast.unparse(node.target)
    lines = ast.unparse(node).splitlines() or [""]
    return _clip(lines[0])


def _statements(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Module-level statements by name: (ast.dump, normalized source), in module order."""
    named: dict[str, tuple[str, str]] = {}
    for index, node in enumerate(tree.body):
        if isinstance(node, _DEFINITIONS):
            continue
        base = name = _statement_name(node, index == 0)
        count = 1
        while name in named:
            count += 1
            name = f"{base} ({count})"
        named[name] = (ast.dump(node), ast.unparse(node))
    return named


def _statement_changes(old_tree: ast.Module, new_tree: ast.Module) -> list[StatementChange]:
    old, new = _statements(old_tree), _statements(new_tree)
    changes = [
        StatementChange(name=name, kind="removed", old=old[name][1])
        for name in old
        if name not in new
    ]
    for name, (dump, source) in new.items():
        if name not in old:
            changes.append(StatementChange(name=name, kind="added", new=source))
        elif old[name][0] != dump:
            changes.append(StatementChange(name=name, kind="changed", old=old[name][1], new=source))
    return changes


def _header_changes(old_source: str, new_source: str) -> list[HeaderChange]:
    old, new = header_fields(old_source), header_fields(new_source)
    fields = list(old) + [key for key in new if key not in old]
    return [
        HeaderChange(field=key, old=old.get(key), new=new.get(key))
        for key in fields
        if old.get(key) != new.get(key)
    ]


def _one_line(text: str) -> str:
    return text.replace("\n", "\\n")


def _clip(text: str, start: int = 0) -> str:
    shown = text[start : start + _SHOWN]
    return ("…" if start else "") + shown + ("…" if len(text) > start + _SHOWN else "")


def _value(statement: str) -> str:
    """What an assignment assigns (the whole statement otherwise), on one line."""
    try:
        node = ast.parse(statement).body[0]
    except (SyntaxError, IndexError):
        return _one_line(statement)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
        return _one_line(ast.unparse(node.value))
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return _one_line(repr(node.value.value))
    return _one_line(statement)


def _around_difference(old: str, new: str) -> tuple[str, str]:
    """Both texts clipped to a window starting a little before their first difference, so a
    long value (a task description, the ground truth) shows where it changed."""
    common = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        common += 1
    start = max(0, common - 24)
    return _clip(old, start), _clip(new, start)


def diff_functions(old_source: str, new_source: str) -> FunctionDiff:
    """What differs between two module sources, ignoring formatting and comments other than
    the provenance header."""
    old_tree, new_tree = ast.parse(old_source), ast.parse(new_source)
    old_defs, new_defs = _definitions(old_tree), _definitions(new_tree)
    diff = FunctionDiff(
        added=[name for name in new_defs if name not in old_defs],
        removed=[name for name in old_defs if name not in new_defs],
        changed=[
            name
            for name, node in new_defs.items()
            if name in old_defs and ast.dump(node) != ast.dump(old_defs[name])
        ],
        module_level_changed=_module_level(old_tree) != _module_level(new_tree),
        module_level=_statement_changes(old_tree, new_tree),
        header=_header_changes(old_source, new_source),
    )
    itemized = diff.added or diff.removed or diff.changed or diff.module_level
    diff.order_changed = not itemized and ast.dump(old_tree) != ast.dump(new_tree)
    return diff


def _span(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    return start, node.end_lineno or node.lineno


def splice(old_source: str, new_source: str) -> str:
    """`new_source`'s behaviour with `old_source`'s text wherever a definition is unchanged.

    Module-level statements are taken from the new source only when they changed; changed
    definitions replace the old ones in place; new definitions are appended in new order.
    When that would put the top-level statements in another order than the new source's (a
    new definition placed before others, definitions moved), the new source's layout is kept
    with the unchanged definitions' old text, as when module-level statements changed.
    """
    diff = diff_functions(old_source, new_source)
    if diff.module_level_changed:
        return _keep_unchanged(new_source, old_source, diff)
    spliced = _apply_changes(old_source, new_source, diff)
    if diff_functions(spliced, new_source).order_changed:
        return _keep_unchanged(new_source, old_source, diff)
    return spliced


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
