"""Loading a judge module and running it on one answer, whichever entry point it has.

Two judge styles are accepted: native (`async def evaluate(ev)` plus `TASK_ID`,
`TASK_DESCRIPTION`, optional `ROOT_STRATEGY`) and Mind2Web 2 style, after `judgegen import`
(`async def evaluate_answer(client, answer, agent_name, answer_name, cache, semaphore,
logger, model)` returning the summary dict). Both end in the same summary shape.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import hashlib
import importlib.util
import linecache
import logging
import marshal
import sys
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.errors import JudgeFailed, SpecError
from toolkit.evaluator import Evaluator, PageSource
from toolkit.llm.policy_sources import user_modules_imported
from toolkit.tools import ToolCaller, current_tool_errors, current_tools


@dataclass
class JudgeContext:
    """What the runner hands a Mind2Web 2-style judge as its `client`: backend and pages."""

    backend: JudgingBackend
    pages: PageSource | None = None
    model: str | None = None


@dataclass
class Judge:
    """A loaded judge module and what kind of entry point it has."""

    path: Path
    module: ModuleType
    style: str  # "native" | "mind2web2"
    task_id: str

    async def run(
        self,
        *,
        backend: JudgingBackend,
        answer: str,
        pages: PageSource | None = None,
        agent_name: str = "unknown_agent",
        answer_name: str = "unknown_answer",
        tools: ToolCaller | None = None,
        model: str | None = None,
        timeout_s: float | None = None,
    ) -> tuple[dict[str, Any], Evaluator | None]:
        """Run the judge on one answer; returns its summary and (native judges) the evaluator.

        A judge that raises, exits or overruns `timeout_s` raises `JudgeFailed`, carrying the
        original exception and the partial tree built so far (native judges).
        """
        token = current_tools.set(tools)
        tool_errors: list[dict[str, Any]] = []
        errors_token = current_tool_errors.set(tool_errors)
        try:
            if self.style == "native":
                summary, evaluator = await self._run_native(
                    backend, answer, pages, agent_name, answer_name, timeout_s
                )
                return _with_tool_errors(summary, tool_errors), evaluator
            context = JudgeContext(backend=backend, pages=pages, model=model)
            call = self.module.evaluate_answer(
                client=context,
                answer=answer,
                agent_name=agent_name,
                answer_name=answer_name,
                cache=None,
                semaphore=asyncio.Semaphore(64),
                logger=logging.getLogger(f"judgegen.judge.{self.task_id}"),
                model=model or getattr(backend, "model", None) or "o4-mini",
            )
            summary = await _guarded(call, timeout_s, None)
            return _with_tool_errors(dict(summary), tool_errors), None
        finally:
            current_tool_errors.reset(errors_token)
            current_tools.reset(token)

    async def _run_native(
        self,
        backend: JudgingBackend,
        answer: str,
        pages: PageSource | None,
        agent_name: str,
        answer_name: str,
        timeout_s: float | None,
    ) -> tuple[dict[str, Any], Evaluator]:
        evaluator = Evaluator.create(
            task_id=self.task_id,
            task_description=getattr(self.module, "TASK_DESCRIPTION", ""),
            answer=answer,
            backend=backend,
            pages=pages,
            strategy=getattr(self.module, "ROOT_STRATEGY", "parallel"),
            agent_name=agent_name,
            answer_name=answer_name,
        )
        ground_truth = getattr(self.module, "GROUND_TRUTH", None)
        if ground_truth:
            evaluator.add_ground_truth(ground_truth)
        evaluator.detach_partners = True
        try:
            await _guarded(
                _settled(self.module.evaluate(evaluator), evaluator), timeout_s, evaluator
            )
        finally:
            evaluator.discard_partners()
        return evaluator.get_summary(), evaluator


async def _settled(judged: Awaitable[Any], evaluator: Evaluator) -> None:
    """The judge's run, then the wave partners' checks its verifications left running."""
    await judged
    await evaluator.settle_partners()


async def _guarded(
    call: Awaitable[Any], timeout_s: float | None, evaluator: Evaluator | None
) -> Any:
    """Await the judge's entry point; its failure or overrun becomes `JudgeFailed`. A judge
    that catches the cancellation its deadline sends (a bare `except:` around a call) and
    returns has overrun all the same: the call it was in never finished."""
    try:
        async with asyncio.timeout(timeout_s) as deadline:
            result = await call
    except (Exception, SystemExit) as exc:
        timed_out = isinstance(exc, TimeoutError) and deadline.expired()
        cause: BaseException = exc
        if timed_out:
            cause = _overrun(timeout_s)
        partial, partial_error = _partial(evaluator)
        raise JudgeFailed(cause, partial, timed_out=timed_out, partial_error=partial_error) from exc
    if deadline.expired():
        partial, partial_error = _partial(evaluator)
        raise JudgeFailed(_overrun(timeout_s), partial, timed_out=True, partial_error=partial_error)
    return result


def _overrun(timeout_s: float | None) -> TimeoutError:
    """The cause recorded for a judge stopped by its deadline."""
    return TimeoutError(f"judge timed out after {timeout_s:g}s")


def _partial(evaluator: Evaluator | None) -> tuple[dict[str, Any] | None, BaseException | None]:
    """The summary of whatever tree the judge built before it failed."""
    if evaluator is None:
        return None, None
    try:
        return evaluator.get_summary(), None
    except Exception as exc:
        return None, exc


def _with_tool_errors(summary: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Failed tool calls make the evaluation incomplete even if the judge swallowed them."""
    if errors:
        summary["errors"] = [*summary.get("errors", []), *errors]
        summary["status"] = "incomplete"
    return summary


def user_import_problem(source: str, path: str | Path) -> str | None:
    """Why judge `source`, named `path`, may run neither in process nor sandboxed: it imports
    a module of the user's (`policy_sources.user_modules_imported`), which is no part of the
    judge's bytes (its `judge_sha256`, what its approval binds) and which the sandbox cannot
    import. None when it imports none, or does not parse (loading it says why).

    Read from the source with `ast`: nothing of the judge's or the user's is run or imported.
    Not seen: an import by a name computed at run time (`importlib.import_module(name)`)."""
    try:
        tree = ast.parse(source, str(path))
        here = Path.cwd()
    except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
        return None
    found = user_modules_imported(tree, here)
    if not found:
        return None
    imports = "; ".join(f"`{user.name}` (line {user.line}) from {user.path}" for user in found)
    return (
        f"the judge {path} imports a module of the user's: {imports}. Only the judge's own "
        "bytes are hashed and approved, and the sandbox cannot import that module, so the "
        "judge is not run in either mode. A judge is one module: move what it uses into the "
        "judge (lint rule JG003)."
    )


def load_judge(path: str | Path) -> Judge:
    """Read the judge at `path` and load it (see `load_judge_source`)."""
    path = Path(path)
    return load_judge_source(path.read_bytes(), path)


def compile_judge(text: str, path: str | Path) -> CodeType:
    """The code object `load_judge_source` runs for judge `text` named `path` (SyntaxError
    for code that does not compile)."""
    return compile(text, str(Path(path)), "exec", dont_inherit=True)


def code_to_text(code: CodeType, source_sha256: str) -> str:
    """`code`, compiled from the source whose `sha256:` digest is `source_sha256`, as text for
    a job: this interpreter's bytecode magic, the digest, then the marshalled code. The parent
    compiles a sandboxed judge once per run and every job execs it, instead of each forked job
    compiling it again."""
    header = importlib.util.MAGIC_NUMBER + source_sha256.encode("ascii") + b"\n"
    return base64.b64encode(header + marshal.dumps(code)).decode("ascii")


def code_from_text(text: str | None, source_sha256: str | None) -> CodeType | None:
    """The code `code_to_text` made from the source whose digest is `source_sha256`; None
    when absent, made by another bytecode version or from another source (the job then
    compiles the source it checked itself)."""
    if not text or not source_sha256:
        return None
    data = base64.b64decode(text)
    header = importlib.util.MAGIC_NUMBER + source_sha256.encode("ascii") + b"\n"
    if not data.startswith(header):
        return None
    code = marshal.loads(data[len(header) :])
    return code if isinstance(code, CodeType) else None


def load_judge_source(source: bytes, path: str | Path, code: CodeType | None = None) -> Judge:
    """Import judge `source` under a private module name and detect its entry point.

    `path` names the judge in tracebacks and messages; the file itself is never read here,
    so the code that runs is exactly `source` (the bytes whose approval was checked), or
    `code`, which the caller compiled from those bytes with `compile_judge`.
    """
    path = Path(path)
    digest = hashlib.sha256(source).hexdigest()
    module_name = f"judgegen_judge_{path.stem}_{digest[:12]}"
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), "module", f"is not UTF-8 ({exc})", "save it as UTF-8") from exc
    code = code or compile_judge(text, path)
    linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
    module = ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    exec(code, module.__dict__)
    if callable(getattr(module, "evaluate", None)):
        style = "native"
    elif callable(getattr(module, "evaluate_answer", None)):
        style = "mind2web2"
    else:
        raise SpecError(
            str(path),
            "evaluate",
            "the judge defines neither `async def evaluate(ev)` nor `evaluate_answer(...)`",
            "add `async def evaluate(ev: Evaluator) -> None`",
        )
    task_id = getattr(module, "TASK_ID", None) or path.stem
    return Judge(path=path, module=module, style=style, task_id=task_id)
