"""Rules on the data a judge reads: ground truth, extractions and what goes into claims."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from generator.stages.lint.context import LintContext, ScopeFacts
from generator.stages.lint.rule import Rule, ScopeRule
from generator.stages.lint.syntax import (
    EVALUATOR_BUILDERS,
    call_arg,
    dotted,
    evaluator_call,
    method_name,
    string_value,
)

EXTRACT = frozenset({"extract"})
GATE_CONTAINERS = (
    cst.If,
    cst.While,
    cst.IfExp,
    cst.Assert,
    cst.BooleanOperation,
    cst.Comparison,
    cst.CompIf,
    cst.UnaryOperation,
)
GATE_CALLS = frozenset({"bool", "len", "any", "all", "isinstance"})


class GroundTruthUnused(Rule):
    """JG009: ground truth that no check reads is a rubric requirement silently dropped."""

    id = "JG009"
    name = "ground-truth-unused"
    title = "GROUND_TRUTH (or one of its keys) never used"
    message = (
        "`GROUND_TRUTH` holds the facts the answer must match; a key no check reads is a "
        "requirement the judge forgot. Use every key in a claim, a custom check or an "
        "instruction (e.g. `claim=f\"The CEO is {GROUND_TRUTH['ceo']}\"`), or delete the key "
        "if the task does not need it."
    )
    bad = """
GROUND_TRUTH = {"ceo": "Ada Lovelace", "founded": "1843"}

async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="ceo", desc="The CEO is right")
    await ev.verify(claim=f"The CEO is {GROUND_TRUTH['ceo']}", node=leaf)
"""
    good = """
GROUND_TRUTH = {"ceo": "Ada Lovelace", "founded": "1843"}

async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="ceo", desc="The CEO is right")
    await ev.verify(claim=f"The CEO is {GROUND_TRUTH['ceo']}", node=leaf)
    year = ev.add_leaf(id="founded", desc="The founding year is right")
    await ev.verify(claim=f"It was founded in {GROUND_TRUTH['founded']}", node=year)
"""

    def leave_Module(self, original_node: cst.Module) -> None:
        facts = self.ctx.scopes[original_node]
        bindings = facts.bindings.get("GROUND_TRUTH", [])
        if not bindings:
            return
        loads = facts.loads.get("GROUND_TRUTH", [])
        if not loads:
            self.report(bindings[-1].name, "`GROUND_TRUTH` is defined but no check uses it.")
            return
        value = bindings[-1].value
        if not isinstance(value, cst.Dict) or len(bindings) > 1:
            return
        used = self._keys_read(loads, depth=0)
        if used is None:
            return
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                key = string_value(element.key)
                if key is not None and key not in used:
                    self.report(element, f"`GROUND_TRUTH['{key}']` is never used.")

    def _keys_read(self, loads: list[cst.Name], depth: int) -> set[str] | None:
        """Keys read at `loads`, following `gt = GROUND_TRUTH` aliases; None if not all known."""
        used: set[str] = set()
        for load in loads:
            key = self._key_read(load)
            alias = self._alias(load) if key is None and depth < 2 else None
            if alias is not None:
                name, scope = alias
                keys = self._keys_read(scope.loads.get(name, []), depth + 1)
                if keys is None:
                    return None
                used |= keys
            elif key is None:
                return None
            else:
                used.add(key)
        return used

    def _alias(self, load: cst.Name) -> tuple[str, ScopeFacts] | None:
        """(name, scope) when `load` is the whole value of `name = GROUND_TRUTH`."""
        target = self.ctx.parent(load)
        if not isinstance(target, cst.Assign) or len(target.targets) != 1:
            return None
        name = target.targets[0].target
        if not isinstance(name, cst.Name):
            return None
        return name.value, self.ctx.scope_of(load)

    def _key_read(self, load: cst.Name) -> str | None:
        """The constant key read at this use (`GT["k"]`, `GT.get("k")`), None otherwise."""
        parent = self.ctx.parent(load)
        if isinstance(parent, cst.Subscript) and parent.value is load and len(parent.slice) == 1:
            index = parent.slice[0].slice
            return string_value(index.value) if isinstance(index, cst.Index) else None
        if isinstance(parent, cst.Attribute) and parent.attr.value == "get":
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and call.args:
                return string_value(call.args[0].value)
        return None


@dataclass
class _Extraction:
    """A variable holding an extraction result (or an item of one) and its template class."""

    name: str
    model: str | None
    origin: cst.CSTNode


class UnguardedNoneInClaim(Rule):
    """JG010: a missing field renders as the text "None" and a page is asked to support it."""

    id = "JG010"
    name = "unguarded-none-in-claim"
    title = "Extracted field in a sourced claim or a description without any existence check"
    message = (
        'A field the answer lacks is None, and `f"... {info.price}"` then asks the page to '
        'support the literal text "None": a wasted page verification and a verdict about '
        "nonsense. Gate extracted objects before verifying them against sources: "
        "`ev.add_custom_node(result=bool(info.price and info.url), id=..., desc=..., "
        "parent=...)` as a critical sibling (the verification is then skipped when data is "
        "missing), or an `if info.price:` around it. The same holds for a node's `desc=`: "
        'the reviewer would read "The price None is right". Heuristic, to stay quiet on '
        "good judges: only claims verified with `sources=` and node descriptions are checked "
        "(a plain comparison claim fails on 'None' as it should), and the object counts as "
        "gated when any of its fields appears in an earlier condition, boolean expression or "
        "`result=`."
    )
    bad = """
class Price(BaseModel):
    amount: str | None = None
    url: str | None = None

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    leaf = ev.add_leaf(id="price_ok", desc="The page shows the price", critical=True)
    await ev.verify(claim=f"The price is {info.amount}", node=leaf, sources=info.url)
"""
    good = """
class Price(BaseModel):
    amount: str | None = None
    url: str | None = None

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    ev.add_custom_node(result=bool(info.amount and info.url), id="price_given", desc="Given")
    leaf = ev.add_leaf(id="price_ok", desc="The page shows the price", critical=True)
    await ev.verify(claim=f"The price is {info.amount}", node=leaf, sources=info.url)
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._gates: dict[cst.CSTNode, list[tuple[str, cst.Attribute]]] = {}
        self._suspects: list[tuple[str, cst.FormattedStringExpression, cst.Call, _Extraction]] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        name = dotted(node)
        if name is None or not self._in_gate(node):
            return
        scope = self.ctx.current_scope.node
        self._gates.setdefault(scope, []).append((name, node))

    def _in_gate(self, node: cst.CSTNode) -> bool:
        for ancestor, child in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.BaseStatement | cst.FormattedStringExpression):
                return isinstance(ancestor, cst.If | cst.While) and child is ancestor.test
            if isinstance(ancestor, GATE_CONTAINERS):
                if isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
                    continue
                return True
            keyword = ancestor.keyword if isinstance(ancestor, cst.Arg) else None
            if keyword is not None and keyword.value == "result":
                return True
            if isinstance(ancestor, cst.Call) and dotted(ancestor.func) in GATE_CALLS:
                return True
        return False

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        facts = self.ctx.scopes[original_node]
        extractions = _extractions(self.ctx, facts, original_node)
        if not extractions:
            return
        for call in facts.calls:
            if self.ctx.scope_of(call) is not facts:
                continue
            for template in self._texts(facts, call):
                for part in template.parts:
                    if not isinstance(part, cst.FormattedStringExpression):
                        continue
                    field = self._nullable_field(part.expression, extractions)
                    if field is not None:
                        root = field.split(".")[0]
                        self._suspects.append((field, part, call, extractions[root]))

    def leave_Module(self, original_node: cst.Module) -> None:
        for field, part, call, extraction in self._suspects:
            if not self._gated(extraction, call):
                self.report(
                    part,
                    f"`{field}` may be None here, and nothing checks `{extraction.name}` "
                    "before it goes into this claim or description (it would read 'None').",
                )

    def _gated(self, extraction: _Extraction, call: cst.Call) -> bool:
        if isinstance(extraction.origin, cst.Param):
            fields = set(self.ctx.models[extraction.model or ""].nullable)
            return any(
                len(parts := name.split(".")) > 1 and parts[1] in fields
                for gates in self._gates.values()
                for name, _ in gates
            )
        scope = self.ctx.scope_of(call).node
        prefix = extraction.name + "."
        return any(
            (name == extraction.name or name.startswith(prefix)) and self.ctx.before(gate, call)
            for name, gate in self._gates.get(scope, [])
        )

    def _texts(self, facts: ScopeFacts, call: cst.Call) -> list[cst.FormattedString]:
        method = method_name(call)
        claims: list[cst.BaseExpression | None] = []
        if method == "verify" and _has_sources(call_arg(call, "sources")):
            claims = [call_arg(call, "claim")]
        elif method in EVALUATOR_BUILDERS:
            claims = [call_arg(call, "desc")]
        elif method == "batch_verify" and call.args and isinstance(call.args[0].value, cst.List):
            for element in call.args[0].value.elements:
                entry = element.value
                if (
                    isinstance(entry, cst.Tuple)
                    and len(entry.elements) > 1
                    and _has_sources(entry.elements[1].value)
                ):
                    claims.append(entry.elements[0].value)
        found: list[cst.FormattedString] = []
        for claim in claims:
            if isinstance(claim, cst.FormattedString):
                found.append(claim)
            elif isinstance(claim, cst.Name):
                values = facts.values_of(claim.value)
                found.extend(v for v in values if isinstance(v, cst.FormattedString))
        return found

    def _nullable_field(
        self, expr: cst.BaseExpression, extractions: dict[str, _Extraction]
    ) -> str | None:
        name = dotted(expr)
        if not isinstance(expr, cst.Attribute) or name is None:
            return None
        root, field = name.split(".")[:2]
        extraction = extractions.get(root)
        if extraction is None or extraction.model not in self.ctx.models:
            return None
        nullable = self.ctx.models[extraction.model].nullable
        return name if nullable.get(field, False) else None


def _has_sources(expr: cst.BaseExpression | None) -> bool:
    """True when a `sources` argument is given and is not the literal None."""
    return expr is not None and not (isinstance(expr, cst.Name) and expr.value == "None")


def _extractions(
    ctx: LintContext, facts: ScopeFacts, func: cst.FunctionDef | None
) -> dict[str, _Extraction]:
    """Variables holding extraction results: `x = await ev.extract(...)`, typed params, items."""
    found: dict[str, _Extraction] = {}
    for name, bindings in facts.bindings.items():
        for binding in bindings:
            call = evaluator_call(binding.value, EXTRACT)
            if call is not None:
                template = call_arg(call, "template_class")
                model = dotted(template) if template is not None else None
                found[name] = _Extraction(name, model, call)
    if func is not None:
        for param in [*func.params.posonly_params, *func.params.params, *func.params.kwonly_params]:
            annotation = param.annotation.annotation if param.annotation else None
            if isinstance(annotation, cst.Name) and annotation.value in ctx.models:
                found.setdefault(
                    param.name.value, _Extraction(param.name.value, annotation.value, param)
                )
    for name, bindings in facts.bindings.items():
        for binding in bindings:
            source = _loop_source(ctx, binding.name)
            field_path = dotted(source) if source is not None else None
            if field_path is None or "." not in field_path:
                continue
            root, field = field_path.split(".")[:2]
            parent = found.get(root)
            if parent is None or parent.model not in ctx.models:
                continue
            item = ctx.models[parent.model].item_model(field)
            if item is not None:
                found.setdefault(name, _Extraction(name, item, binding.name))
    return found


def _loop_source(ctx: LintContext, name: cst.Name) -> cst.BaseExpression | None:
    """What a loop variable iterates: `for x in SRC`, `for i, x in enumerate(SRC)`."""
    parent = ctx.parent(name)
    if isinstance(parent, cst.For | cst.CompFor) and parent.target is name:
        source = parent.iter
    elif isinstance(parent, cst.Element):
        pair = ctx.parent(parent)
        loop = ctx.parent(pair) if pair is not None else None
        if not (
            isinstance(pair, cst.Tuple)
            and isinstance(loop, cst.For | cst.CompFor)
            and loop.target is pair
            and len(pair.elements) == 2
            and pair.elements[1] is parent
            and isinstance(loop.iter, cst.Call)
            and dotted(loop.iter.func) == "enumerate"
            and loop.iter.args
        ):
            return None
        source = loop.iter.args[0].value
    else:
        return None
    return source.left if isinstance(source, cst.BooleanOperation) else source


class ExtractionUnused(ScopeRule):
    """JG011: an extraction nobody reads costs an LLM call and hides a missing check."""

    id = "JG011"
    name = "extraction-unused"
    title = "Extraction result or field never used"
    message = (
        "Each `ev.extract(...)` is an LLM call, and each template field is something the "
        "judge meant to check. Use the result (its fields feed claims, custom checks or "
        "loops), or drop the call; remove template fields no check reads, or add the check "
        "the field was meant for."
    )
    bad = """
class Price(BaseModel):
    amount: str | None = None
    currency: str | None = None

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    ev.add_custom_node(result=info.amount is not None, id="price_given", desc="A price is given")
"""
    good = """
class Price(BaseModel):
    amount: str | None = None
    currency: str | None = None

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    ev.add_custom_node(result=info.amount is not None, id="price_given", desc="A price is given")
    ev.add_custom_node(result=info.currency == "USD", id="price_usd", desc="The price is in USD")
"""

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "extract":
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Await):
            parent = self.ctx.parent(parent)
        if isinstance(parent, cst.Expr):
            self.report(node, "The extraction result is discarded.")

    def _settle(self, facts: ScopeFacts) -> None:
        for name, bindings in facts.bindings.items():
            found = (evaluator_call(b.value, EXTRACT) for b in bindings)
            calls = [c for c in found if c is not None]
            if not calls:
                continue
            loads = facts.loads.get(name, [])
            if not loads:
                self.report(calls[0], f"The extraction `{name}` is never used.")
                continue
            template = call_arg(calls[0], "template_class")
            model = self.ctx.models.get(dotted(template) or "") if template is not None else None
            if model is None or len(calls) != len(bindings):
                continue
            used: set[str] = set()
            for load in loads:
                parent = self.ctx.parent(load)
                if not (isinstance(parent, cst.Attribute) and parent.value is load):
                    break
                if parent.attr.value not in model.nullable:
                    break
                used.add(parent.attr.value)
            else:
                unused = [f for f in model.nullable if f not in used]
                if unused:
                    self.report(
                        calls[0],
                        f"Field(s) {', '.join(unused)} of `{name}` ({model.name}) are never used.",
                    )
