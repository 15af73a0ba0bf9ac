"""Small, pure helpers over libcst nodes shared by the rules (no traversal, no state)."""

from __future__ import annotations

import libcst as cst

EVALUATOR_BUILDERS = frozenset({"add_parallel", "add_sequential", "add_leaf", "add_custom_node"})
PARENT_BUILDERS = frozenset({"add_parallel", "add_sequential"})

# Positional order of the Evaluator methods' leading parameters (Mind2Web 2 names).
POSITIONS: dict[str, tuple[str, ...]] = {
    "add_parallel": ("id", "desc", "parent"),
    "add_sequential": ("id", "desc", "parent"),
    "add_leaf": ("id", "desc", "parent", "critical"),
    "add_custom_node": ("result", "id", "desc", "parent", "critical"),
    "verify": ("claim", "node", "sources"),
    "extract": ("prompt", "template_class", "extraction_name", "source"),
    "batch_verify": ("claims_and_sources",),
}

# Older Mind2Web 2 judges spell the node id `id_`; the toolkit accepts both.
KEYWORD_ALIASES: dict[str, tuple[str, ...]] = {"id": ("id", "id_")}


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else (calls, subscripts...)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


def root_name(expr: cst.BaseExpression) -> str | None:
    """The Name at the bottom of an Attribute/Subscript/Call chain, if any."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Attribute | cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            return None


def method_name(call: cst.Call) -> str | None:
    """The attribute name of `x.method(...)` calls, None for plain function calls."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def call_arg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The argument bound to parameter `name` of an Evaluator method, by keyword or position."""
    spellings = KEYWORD_ALIASES.get(name, (name,))
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in spellings:
            return arg.value
    order = POSITIONS.get(method_name(call) or "", ())
    if name not in order:
        return None
    index = order.index(name)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def has_keyword(call: cst.Call, name: str) -> bool:
    """True when `name` is passed by keyword (or a `**kwargs` could carry it)."""
    spellings = KEYWORD_ALIASES.get(name, (name,))
    return any(
        (a.keyword is not None and a.keyword.value in spellings) or a.star == "**"
        for a in call.args
    )


def string_value(expr: cst.BaseExpression | None) -> str | None:
    """The value of a plain (non-f) string literal or implicit concatenation, else None."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        joined = expr.evaluated_value
        return joined if isinstance(joined, str) else None
    return None


def bool_value(expr: cst.BaseExpression | None) -> bool | None:
    """True/False for the literal names, None for anything else."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def unwrap_await(expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The awaited expression for `await x`, else the expression itself."""
    return expr.expression if isinstance(expr, cst.Await) else expr


def evaluator_call(expr: cst.BaseExpression | None, methods: frozenset[str]) -> cst.Call | None:
    """`expr` (or the call it awaits) when it calls one of the Evaluator `methods`."""
    inner = unwrap_await(expr)
    if isinstance(inner, cst.Call) and method_name(inner) in methods:
        return inner
    return None


def target_names(target: cst.BaseExpression) -> list[cst.Name]:
    """Names bound by an assignment or loop target (tuples and lists unpacked)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, cst.Tuple | cst.List):
        names: list[cst.Name] = []
        for element in target.elements:
            names.extend(target_names(element.value))
        return names
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []
