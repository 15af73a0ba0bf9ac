"""Loading a judge module and running it on one answer, whichever entry point it has.

Two judge styles are accepted: native (`async def evaluate(ev)` plus `TASK_ID`,
`TASK_DESCRIPTION`, optional `ROOT_STRATEGY`) and Mind2Web 2 style, after `judgegen import`
(`async def evaluate_answer(client, answer, agent_name, answer_name, cache, semaphore,
logger, model)` returning the summary dict). Both end in the same summary shape.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.errors import SpecError
from toolkit.evaluator import Evaluator, PageSource
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
    ) -> tuple[dict[str, Any], Evaluator | None]:
        """Run the judge on one answer; returns its summary and (native judges) the evaluator.

        Exceptions from the judge propagate; for native judges the caller can still read the
        partial tree from the evaluator attached to the exception as `__evaluator__`.
        """
        token = current_tools.set(tools)
        tool_errors: list[dict[str, Any]] = []
        errors_token = current_tool_errors.set(tool_errors)
        try:
            if self.style == "native":
                summary, evaluator = await self._run_native(
                    backend, answer, pages, agent_name, answer_name
                )
                return _with_tool_errors(summary, tool_errors), evaluator
            context = JudgeContext(backend=backend, pages=pages, model=model)
            summary = await self.module.evaluate_answer(
                client=context,
                answer=answer,
                agent_name=agent_name,
                answer_name=answer_name,
                cache=None,
                semaphore=asyncio.Semaphore(64),
                logger=logging.getLogger(f"judgegen.judge.{self.task_id}"),
                model=model or getattr(backend, "model", None) or "o4-mini",
            )
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
        try:
            await self.module.evaluate(evaluator)
        except BaseException as exc:
            exc.__evaluator__ = evaluator  # type: ignore[attr-defined]
            raise
        return evaluator.get_summary(), evaluator


def _with_tool_errors(summary: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Failed tool calls make the evaluation incomplete even if the judge swallowed them."""
    if errors:
        summary["errors"] = [*summary.get("errors", []), *errors]
        summary["status"] = "incomplete"
    return summary


def load_judge(path: str | Path) -> Judge:
    """Import the judge at `path` under a private module name and detect its entry point."""
    path = Path(path)
    source = path.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    module_name = f"judgegen_judge_{path.stem}_{digest[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SpecError(str(path), "module", "cannot be imported", "check the file is Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
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
