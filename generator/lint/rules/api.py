"""Rules on calls into the toolkit: every `ev.*` and `checks.*` call against the real signatures.

The signatures are the ones `judgegen docs` renders (`generator.apiref`), read with `inspect`
from the toolkit itself, so the rule, the API reference the model sees and the runtime's
strict keywords can never disagree.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

import libcst as cst

from generator.lint.context import LintContext
from generator.lint.rule import Rule
from generator.lint.syntax import dotted

EVALUATOR_NAMES = frozenset({"ev", "evaluator"})
# Evaluator attributes a judge may read but never call (set by the runner).
EVALUATOR_DATA = frozenset(
    {"root", "answer", "task_id", "task_description", "agent_name", "answer_name", "pages"}
)
RUNNER_ONLY = frozenset({"initialize", "create"})  # JG016 reports these in native judges


@functools.cache
def _api() -> tuple[dict[str, Callable[..., Any]], dict[str, Callable[..., Any]]]:
    """(Evaluator methods, check functions): imported late, `generator.apiref` imports lint."""
    from generator.apiref import check_functions, evaluator_methods

    return evaluator_methods(), check_functions()


def _one_line_signature(name: str, function: Callable[..., Any]) -> str:
    from generator.apiref import render_signature

    text = render_signature(function, drop_self=True)
    flat = " ".join(part.strip() for part in text.splitlines())
    return (
        flat.replace("( ", "(")
        .replace(", )", ")")
        .replace(",)", ")")
        .replace(f"def {function.__name__}(", f"def {name}(")
    )


def _closest(given: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(given, valid, n=1, cutoff=0.5)
    return f"did you mean `{close[0]}`?" if close else "valid: " + ", ".join(sorted(valid))


def _binding_problem(call: cst.Call, function: Callable[..., Any], label: str) -> str | None:
    """What is wrong with the arguments of `call` for `function`, or None."""
    signature = inspect.signature(function)
    params = list(signature.parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    signature = signature.replace(parameters=params)
    keywords = [a.keyword.value for a in call.args if a.keyword is not None]
    starred = any(a.star for a in call.args)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    for keyword in keywords:
        if keyword not in names and not accepts_any:
            return f"`{label}(...)` has no keyword `{keyword}`; {_closest(keyword, names)}"
    if starred:
        return None
    positional = [object()] * sum(1 for a in call.args if a.keyword is None)
    try:
        signature.bind(*positional, **dict.fromkeys(keywords))
    except TypeError as exc:
        return f"`{label}(...)`: {exc}"
    return None


class ToolkitCallSignature(Rule):
    """JG017: a keyword the toolkit does not know is a check that never happens."""

    id = "JG017"
    name = "toolkit-call-signature"
    title = "Toolkit call that does not match the real signature"
    message = (
        "Every `ev.*` method and `checks.*` helper has exactly the parameters shown in the API "
        "reference, and the runtime rejects anything else with a TypeError. A misspelled "
        "keyword is worse than a crash in older toolkits: `ev.verify(..., source=url)` used "
        "to drop the URL and verify the claim with no page at all. Use the parameter names "
        "of the signature quoted in the finding (`sources=` on `verify`, `source=` on "
        "`extract`), pass every required argument, and call only methods that exist."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="announced", desc="The official page announces it", critical=True)
    await ev.verify(claim="Rust 1.85.0 stabilized the 2024 edition", node=leaf, source=URL)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="announced", desc="The official page announces it", critical=True)
    await ev.verify(claim="Rust 1.85.0 stabilized the 2024 edition", node=leaf, sources=URL)
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._evaluators = _evaluator_params(ctx.module)

    def visit_Call(self, node: cst.Call) -> None:
        methods, check_functions = _api()
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = func.value.value
            if receiver in self._evaluators and receiver not in self.ctx.imports:
                self._check_method(node, func.attr.value, methods)
                return
        qualified = self.ctx.qualify(func)
        if qualified is not None and qualified.startswith("toolkit.checks."):
            name = qualified.rsplit(".", 1)[-1]
            self._check_function(node, name, check_functions)

    def _check_method(
        self, node: cst.Call, name: str, methods: dict[str, Callable[..., Any]]
    ) -> None:
        if name in RUNNER_ONLY:
            return
        label = f"ev.{name}"
        function = methods.get(name)
        if function is None:
            if name in EVALUATOR_DATA:
                self.report(node, f"`{label}` is a value set by the runner, not a method.")
            else:
                hint = _closest(name, list(methods))
                self.report(node, f"`{label}(...)`: the Evaluator has no such method; {hint}")
            return
        self._report_binding(node, function, label)

    def _check_function(
        self, node: cst.Call, name: str, functions: dict[str, Callable[..., Any]]
    ) -> None:
        function = functions.get(name)
        if function is None:
            self.report(node, f"`checks.{name}` does not exist; {_closest(name, list(functions))}")
            return
        self._report_binding(node, function, f"checks.{name}")

    def _report_binding(self, node: cst.Call, function: Callable[..., Any], label: str) -> None:
        problem = _binding_problem(node, function, label)
        if problem is not None:
            signature = _one_line_signature(label, function)
            end = " " if problem.endswith("?") else ". "
            self.report(node, f"{problem}{end}The signature is `{signature}`.")


def _evaluator_params(module: cst.Module) -> set[str]:
    """Names that hold the Evaluator: `evaluate`'s parameter, params annotated `Evaluator`."""
    names = set(EVALUATOR_NAMES)
    for function in _functions(module):
        params = [*function.params.posonly_params, *function.params.params]
        if function.name.value == "evaluate" and params:
            names.add(params[0].name.value)
        for param in [*params, *function.params.kwonly_params]:
            annotation = param.annotation.annotation if param.annotation else None
            if annotation is not None and (dotted(annotation) or "").endswith("Evaluator"):
                names.add(param.name.value)
    return names


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []

    class _Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    module.visit(_Collect())
    return found
