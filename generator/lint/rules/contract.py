"""Rules on the judge module's contract: entry point, constants and what it may import."""

from __future__ import annotations

import libcst as cst

from generator.lint.context import LintContext
from generator.lint.rule import Rule
from generator.lint.syntax import dotted, string_value

# Modules a judge may import (a module's submodules too, unless listed in FORBIDDEN_TOOLKIT).
ALLOWED_MODULES = frozenset(
    {
        "__future__",
        "asyncio",
        "calendar",
        "collections",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "html",
        "itertools",
        "json",
        "logging",
        "math",
        "operator",
        "pydantic",
        "re",
        "statistics",
        "string",
        "textwrap",
        "toolkit",
        "typing",
        "typing_extensions",
        "unicodedata",
        "urllib.parse",
        "zoneinfo",
    }
)
FORBIDDEN_TOOLKIT = ("toolkit.llm", "toolkit.runner", "toolkit.pages", "toolkit.backends")
FORBIDDEN_BUILTINS = frozenset(
    {"eval", "exec", "compile", "__import__", "open", "input", "breakpoint"}
)
FORBIDDEN_CALLS = frozenset(
    {
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "asyncio.open_connection",
        "asyncio.open_unix_connection",
        "asyncio.start_server",
        "asyncio.start_unix_server",
    }
)
MIND2WEB2_PARAMS = (
    "client",
    "answer",
    "agent_name",
    "answer_name",
    "cache",
    "semaphore",
    "logger",
    "model",
)
STRATEGIES = frozenset({"parallel", "sequential"})


def module_allowed(name: str) -> bool:
    """True when a judge may import `name` (the allow-list, minus the toolkit's internals)."""
    if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN_TOOLKIT):
        return False
    parts = name.split(".")
    return any(".".join(parts[:i]) in ALLOWED_MODULES for i in range(1, len(parts) + 1))


def _top_level_functions(module: cst.Module, name: str) -> list[cst.FunctionDef]:
    return [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]


def _top_level_assign(module: cst.Module, name: str) -> cst.BaseExpression | None:
    """The value of the last top-level `NAME = value` (or annotated assignment)."""
    found: cst.BaseExpression | None = None
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and any(
                    isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
                )
            ) or (
                isinstance(small, cst.AnnAssign)
                and isinstance(small.target, cst.Name)
                and small.target.value == name
                and small.value is not None
            ):
                found = small.value
    return found


class EntryPoint(Rule):
    """JG001: the runner calls `await evaluate(ev)`; anything else cannot run."""

    id = "JG001"
    name = "entry-point"
    title = "Entry point missing or with the wrong signature"
    message = (
        "The runner imports the module and calls `await evaluate(ev)` with one Evaluator. "
        "Define exactly one module-level `async def evaluate(ev: Evaluator) -> None:` taking a "
        "single positional parameter; build the whole rubric tree inside it (or in helpers it "
        "awaits) and return nothing: the runner scores the tree itself."
    )
    bad = """
def evaluate(ev, answer):
    ev.add_custom_node(result=bool(answer), id="answered", desc="An answer is given")
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    ev.add_custom_node(result=bool(ev.answer), id="answered", desc="An answer is given")
"""

    def leave_Module(self, original_node: cst.Module) -> None:
        native = _top_level_functions(original_node, "evaluate")
        legacy = _top_level_functions(original_node, "evaluate_answer")
        if not native and not legacy:
            self.report(
                original_node.body[0] if original_node.body else original_node,
                "The module defines no module-level `async def evaluate(ev)`.",
            )
            return
        for extra in native[1:]:
            self.report(
                extra, "`evaluate` is defined again; the later definition replaces the first."
            )
        if native:
            self._check_native(native[0])
        else:
            self._check_legacy(legacy[0])

    def _check_native(self, func: cst.FunctionDef) -> None:
        if func.asynchronous is None:
            self.report(func, "`evaluate` must be `async def`: the runner awaits it.")
        params = [*func.params.posonly_params, *func.params.params]
        required = [p for p in params if p.default is None]
        kw_required = [p for p in func.params.kwonly_params if p.default is None]
        if len(params) < 1 or len(required) != 1 or kw_required:
            self.report(
                func,
                "`evaluate` must take exactly one required positional parameter, the Evaluator "
                f"(it has {len(required)} required positional and {len(kw_required)} required "
                "keyword-only).",
            )
        returns = func.returns.annotation if func.returns else None
        if returns is not None and not (isinstance(returns, cst.Name) and returns.value == "None"):
            self.report(func, "`evaluate` returns None; the runner ignores any returned value.")

    def _check_legacy(self, func: cst.FunctionDef) -> None:
        if func.asynchronous is None:
            self.report(func, "`evaluate_answer` must be `async def`: the runner awaits it.")
        names = {p.name.value for p in [*func.params.params, *func.params.kwonly_params]}
        missing = [n for n in MIND2WEB2_PARAMS if n not in names]
        if missing and not isinstance(func.params.star_kwarg, cst.Param):
            self.report(
                func,
                "`evaluate_answer` is called with keywords "
                + ", ".join(MIND2WEB2_PARAMS)
                + f"; it lacks {', '.join(missing)}. Prefer `async def evaluate(ev)`.",
            )


class ModuleConstants(Rule):
    """JG002: TASK_ID, TASK_DESCRIPTION and ROOT_STRATEGY are read without running the judge."""

    id = "JG002"
    name = "module-constants"
    title = "TASK_ID / TASK_DESCRIPTION / ROOT_STRATEGY missing or not literals"
    message = (
        "The runner and the review read these constants without running code. Set "
        '`TASK_ID = "<task id>"` and `TASK_DESCRIPTION = """<the exact task text>"""` as plain '
        'string literals at module level; `ROOT_STRATEGY`, when present, is "parallel" or '
        '"sequential".'
    )
    bad = """
TASK_ID = make_id("llava_commit")
ROOT_STRATEGY = "serial"
"""
    good = """
TASK_ID = "llava_commit"
TASK_DESCRIPTION = \"\"\"Find the commit that added LLaVA support.\"\"\"
ROOT_STRATEGY = "sequential"
"""

    def leave_Module(self, original_node: cst.Module) -> None:
        anchor = original_node.body[0] if original_node.body else original_node
        for constant in ("TASK_ID", "TASK_DESCRIPTION"):
            value = _top_level_assign(original_node, constant)
            if value is None:
                self.report(anchor, f"The module does not define `{constant}`.")
            elif not _literal_text(value):
                self.report(value, f"`{constant}` must be a non-empty plain string literal.")
        strategy = _top_level_assign(original_node, "ROOT_STRATEGY")
        if strategy is not None and not _strategy_literal(strategy):
            self.report(strategy, '`ROOT_STRATEGY` must be "parallel" or "sequential".')


def _literal_text(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    text = string_value(value)
    return bool(text and text.strip())


def _strategy_literal(value: cst.BaseExpression) -> bool:
    text = string_value(value)
    if text is not None:
        return text in STRATEGIES
    name = dotted(value) or ""
    return name.endswith(("AggregationStrategy.PARALLEL", "AggregationStrategy.SEQUENTIAL"))


class ForbiddenImport(Rule):
    """JG003: judges run sandboxed; their only way out is the Evaluator."""

    id = "JG003"
    name = "forbidden-import"
    title = "Forbidden import, network client or dynamic code"
    message = (
        "A judge runs in a sandbox without network, files or API keys: pages and LLM calls "
        "go only through `ev.extract(...)` and `ev.verify(..., sources=...)`. Import only "
        "from `toolkit` (Evaluator, VerificationNode, AggregationStrategy, checks, errors) and "
        "these modules: " + ", ".join(sorted(ALLOWED_MODULES - {"toolkit"})) + ". Remove "
        "os/sys/subprocess/socket/requests/httpx/urllib.request/anthropic/openai/time/random "
        "imports and calls to eval/exec/open/__import__."
    )
    bad = """
import requests

async def fetch(url: str) -> str:
    return requests.get(url).text
"""
    good = """
from toolkit import Evaluator

async def check_page(ev: Evaluator, node, url: str) -> None:
    await ev.verify(claim="The page lists the price", node=node, sources=url)
"""

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted(alias.name) or ""
            if not module_allowed(name):
                self.report(alias, f"Import of `{name}` is not allowed in a judge.")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative:
            self.report(node, "Relative imports are not allowed: a judge is a single module.")
            return
        base = dotted(node.module) if node.module is not None else ""
        if not base:
            return
        if not module_allowed(base):
            self.report(node, f"Import from `{base}` is not allowed in a judge.")
            return
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            full = f"{base}.{dotted(alias.name)}"
            if base == "toolkit" and not module_allowed(full):
                self.report(alias, f"`{full}` is toolkit-internal; a judge never uses it.")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in FORBIDDEN_BUILTINS:
            if func.value not in self.ctx.imports:
                self.report(node, f"`{func.value}()` is not allowed in a judge.")
            return
        qualified = self.ctx.qualify(func)
        if qualified in FORBIDDEN_CALLS:
            self.report(node, f"`{qualified}()` opens a process or connection; not allowed.")


RUNNER_OWNED = frozenset(
    {
        "toolkit.Evaluator",
        "toolkit.evaluator.Evaluator",
        "toolkit.Evaluator.create",
        "toolkit.evaluator.Evaluator.create",
        "toolkit.LLMBackend",
        "toolkit.ScriptedBackend",
    }
)


class RunnerOwnedSetup(Rule):
    """JG016: in a native judge the runner owns the Evaluator's creation and setup."""

    id = "JG016"
    name = "runner-owned-setup"
    title = "Native judge creates or re-initializes the Evaluator"
    message = (
        "For `async def evaluate(ev)` the runner creates the Evaluator with the answer, task, "
        "judging backend, pages and limits, and scores it after `evaluate` returns. Build on "
        "the `ev` you are given: never call `ev.initialize(...)` (it replaces the root and "
        "drops the tree), create `Evaluator()` / `Evaluator.create(...)`, or construct "
        "backends; read the answer as `ev.answer`."
    )
    bad = """
from toolkit import Evaluator

async def evaluate(ev: Evaluator) -> None:
    ev.initialize(task_id=TASK_ID, strategy="sequential")
    ev.add_custom_node(result=bool(ev.answer), id="answered", desc="An answer is given")
"""
    good = """
from toolkit import Evaluator

ROOT_STRATEGY = "sequential"

async def evaluate(ev: Evaluator) -> None:
    ev.add_custom_node(result=bool(ev.answer), id="answered", desc="An answer is given")
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._native = bool(_top_level_functions(ctx.module, "evaluate"))

    def visit_Call(self, node: cst.Call) -> None:
        if not self._native:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "initialize":
            if self.ctx.qualify(func) is None:
                self.report(node, "`initialize` resets the Evaluator the runner prepared.")
            return
        qualified = self.ctx.qualify(func)
        if qualified in RUNNER_OWNED:
            self.report(node, f"`{dotted(func)}(...)`: the runner creates this, not the judge.")


RUNNER_READ_CONSTANTS = frozenset({"TASK_ID", "TASK_DESCRIPTION", "ROOT_STRATEGY", "GROUND_TRUTH"})


def _is_constant_name(name: str) -> bool:
    return name.isupper() and name[0].isalpha() and name not in RUNNER_READ_CONSTANTS


class UnusedModuleConstant(Rule):
    """JG018: a module constant nothing reads is a fact the judge meant to check and forgot."""

    id = "JG018"
    name = "unused-module-constant"
    title = "Module-level constant that nothing reads"
    message = (
        "A module-level constant such as `OFFICIAL_DOMAIN` or `EXPECTED_VERSION = "
        "GROUND_TRUTH['version']` exists to be compared with the answer; when no code reads "
        "it, the judge checks something else (often a copied literal) or nothing at all. Use "
        "the constant in the check it was written for, or delete it. (`GROUND_TRUTH` itself "
        "is covered key by key by JG009; TASK_ID, TASK_DESCRIPTION and ROOT_STRATEGY are read "
        "by the runner.)"
    )
    bad = """
OFFICIAL_DOMAIN = "blog.rust-lang.org"

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="The URL", template_class=Info, extraction_name="info")
    ev.add_custom_node(result=bool(info.url), id="linked", desc="A link is given")
"""
    good = """
OFFICIAL_DOMAIN = "blog.rust-lang.org"

async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="The URL", template_class=Info, extraction_name="info")
    ev.add_custom_node(
        result=checks.url_in_domain(info.url, OFFICIAL_DOMAIN), id="official", desc="Official"
    )
"""

    def leave_Module(self, original_node: cst.Module) -> None:
        facts = self.ctx.scopes[original_node]
        for statement in original_node.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                targets: list[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                for target in targets:
                    if not isinstance(target, cst.Name) or not _is_constant_name(target.value):
                        continue
                    if not facts.loads.get(target.value):
                        self.report(target, f"`{target.value}` is defined but nothing reads it.")
