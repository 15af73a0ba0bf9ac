"""Sandboxed judge execution: the public surface the runner and the generator's debug stage use.

Judges are untrusted code. Each evaluation runs in a fresh process forked from a long-lived
worker (`toolkit.runner.worker`) with no API keys in its environment, no network where the OS
allows it, rlimits, seccomp and audit-hook guards, and a wall-clock timeout; its LLM, page and
tool requests travel over a socket to the parent's broker (`toolkit.runner.broker`). Whatever
the judge does, the caller gets an `EvalOutcome`: `complete`, or `incomplete` with clear errors.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolkit.backends import JudgingBackend
from toolkit.evaluator import PageSource
from toolkit.runner.broker import Broker, ToolProvider
from toolkit.runner.pool import Isolation, WorkerPool, probe_isolation, scrubbed_environment
from toolkit.runner.protocol import EvalJob, EvalOutcome, SandboxLimits, error_dict

__all__ = [
    "Broker",
    "EvalJob",
    "EvalOutcome",
    "Isolation",
    "SandboxLimits",
    "ToolProvider",
    "WorkerPool",
    "error_dict",
    "probe_isolation",
    "run_in_sandbox",
    "scrubbed_environment",
]


async def run_in_sandbox(
    job: EvalJob,
    backend: JudgingBackend,
    pages: PageSource | None = None,
    limits: SandboxLimits | None = None,
    tools: Mapping[str, ToolProvider] | None = None,
) -> EvalOutcome:
    """Evaluate one job in a one-worker pool (the generator's debug runs); never raises for the judge."""
    async with WorkerPool(1, limits, backend, pages, tools) as pool:
        return await pool.evaluate(job)
