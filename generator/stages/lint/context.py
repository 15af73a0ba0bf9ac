"""Per-file facts every rule shares, built during the single batched traversal.

`LintContext` is created for one module, resolves positions once, and is fed every node by the
`before_visit`/`after_leave` hooks of `MetadataWrapper.visit_batched`: it keeps the ancestor
stack, a parent map, the import map, and per-scope facts (bindings, loads, calls). Rules read
it; when a rule's `leave_FunctionDef`/`leave_Module` runs, that scope's facts are complete.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import cast

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from generator.stages.lint.models import Finding
from generator.stages.lint.syntax import dotted

MAX_SNIPPET_LINES = 5
LOOP_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
ScopeNode = cst.Module | cst.FunctionDef


@dataclass
class Binding:
    """One place a name gets a value; `value` is the assigned expression when there is one."""

    name: cst.Name
    value: cst.BaseExpression | None


@dataclass
class ScopeFacts:
    """What happens inside one function (nested code included) or at module level."""

    node: ScopeNode
    is_async: bool
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    loads: dict[str, list[cst.Name]] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)

    def values_of(self, name: str) -> list[cst.BaseExpression | None]:
        """Every value `name` is bound to in this scope (None for params, loop targets...)."""
        return [b.value for b in self.bindings.get(name, [])]


@dataclass
class ModelInfo:
    """A pydantic template class defined in the judge: field name → may the field be None."""

    name: str
    nullable: dict[str, bool]
    annotations: dict[str, cst.BaseExpression]

    def item_model(self, field_name: str) -> str | None:
        """For a `list[Item]`-like field: the element class name, else None."""
        annotation = self.annotations.get(field_name)
        if isinstance(annotation, cst.Subscript) and len(annotation.slice) == 1:
            index = annotation.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Name):
                return index.value.value
        return None


def _module_models(module: cst.Module) -> dict[str, ModelInfo]:
    models: dict[str, ModelInfo] = {}
    for statement in module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        nullable: dict[str, bool] = {}
        annotations: dict[str, cst.BaseExpression] = {}
        for line in statement.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    nullable[small.target.value] = _may_be_none(small.value)
                    annotations[small.target.value] = small.annotation.annotation
        models[statement.name.value] = ModelInfo(statement.name.value, nullable, annotations)
    return models


def _may_be_none(default: cst.BaseExpression | None) -> bool:
    """A missing field becomes None unless its default is a concrete value or a factory."""
    if default is None or (isinstance(default, cst.Name) and default.value == "None"):
        return True
    if isinstance(default, cst.Call) and dotted(default.func) in ("Field", "pydantic.Field"):
        for arg in default.args:
            if arg.keyword is None or arg.keyword.value == "default":
                return _may_be_none(arg.value)
            if arg.keyword.value == "default_factory":
                return False
        return True
    return False


class LintContext:
    """Shared per-file state: positions, parents, imports, scopes and the findings list."""

    def __init__(self, wrapper: MetadataWrapper, source: str) -> None:
        self.wrapper = wrapper
        self.module = wrapper.module
        self.lines = source.splitlines()
        self.models = _module_models(self.module)
        self.imports: dict[str, str] = {}
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {}
        self.scopes: dict[cst.CSTNode, ScopeFacts] = {}
        self._reports: list[_Report] = []
        self._stack: list[cst.CSTNode] = []
        self._scope_stack: list[ScopeFacts] = []

    # -- traversal hooks ---------------------------------------------------------------------

    def before_visit(self, node: cst.CSTNode) -> None:
        """Record `node` (parent, scope, binding/load, call, import) before rules see it."""
        stack = self._stack
        if stack:
            self.parents[node] = stack[-1]
        self.order[node] = len(self.order)
        # Exact type checks: libcst nodes are ABCs, and isinstance on them is slow.
        kind = type(node)
        if kind is cst.Name:
            self._classify_name(cast(cst.Name, node))
        elif kind is cst.Call:
            for scope in self._scope_stack:
                scope.calls.append(cast(cst.Call, node))
        elif kind is cst.Import or kind is cst.ImportFrom:
            self._record_import(cast(cst.Import | cst.ImportFrom, node))
        elif kind is cst.FunctionDef:
            function = cast(cst.FunctionDef, node)
            self._enter_scope(ScopeFacts(function, function.asynchronous is not None))
        elif kind is cst.Module:
            self._enter_scope(ScopeFacts(cast(cst.Module, node), False))
        stack.append(node)

    def _enter_scope(self, facts: ScopeFacts) -> None:
        self.scopes[facts.node] = facts
        self._scope_stack.append(facts)

    def after_leave(self, node: cst.CSTNode) -> None:
        """Pop `node` after every rule has left it."""
        self._stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.Module:
            self._scope_stack.pop()

    def _record_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name) or ""
                local = alias.evaluated_alias or full.split(".")[0]
                self.imports[local] = full if alias.asname else full.split(".")[0]
            return
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted(node.module) or ""
        for alias in node.names:
            name = dotted(alias.name) or ""
            self.imports[alias.evaluated_alias or name] = f"{base}.{name}"

    def _classify_name(self, name: cst.Name) -> None:
        parent = self._stack[-1] if self._stack else None
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            return
        if isinstance(parent, cst.Arg) and parent.keyword is name:
            return
        if isinstance(parent, cst.FunctionDef | cst.ClassDef | cst.ImportAlias):
            return
        if isinstance(parent, cst.Global | cst.Nonlocal | cst.NameItem):
            return
        if isinstance(parent, cst.Param):
            self._bind(name, None)
            return
        if isinstance(parent, cst.AsName):
            if not isinstance(self._stack[-2], cst.ImportAlias):
                self._bind(name, None)
            return
        kind, value = self._target_kind(name)
        if kind == "load":
            for scope in self._scope_stack:
                scope.loads.setdefault(name.value, []).append(name)
            return
        if kind == "augment":
            for scope in self._scope_stack:
                scope.loads.setdefault(name.value, []).append(name)
        self._bind(name, value)

    def _target_kind(self, name: cst.Name) -> tuple[str, cst.BaseExpression | None]:
        child: cst.CSTNode = name
        for ancestor in reversed(self._stack):
            if isinstance(ancestor, cst.Tuple | cst.List | cst.Element | cst.StarredElement):
                child = ancestor
                continue
            direct = child is name
            if isinstance(ancestor, cst.AssignTarget) and ancestor.target is child:
                assign = self._stack[self._stack.index(ancestor) - 1]
                value = assign.value if isinstance(assign, cst.Assign) and direct else None
                return "bind", value
            if isinstance(ancestor, cst.AnnAssign | cst.NamedExpr) and ancestor.target is child:
                return "bind", ancestor.value if direct else None
            if isinstance(ancestor, cst.AugAssign) and ancestor.target is child:
                return "augment", None
            if isinstance(ancestor, cst.For | cst.CompFor) and ancestor.target is child:
                return "bind", None
            return "load", None
        return "load", None

    def _bind(self, name: cst.Name, value: cst.BaseExpression | None) -> None:
        if self._scope_stack:
            self._scope_stack[-1].bindings.setdefault(name.value, []).append(Binding(name, value))

    # -- queries -----------------------------------------------------------------------------

    @property
    def current_scope(self) -> ScopeFacts:
        """The innermost function (or the module) being visited right now."""
        return self._scope_stack[-1]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node's parent (None for the module)."""
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
        """(ancestor, child on the way) pairs from the parent up to the module."""
        child = node
        parent = self.parents.get(child)
        while parent is not None:
            yield parent, child
            child, parent = parent, self.parents.get(parent)

    def scope_of(self, node: cst.CSTNode) -> ScopeFacts:
        """The innermost function (or module) containing `node`."""
        for ancestor, _ in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef | cst.Module):
                return self.scopes[ancestor]
        return self.scopes[self.module]

    def loops_around(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Loops (statements and comprehensions) whose repeated part contains `node`."""
        loops: list[cst.CSTNode] = []
        for ancestor, child in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef | cst.Module):
                break
            if isinstance(ancestor, cst.For | cst.While) and child is not getattr(
                ancestor, "iter", None
            ):
                if child is not ancestor.orelse:
                    loops.append(ancestor)
            elif isinstance(ancestor, LOOP_COMPREHENSIONS):
                outer = ancestor.for_in
                if child is not outer:
                    loops.append(ancestor)
            elif isinstance(ancestor, cst.CompFor) and child is not ancestor.iter:
                loops.append(ancestor)
        return loops

    def branches(self, node: cst.CSTNode) -> dict[cst.CSTNode, str]:
        """For each enclosing `if`/conditional expression/`match`: which branch holds `node`."""
        path: dict[cst.CSTNode, str] = {}
        for ancestor, child in self.ancestors(node):
            if isinstance(ancestor, cst.If | cst.IfExp):
                if child is ancestor.body:
                    path[ancestor] = "body"
                elif child is ancestor.orelse:
                    path[ancestor] = "orelse"
            elif isinstance(ancestor, cst.Match) and isinstance(child, cst.MatchCase):
                path[ancestor] = str(ancestor.cases.index(child))
        return path

    def exclusive(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """True when the two nodes sit in different branches of one conditional."""
        a, b = self.branches(first), self.branches(second)
        return any(key in b and b[key] != branch for key, branch in a.items())

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The imported dotted name `expr` refers to (aliases resolved), None if not imported."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head not in self.imports:
            return None
        full = self.imports[head]
        return f"{full}.{rest}" if rest else full

    def before(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """True when `first` starts before `second` in the source."""
        return self.order[first] < self.order[second]

    def report(
        self,
        rule: str,
        node: cst.CSTNode,
        message: str,
        guidance: str | None = None,
        related: cst.CSTNode | None = None,
    ) -> None:
        """Queue a finding at `node`; `{line}` in `message` becomes the line of `related`."""
        self._reports.append(_Report(rule, node, message, guidance, related))

    @property
    def findings(self) -> list[Finding]:
        """The queued reports as findings (positions are resolved only when there are some)."""
        if not self._reports:
            return []
        positions = self.wrapper.resolve(PositionProvider)
        return [self._finding(report, positions) for report in self._reports]

    def _finding(self, report: _Report, positions: Mapping[cst.CSTNode, CodeRange]) -> Finding:
        span = positions[report.node]
        start, end = span.start.line, max(span.end.line, span.start.line)
        message = report.message
        if report.related is not None:
            message = message.replace("{line}", str(positions[report.related].start.line))
        shown = self.lines[start - 1 : min(end, start + MAX_SNIPPET_LINES - 1)]
        return Finding(
            rule=report.rule,
            origin="judgegen",
            message=message,
            guidance=report.guidance,
            line=start,
            column=span.start.column + 1,
            end_line=end,
            snippet="\n".join(shown),
        )


@dataclass
class _Report:
    rule: str
    node: cst.CSTNode
    message: str
    guidance: str | None
    related: cst.CSTNode | None
