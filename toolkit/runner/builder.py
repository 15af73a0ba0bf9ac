"""The one way to build what runs judges: `judge_executor`, sandboxed unless asked otherwise.

`judgegen run` (through `run_evaluations`), the review commands and the generator's debug stage
all get their executor here, so a judge runs the same way — same limits, same outcome shape —
whoever asks. The sandbox's fork server is launched as the executor is entered (or earlier, by
the caller: `toolkit.sandbox.launch.launch_sandbox`), so it warms up while the caller prepares
its first job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from toolkit.backends import JudgingBackend
from toolkit.evaluator import PageSource
from toolkit.runner.executors import Executor, InProcessExecutor, ToolTable
from toolkit.runner.page_reads import RecordingPages
from toolkit.sandbox.broker import ToolProvider
from toolkit.sandbox.protocol import SandboxLimits

if TYPE_CHECKING:
    from toolkit.sandbox.launch import Launch

Isolation = Literal["sandbox", "in_process"]


@asynccontextmanager
async def judge_executor(
    backend: JudgingBackend,
    *,
    isolation: Isolation = "sandbox",
    pages: PageSource | None = None,
    tools: Mapping[str, ToolProvider] | None = None,
    limits: SandboxLimits | None = None,
    jobs: int | None = None,
    require_sandbox: bool = False,
    launch: Launch | None = None,
) -> AsyncIterator[Executor]:
    """Yield an executor running judges with `backend`, `pages` and `tools` under `limits`.

    The judges' page source notes each read in the current evaluation's page-read log
    (`toolkit.runner.page_reads`), so results can record what they were judged on.
    `isolation="sandbox"` (the default) runs each judge in its own confined process, forked
    from one fork server (`launch`, if the caller started it early); `jobs` caps how many run
    at once (None: as many as the caller asks for). `"in_process"` runs judges in this
    process, without isolation (a judge that blocks the event loop cannot be stopped), for
    trusted judges and debugging. `require_sandbox` fails evaluations missing a sandbox
    guard (kind `sandbox_required`) before their judge's code loads.
    """
    limits = limits or SandboxLimits()
    pages = pages if isinstance(pages, RecordingPages) else RecordingPages(pages)
    if isolation == "in_process":
        if require_sandbox:
            raise ValueError("require_sandbox needs isolation='sandbox'")
        if launch is not None:
            launch.kill()
        caller = ToolTable(tools) if tools is not None else None
        yield InProcessExecutor(backend, pages=pages, tools=caller, timeout_s=limits.timeout_s)
        return
    from toolkit.sandbox.pool import WorkerPool

    pool = WorkerPool(
        jobs,
        limits,
        backend,
        pages=pages,
        tools=tools,
        require_sandbox=require_sandbox,
        launch=launch,
    )
    pool.start()
    try:
        yield pool
    finally:
        await pool.aclose()
