"""Executors: what runs one judge on one answer. In process here; sandboxed in `toolkit.sandbox`.

Every executor has the same interface (`evaluate(job) -> EvalOutcome`, never raising for the
judge's failure) and the same outcome shape, because both run the judge through
`toolkit.runner.judging.evaluate_job`. Build one with `toolkit.runner.builder.judge_executor`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from toolkit.awaitables import resolve
from toolkit.backends import JudgingBackend
from toolkit.errors import InfraError
from toolkit.evaluator import PageSource
from toolkit.runner.judging import UserImports, evaluate_job, load_bound_judge
from toolkit.runner.loader import Judge
from toolkit.runner.metering import current_meter, judge_call, note_infra, noted_kind
from toolkit.sandbox.protocol import EvalJob, EvalOutcome
from toolkit.tools import ToolCaller


class Executor(Protocol):
    """Runs one judge on one answer; never raises for a judge's failure."""

    async def evaluate(self, job: EvalJob) -> EvalOutcome: ...


class ToolTable:
    """A `ToolCaller` over named tool functions (e.g. `maps_tools(...)`); the broker serves
    sandboxed judges from one too."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.tools = dict(tools)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call tool `name`; an unknown tool is an InfraError (node `error`), never a crash.
        The call is counted in the evaluation's meter, and any exception the tool raised
        noted there on its way to the judge, as kind `tool` unless it is an InfraError of
        another kind: a provider whose own call failed (a `ConnectionError`, a `KeyError` from
        a malformed response) failed the evaluation, not the answer, as a backend's does."""
        with judge_call():
            meter = current_meter.get()
            if meter is not None:
                meter.tool_calls += 1
            try:
                function = self.tools.get(name)
                if function is None:
                    message = f"tool '{name}' is not available: no provider for it"
                    raise InfraError(message, kind="tool")
                return await resolve(function(**args))
            except Exception as exc:
                note_infra(exc, "tool")
                raise


class InProcessExecutor:
    """Runs judges in this process (no isolation): for debugging and for trusted judges."""

    def __init__(
        self,
        backend: JudgingBackend,
        pages: PageSource | None = None,
        tools: ToolCaller | None = None,
        timeout_s: float = 600.0,
    ) -> None:
        self.backend = backend
        self.pages = pages
        self.tools = tools
        self.timeout_s = timeout_s
        self._judges: dict[str, asyncio.Future[Judge]] = {}
        self._imports = UserImports()

    async def _judge(self, job: EvalJob) -> Judge:
        """Load each judge revision once, off the event loop (compiling blocks other calls)."""
        key = job.judge_sha256 or ""
        if key not in self._judges:
            self._judges[key] = asyncio.ensure_future(asyncio.to_thread(load_bound_judge, job))
        return await self._judges[key]

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        """Load and run the judge; exceptions and timeouts become an incomplete outcome, and
        a judge importing a module of the user's is refused, as the sandbox refuses it."""
        try:
            job = job.bound()
        except (OSError, UnicodeDecodeError) as exc:
            return EvalOutcome.failure(job, "judge_load", f"cannot read the judge: {exc}")
        refused = self._imports.refusal(job)
        if refused is not None:
            return refused
        return await evaluate_job(
            lambda: self._judge(job),
            job,
            backend=self.backend,
            pages=self.pages,
            tools=self.tools,
            timeout_s=self.timeout_s,
            noted_kind=noted_kind,
        )
