"""Rules on how a judge behaves at run time: determinism, the event loop, errors, awaiting."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from generator.stages.lint.context import LintContext
from generator.stages.lint.rule import Rule
from generator.stages.lint.syntax import EVALUATOR_BUILDERS, dotted, method_name, root_name

CLOCK_READS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.localtime",
        "time.gmtime",
        "time.ctime",
        "time.asctime",
        "time.strftime",
    }
)
RANDOM_PREFIXES = ("random.", "secrets.", "uuid.uuid1", "uuid.uuid4", "os.urandom", "os.getpid")
UNSTABLE_BUILTINS = frozenset({"hash", "id"})
SET_WRAPPERS = frozenset({"list", "tuple", "enumerate", "reversed", "iter"})
TREE_CALLS = EVALUATOR_BUILDERS | {"verify", "batch_verify"}
BLOCKING_PREFIXES = (
    "requests.",
    "urllib.request.",
    "urllib3.",
    "subprocess.",
    "socket.",
    "http.client.",
)
BLOCKING_CALLS = frozenset(
    {"time.sleep", "os.system", "os.popen", "os.wait"}
    | {f"httpx.{verb}" for verb in ("get", "post", "put", "patch", "delete", "head", "request")}
    | {"httpx.stream", "httpx.Client"}
)
NESTED_LOOP_CALLS = frozenset({"asyncio.run", "asyncio.get_event_loop"})
INFRA_SWALLOWERS = frozenset(
    {"Exception", "BaseException", "InfraError", "LLMError", "JudgegenError", "BudgetExceeded"}
)
COROUTINE_METHODS = frozenset({"verify", "extract", "batch_verify"})
TRUTH_TESTS = (
    cst.If,
    cst.While,
    cst.IfExp,
    cst.UnaryOperation,
    cst.BooleanOperation,
    cst.Comparison,
)


class Nondeterminism(Rule):
    """JG008: the same answer must give the same tree, ids and cached requests on every run."""

    id = "JG008"
    name = "nondeterminism"
    title = "Clock read, randomness or set ordering that makes runs differ"
    message = (
        "Two runs on the same answer must build the same tree with the same node ids and send "
        "the same requests (so reruns hit the cache). Do not read the clock "
        "(datetime.now, date.today, time.time), use random/uuid/secrets/hash()/id(), or create "
        "nodes while iterating a set. Put a fixed date in a module constant (e.g. "
        "`EVAL_DATE = datetime.date(2025, 7, 1)`), and iterate `sorted(...)` or "
        "`dict.fromkeys(...)` instead of a set."
    )
    bad = """
import datetime

async def evaluate(ev: Evaluator) -> None:
    today = datetime.date.today()
    for url in set(ev.answer.split()):
        ev.add_custom_node(result=True, id=f"url_{url}", desc=f"Cited before {today}")
"""
    good = """
import datetime

EVAL_DATE = datetime.date(2025, 7, 1)

async def evaluate(ev: Evaluator) -> None:
    for index, url in enumerate(sorted(set(ev.answer.split()))):
        ev.add_custom_node(result=True, id=f"url_{index}", desc=f"{url} cited before {EVAL_DATE}")
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._set_loops: list[tuple[cst.For, bool]] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return
        if isinstance(parent, cst.ImportAlias | cst.ImportFrom):
            return
        self._check_reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.ctx.parent(node)
        if isinstance(
            parent, cst.Attribute | cst.ImportAlias | cst.ImportFrom | cst.AsName | cst.Arg
        ) and not (isinstance(parent, cst.Arg) and parent.value is node):
            return
        if node.value in self.ctx.imports:
            self._check_reference(node)

    def _check_reference(self, node: cst.Attribute | cst.Name) -> None:
        qualified = self.ctx.qualify(node)
        if qualified is None:
            return
        if qualified in CLOCK_READS:
            self.report(node, f"`{qualified}` reads the clock, so runs on the same answer differ.")
        elif qualified.startswith(RANDOM_PREFIXES):
            self.report(node, f"`{qualified}` is random, so runs on the same answer differ.")

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.value if isinstance(node.func, cst.Name) else None
        if name in UNSTABLE_BUILTINS and name not in self.ctx.imports:
            self.report(node, f"`{name}()` changes from one process to the next.")
        if method_name(node) in TREE_CALLS:
            self._set_loops = [(loop, True) for loop, _ in self._set_loops]

    def visit_For(self, node: cst.For) -> None:
        if self._is_set(node.iter):
            self._set_loops.append((node, False))

    def leave_For(self, original_node: cst.For) -> None:
        if self._set_loops and self._set_loops[-1][0] is original_node:
            _, builds = self._set_loops.pop()
            if builds:
                self.report(original_node.iter, "Nodes are built while iterating a set.")

    def _leave_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp) -> None:
        for_in: cst.CompFor | None = node.for_in
        element = node.elt
        builds = m.findall(
            element, m.Call(func=m.Attribute(attr=m.OneOf(*map(m.Name, TREE_CALLS))))
        )
        while for_in is not None:
            if builds and self._is_set(for_in.iter):
                self.report(for_in.iter, "Nodes are built while iterating a set.")
            for_in = for_in.inner_for_in

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._leave_comprehension(original_node)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._leave_comprehension(original_node)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._leave_comprehension(original_node)

    def _is_set(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Set | cst.SetComp):
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            if expr.func.value in ("set", "frozenset"):
                return True
            if expr.func.value in SET_WRAPPERS and expr.args:
                return self._is_set(expr.args[0].value)
        if isinstance(expr, cst.Name):
            values = self.ctx.current_scope.values_of(expr.value)
            return bool(values) and all(v is not None and self._is_set(v) for v in values)
        return False


class BlockingCall(Rule):
    """JG012: a blocking call stalls every concurrent verification of the evaluation."""

    id = "JG012"
    name = "blocking-call-in-async"
    title = "Blocking call inside async code"
    message = (
        "Judges are async: extractions and verifications of one evaluation run concurrently on "
        "one event loop, and a blocking call (time.sleep, requests/httpx/urllib calls, "
        "subprocess, socket, asyncio.run, loop.run_until_complete) stalls all of them and "
        "breaks the runner's timeout. Remove waits entirely; fetch nothing yourself (pass URLs "
        "as `sources=` to `ev.verify`); `await` coroutines instead of running a new loop."
    )
    bad = """
import time

async def evaluate(ev: Evaluator) -> None:
    time.sleep(2)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="cited", desc="The answer cites the page")
    await ev.verify(claim="The page exists", node=leaf, sources="https://example.org")
"""

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.current_scope.is_async:
            return
        if method_name(node) == "run_until_complete":
            self.report(node, "`run_until_complete` inside async code blocks the event loop.")
            return
        qualified = self.ctx.qualify(node.func)
        if qualified is None:
            return
        if qualified in NESTED_LOOP_CALLS:
            self.report(node, f"`{qualified}()` inside a running event loop fails; use `await`.")
            return
        if qualified in BLOCKING_CALLS or qualified.startswith(BLOCKING_PREFIXES):
            self.report(node, f"`{qualified}()` blocks the event loop inside async code.")


@dataclass
class _Handler:
    node: cst.ExceptHandler
    raises: bool = False


class SwallowedInfraError(Rule):
    """JG013: an infrastructure failure must reach the runner, which marks it incomplete."""

    id = "JG013"
    name = "swallowed-infra-error"
    title = "Broad except that hides infrastructure errors"
    message = (
        "When an LLM call or page capture fails for good, the toolkit raises InfraError so the "
        "runner marks the evaluation incomplete and retries it later; a bare `except:`, "
        "`except Exception` / `BaseException` / `InfraError` around awaited calls that does "
        "not re-raise turns that into a silent wrong score, and so does "
        "`asyncio.gather(..., return_exceptions=True)`. Let errors from `ev.extract`/"
        "`ev.verify` propagate; catch only the specific exceptions of your own parsing "
        "(ValueError, KeyError, TypeError), or end the handler with `raise`. Only `try` blocks "
        "that await something are checked: synchronous parsing cannot raise InfraError."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    try:
        info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    except Exception:
        info = Price()
    ev.add_custom_node(result=info.amount is not None, id="price_given", desc="A price is given")
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    info = await ev.extract(prompt="Get the price", template_class=Price, extraction_name="price")
    try:
        amount = float(info.amount or "")
    except ValueError:
        amount = None
    ev.add_custom_node(result=amount is not None, id="price_given", desc="A price is given")
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._handlers: list[_Handler] = []
        self._awaiting: set[cst.CSTNode] = set()

    def visit_Await(self, node: cst.Await) -> None:
        self._mark_awaiting(node)

    def visit_For(self, node: cst.For) -> None:
        if node.asynchronous is not None:
            self._mark_awaiting(node)

    def visit_With(self, node: cst.With) -> None:
        if node.asynchronous is not None:
            self._mark_awaiting(node)

    def _mark_awaiting(self, node: cst.CSTNode) -> None:
        """Remember every `try` whose body (in this function) awaits at `node`."""
        for ancestor, child in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda):
                return
            if isinstance(ancestor, cst.Try | cst.TryStar) and child is ancestor.body:
                self._awaiting.add(ancestor)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._handlers.append(_Handler(node))

    def visit_Raise(self, node: cst.Raise) -> None:
        if self._handlers:
            self._handlers[-1].raises = True

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        handler = self._handlers.pop()
        if handler.raises or self.ctx.parent(original_node) not in self._awaiting:
            return
        caught = _caught_names(original_node.type)
        if caught is None:
            self.report(original_node, "A bare `except:` hides infrastructure errors.")
        elif broad := sorted(caught & INFRA_SWALLOWERS):
            self.report(
                original_node,
                f"`except {', '.join(broad)}` without re-raising hides infrastructure errors.",
            )

    def visit_Call(self, node: cst.Call) -> None:
        if (dotted(node.func) or "").endswith("gather") and any(
            a.keyword is not None
            and a.keyword.value == "return_exceptions"
            and isinstance(a.value, cst.Name)
            and a.value.value == "True"
            for a in node.args
        ):
            self.report(node, "`return_exceptions=True` turns raised errors into ordinary values.")


def _caught_names(expr: cst.BaseExpression | None) -> set[str] | None:
    if expr is None:
        return None
    items = [e.value for e in expr.elements] if isinstance(expr, cst.Tuple) else [expr]
    return {(dotted(item) or "").rsplit(".", 1)[-1] for item in items}


class UnawaitedCoroutine(Rule):
    """JG014: `ev.verify(...)` without `await` does nothing at all."""

    id = "JG014"
    name = "coroutine-not-awaited"
    title = "Evaluator coroutine called without await"
    message = (
        "`ev.extract`, `ev.verify`, `ev.batch_verify` and your own `async def` helpers return "
        "coroutines: without `await` nothing runs, the leaf stays unverified and a coroutine "
        "is always truthy. Write `await ev.verify(...)`, or collect the coroutines and "
        "`await asyncio.gather(*coroutines)`."
    )
    bad = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="price_ok", desc="The price is correct")
    ev.verify(claim="The price is $10", node=leaf)
"""
    good = """
async def evaluate(ev: Evaluator) -> None:
    leaf = ev.add_leaf(id="price_ok", desc="The price is correct")
    await ev.verify(claim="The price is $10", node=leaf)
"""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self._async_helpers = {
            s.name.value
            for s in ctx.module.body
            if isinstance(s, cst.FunctionDef) and s.asynchronous is not None
        }
        self._pending: list[tuple[str, cst.Call]] = []

    def _is_coroutine_call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Name):
            return node.func.value in self._async_helpers
        if method_name(node) not in COROUTINE_METHODS:
            return False
        return root_name(node.func) not in self.ctx.imports

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_coroutine_call(node):
            return
        parent = self.ctx.parent(node)
        label = dotted(node.func) or "the coroutine"
        if isinstance(parent, cst.Expr):
            self.report(node, f"`{label}(...)` is never awaited, so it never runs.")
        elif isinstance(parent, TRUTH_TESTS):
            self.report(node, f"`{label}(...)` is tested without `await`; a coroutine is truthy.")
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Name):
                self._pending.append((target.value, node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._settle(original_node)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._settle(original_node)

    def _settle(self, scope_node: cst.Module | cst.FunctionDef) -> None:
        facts = self.ctx.scopes[scope_node]
        keep: list[tuple[str, cst.Call]] = []
        for name, call in self._pending:
            if self.ctx.scope_of(call) is not facts:
                keep.append((name, call))
                continue
            loads = facts.loads.get(name, [])
            if loads and all(self._attribute_use(load) for load in loads):
                self.report(call, f"`{name}` holds a coroutine that is never awaited.")
        self._pending = keep

    def _attribute_use(self, name: cst.Name) -> bool:
        parent = self.ctx.parent(name)
        return isinstance(parent, cst.Attribute) and parent.value is name
