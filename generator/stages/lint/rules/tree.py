"""Rules on the rubric tree a judge builds: leaves, ids and critical flags."""

from __future__ import annotations

import libcst as cst

from generator.stages.lint.context import LintContext, ScopeFacts
from generator.stages.lint.rule import Rule, ScopeRule
from generator.stages.lint.syntax import (
    EVALUATOR_BUILDERS,
    PARENT_BUILDERS,
    bool_value,
    call_arg,
    evaluator_call,
    has_keyword,
    method_name,
    string_value,
)

STABLE_ID_CALLS = frozenset({"str", "int", "len"})
RESERVED_IDS = frozenset({"root"})


def _verify_node_name(call: cst.Call) -> str | None:
    node = call_arg(call, "node")
    return node.value if isinstance(node, cst.Name) else None


def _scope_calls(ctx: LintContext, facts: ScopeFacts, method: str) -> list[cst.Call]:
    """Calls of Evaluator `method` in this scope's own code (nested functions excluded)."""
    return [c for c in facts.calls if method_name(c) == method and ctx.scope_of(c) is facts]


def _bound_from(facts: ScopeFacts, name: str, methods: frozenset[str]) -> bool:
    """True when every binding of `name` in this scope is a call to one of `methods`."""
    values = facts.values_of(name)
    return bool(values) and all(evaluator_call(v, methods) is not None for v in values)


class LeafNeverDecided(ScopeRule):
    """JG004: an undecided leaf stays `initialized` with score 0 and drags its parent down."""

    id = "JG004"
    name = "leaf-never-decided"
    title = "Leaf created but never verified"
    message = (
        "Every `ev.add_leaf(...)` must be decided exactly once: keep the returned node and pass "
        "it as `node=` to `await ev.verify(...)` (or in an `ev.batch_verify` tuple). A leaf "
        "never verified keeps score 0 and silently fails its parent. For a check done in "
        "Python use `ev.add_custom_node(result=..., ...)` instead of a leaf."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    ev.add_leaf(id="price_ok", desc="The price is correct", critical=True)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="price_ok", desc="The price is correct", critical=True)
    await ev.verify(claim="The price is $10", node=leaf, sources=None)
"""

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) == "add_leaf" and isinstance(self.ctx.parent(node), cst.Expr):
            self.report(
                node, "The leaf returned by `add_leaf` is discarded, so it is never verified."
            )

    def _settle(self, facts: ScopeFacts) -> None:
        for name, bindings in facts.bindings.items():
            if facts.loads.get(name):
                continue
            for binding in bindings:
                call = evaluator_call(binding.value, frozenset({"add_leaf"}))
                if call is not None:
                    self.report(call, f"Leaf `{name}` is created but never verified or used.")


class LeafDecidedTwice(ScopeRule):
    """JG005: a second verification overwrites the first verdict and doubles the cost."""

    id = "JG005"
    name = "leaf-decided-twice"
    title = "Leaf verified more than once"
    message = (
        "A leaf takes exactly one verdict: a second `ev.verify` on the same node overwrites "
        "the first and costs another round of LLM calls, and verifying inside a loop over "
        "sources or retries re-decides it each time. Give each claim its own leaf, pass all "
        "candidate URLs at once (`sources=[url1, url2]` passes if any supports the claim), and "
        "never retry: `verify` already takes a majority vote."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="price_ok", desc="The price is supported")
    for url in ["https://a.example", "https://b.example"]:
        await ev.verify(claim="The price is $10", node=leaf, sources=url)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="price_ok", desc="The price is supported")
    urls = ["https://a.example", "https://b.example"]
    await ev.verify(claim="The price is $10", node=leaf, sources=urls)
"""

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "batch_verify" or not node.args:
            return
        items = node.args[0].value
        if not isinstance(items, cst.List | cst.Tuple):
            return
        seen: set[str] = set()
        for element in items.elements:
            entry = element.value
            if not isinstance(entry, cst.Tuple) or len(entry.elements) < 3:
                continue
            target = entry.elements[2].value
            if isinstance(target, cst.Name):
                if target.value in seen:
                    self.report(entry, f"Leaf `{target.value}` appears twice in one batch.")
                seen.add(target.value)

    def _settle(self, facts: ScopeFacts) -> None:
        calls = _scope_calls(self.ctx, facts, "verify")
        flagged: set[cst.Call] = set()
        for call in calls:
            name = _verify_node_name(call)
            if name is None:
                continue
            loops = self.ctx.loops_around(call)
            if loops and not self._bound_inside(facts, name, loops[0]):
                self.report(call, f"Leaf `{name}` is verified again on every loop iteration.")
                flagged.add(call)
        for first in calls:
            name = _verify_node_name(first)
            for later in calls:
                if name is None or later in flagged or _verify_node_name(later) != name:
                    continue
                if self._straight_line(facts, name, first, later):
                    self.report(
                        later, f"Leaf `{name}` was already verified on line {{line}}.", first
                    )
                    flagged.add(later)

    def _bound_inside(self, facts: ScopeFacts, name: str, loop: cst.CSTNode) -> bool:
        return any(
            any(a is loop for a, _ in self.ctx.ancestors(b.name))
            for b in facts.bindings.get(name, [])
        )

    def _straight_line(
        self, facts: ScopeFacts, name: str, first: cst.Call, later: cst.Call
    ) -> bool:
        """`later` runs after `first` whenever `first` runs, with `name` not rebound between."""
        if not self.ctx.before(first, later):
            return False
        statement, block = self._statement_in_block(first)
        if block is None or not any(a is block for a, _ in self.ctx.ancestors(later)):
            return False
        if any(a is statement for a, _ in self.ctx.ancestors(later)):
            return False
        return not any(
            self.ctx.before(first, b.name) and self.ctx.before(b.name, later)
            for b in facts.bindings.get(name, [])
        )

    def _statement_in_block(
        self, node: cst.CSTNode
    ) -> tuple[cst.CSTNode | None, cst.CSTNode | None]:
        """The statement holding `node` directly (not nested in a compound), and its block."""
        for ancestor, child in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.IndentedBlock | cst.Module):
                return child, ancestor
            if isinstance(ancestor, cst.BaseCompoundStatement):
                return None, None
        return None, None


def _stable_id(expr: cst.BaseExpression) -> bool:
    """Ids built only from literals, plain variables and integer arithmetic are stable."""
    if isinstance(expr, cst.SimpleString | cst.ConcatenatedString | cst.Integer | cst.Name):
        return True
    if isinstance(expr, cst.FormattedString):
        return all(
            _stable_id(part.expression)
            for part in expr.parts
            if isinstance(part, cst.FormattedStringExpression)
        )
    if isinstance(expr, cst.Attribute):
        return _stable_id(expr.value)
    if isinstance(expr, cst.Subscript):
        indexes = [s.slice for s in expr.slice]
        return _stable_id(expr.value) and all(
            isinstance(i, cst.Index) and _stable_id(i.value) for i in indexes
        )
    if isinstance(expr, cst.BinaryOperation):
        return _stable_id(expr.left) and _stable_id(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _stable_id(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return expr.func.value in STABLE_ID_CALLS and all(_stable_id(a.value) for a in expr.args)
    return False


def _id_names(node: cst.CSTNode) -> set[str]:
    """Variable names an id expression reads."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.Attribute):
        return _id_names(node.value)
    names: set[str] = set()
    for child in node.children:
        names |= _id_names(child)
    return names


class UnstableNodeId(Rule):
    """JG006: ids name rubric items in reviews, diffs and labels; they must be unique and stable.

    Decision: an id may be a literal, a plain variable (e.g. a helper's `node_id` parameter),
    or an f-string/concatenation of literals, variables, attributes, constant subscripts,
    integer arithmetic and str/int/len. Those are deterministic for a given answer. Any
    other call is rejected: that is where uuid, hash(), id(), clocks and unbounded answer
    text slip in. Inside a loop, an f-string id must read a variable bound in that loop.
    Literal collisions are errors unless the two calls sit in different branches of one
    if/elif/else or match.
    """

    id = "JG006"
    name = "unstable-node-id"
    title = "Node id missing, computed, reserved or colliding"
    message = (
        "Node ids identify rubric items across runs, reviews, diffs and human labels. Give every "
        "node an explicit `id=`: a unique string literal, or an f-string whose placeholders are "
        'plain variables or loop indices (`f"item_{i}_price"`). No function calls in ids '
        '(only str/int/len), no `"root"`, and never the same literal twice (except in the '
        "two branches of one if/else): a repeated id is silently renamed `id_1`, `id_2`. "
        "Inside a loop or a helper called several times, include the loop index in the id."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    for index, url in enumerate(URLS):
        ev.add_custom_node(result=bool(url), id="url_given", desc="A URL is given")
    ev.add_custom_node(result=bool(URLS), id=str(uuid.uuid4()), desc="URLs are given")
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    for index, url in enumerate(URLS):
        ev.add_custom_node(result=bool(url), id=f"url_{index}_given", desc="A URL is given")
    ev.add_custom_node(result=bool(URLS), id="urls_given", desc="URLs are given")
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._literals: list[tuple[str, cst.Call]] = []
        self._templates: list[tuple[cst.Call, cst.FormattedString]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) not in EVALUATOR_BUILDERS:
            return
        expr = call_arg(node, "id")
        if expr is None:
            if not has_keyword(node, "id"):
                self.report(node, "The node has no `id=`.")
            return
        literal = string_value(expr)
        if literal is not None:
            self._check_literal(node, literal)
        elif not _stable_id(expr):
            self.report(expr, "The id is computed by a call; build it from literals and indices.")
        elif isinstance(expr, cst.FormattedString):
            self._templates.append((node, expr))

    def _check_literal(self, node: cst.Call, literal: str) -> None:
        if literal in RESERVED_IDS:
            self.report(node, f'The id "{literal}" is reserved for the root.')
        else:
            loops = self.ctx.loops_around(node)
            if loops and not self._conditional(node, loops[0]):
                self.report(node, f'The literal id "{literal}" repeats on every loop iteration.')
            self._literals.append((literal, node))

    def _conditional(self, node: cst.CSTNode, stop: cst.CSTNode) -> bool:
        """True when `node` sits in a branch of an if/match below `stop` (e.g. `if i == 0:`)."""
        for ancestor, child in self.ctx.ancestors(node):
            if ancestor is stop:
                return False
            if isinstance(ancestor, cst.If | cst.IfExp) and child is not ancestor.test:
                return True
            if isinstance(ancestor, cst.Match):
                return True
        return False

    def leave_Module(self, original_node: cst.Module) -> None:
        self._check_literal_collisions()
        self._check_helper_literals(original_node)
        self._check_templates()

    def _check_literal_collisions(self) -> None:
        for index, (literal, call) in enumerate(self._literals):
            for other, earlier in self._literals[:index]:
                if other == literal and not self.ctx.exclusive(call, earlier):
                    self.report(
                        call, f'The id "{literal}" is already used on line {{line}}.', earlier
                    )
                    break

    def _check_helper_literals(self, module: cst.Module) -> None:
        helpers = {
            s.name.value: s
            for s in module.body
            if isinstance(s, cst.FunctionDef)
            and s.name.value not in ("evaluate", "evaluate_answer")
        }
        uses: dict[str, list[cst.Call]] = {}
        for call in self.ctx.scopes[module].calls:
            if isinstance(call.func, cst.Name) and call.func.value in helpers:
                uses.setdefault(call.func.value, []).append(call)
        for literal, call in self._literals:
            scope = self.ctx.scope_of(call).node
            if not isinstance(scope, cst.FunctionDef) or scope.name.value not in helpers:
                continue
            sites = uses.get(scope.name.value, [])
            if self._conditional(call, scope) or self.ctx.loops_around(call):
                continue
            if len(sites) > 1 or any(self.ctx.loops_around(site) for site in sites):
                self.report(
                    call,
                    f'The literal id "{literal}" is in `{scope.name.value}`, which runs more '
                    "than once; put a parameter (index or prefix) in the id.",
                )

    def _check_templates(self) -> None:
        for index, (call, template) in enumerate(self._templates):
            facts = self.ctx.scope_of(call)
            loops = self.ctx.loops_around(call)
            if loops and not self._varies_with(facts, template, loops[0]):
                self.report(template, "The id does not change between loop iterations.")
                continue
            code = self.ctx.module.code_for_node(template)
            for earlier, other in self._templates[:index]:
                if (
                    self.ctx.scope_of(earlier) is facts
                    and self.ctx.module.code_for_node(other) == code
                    and not self.ctx.exclusive(call, earlier)
                ):
                    self.report(template, "The same id template is used on line {line}.", earlier)
                    break

    def _varies_with(
        self, facts: ScopeFacts, template: cst.FormattedString, loop: cst.CSTNode
    ) -> bool:
        for name in _id_names(template):
            for binding in facts.bindings.get(name, []):
                if any(a is loop for a, _ in self.ctx.ancestors(binding.name)):
                    return True
        return False


class NonCriticalUnderCritical(ScopeRule):
    """JG007: a critical parent rejects non-critical children at run time (TreeError)."""

    id = "JG007"
    name = "noncritical-under-critical"
    title = "Non-critical child under a critical parent"
    message = (
        "A critical parent may only have critical children; adding a non-critical one raises "
        "TreeError and the judge crashes. `add_leaf`, `add_parallel` and `add_sequential` "
        "default to `critical=False`, `add_custom_node` to True. Either pass `critical=True` "
        "to every child of a critical parent, or make the parent non-critical and use "
        "critical children as gates inside it."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    core = ev.add_parallel(id="core", desc="Core facts", critical=True)
    leaf = ev.add_leaf(id="name_ok", desc="The name is right", parent=core)
    await ev.verify(claim="The name is Ada", node=leaf)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    core = ev.add_parallel(id="core", desc="Core facts", critical=True)
    leaf = ev.add_leaf(id="name_ok", desc="The name is right", parent=core, critical=True)
    await ev.verify(claim="The name is Ada", node=leaf)
"""

    def _settle(self, facts: ScopeFacts) -> None:
        critical = {
            name
            for name in facts.bindings
            if _bound_from(facts, name, PARENT_BUILDERS)
            and all(_critical_flag(v) is True for v in facts.values_of(name))
        }
        for call in facts.calls:
            method = method_name(call)
            if method not in EVALUATOR_BUILDERS or self.ctx.scope_of(call) is not facts:
                continue
            parent = call_arg(call, "parent")
            if not isinstance(parent, cst.Name) or parent.value not in critical:
                continue
            flag = call_arg(call, "critical")
            default = method == "add_custom_node" or has_keyword(call, "critical")
            if bool_value(flag) is False or (flag is None and not default):
                self.report(call, f"`{parent.value}` is critical but this child is not.")


def _critical_flag(value: cst.BaseExpression | None) -> bool | None:
    """The literal `critical=` of the Evaluator builder call in `value`, if any."""
    call = evaluator_call(value, PARENT_BUILDERS)
    return None if call is None else bool_value(call_arg(call, "critical"))


class VerifyNonLeaf(ScopeRule):
    """JG015: `verify` decides leaves; parents aggregate, custom nodes are already decided."""

    id = "JG015"
    name = "verify-non-leaf"
    title = "verify() on a parent or custom node"
    message = (
        "`ev.verify(node=...)` decides a leaf made by `ev.add_leaf`. A parent "
        "(`add_parallel`/`add_sequential`) takes its score from its children, so a verdict "
        "written to it is overwritten; a custom node (`add_custom_node`) is decided by its "
        "`result=` at creation. Create a leaf under the parent and verify that leaf."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    section = ev.add_parallel(id="section", desc="The section is right")
    await ev.verify(claim="The section is about pricing", node=section)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    section = ev.add_parallel(id="section", desc="The section is right")
    leaf = ev.add_leaf(id="section_topic", desc="About pricing", parent=section)
    await ev.verify(claim="The section is about pricing", node=leaf)
"""

    def _settle(self, facts: ScopeFacts) -> None:
        for call in _scope_calls(self.ctx, facts, "verify"):
            name = _verify_node_name(call)
            if name is None:
                continue
            if _bound_from(facts, name, PARENT_BUILDERS):
                self.report(call, f"`{name}` is a parent node; verify a leaf under it instead.")
            elif _bound_from(facts, name, frozenset({"add_custom_node"})):
                self.report(call, f"`{name}` is a custom node, already decided by its result.")
