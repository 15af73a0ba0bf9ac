"""What the debug stage runs judges with: stubbed verdicts, shared real extraction, a job runner.

Verdicts follow a named pattern (all pass, all fail, two seeded mixes hashed from the claim, so
a pattern gives the same verdicts on every run); extraction is real but asked once per
distinct request for the whole generation. Jobs run one at a time in a single sandboxed worker
pool whose backend switches pattern between jobs, or in-process through `run_local` (tests,
benches: same outcome shape, a timeout, no isolation).
"""

from __future__ import annotations

import asyncio
import hashlib
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.runner.protocol import EvalJob, EvalOutcome, SandboxLimits

Runner = Callable[..., Any]


def stub_verdict(pattern: str, claim: str) -> bool:
    """The stubbed outcome of verifying `claim` under `pattern` (seeded mixes hash the claim)."""
    if pattern == "all_pass":
        return True
    if pattern == "all_fail":
        return False
    seed = pattern.rsplit("_", 1)[-1]
    return hashlib.sha256(f"{seed}:{claim}".encode()).digest()[0] % 2 == 0


class Extracts(Protocol):
    """What extraction needs: `LLMBackend` or any object with its `extract`."""

    async def extract(self, request: ExtractRequest) -> Any: ...


class SharedExtractor:
    """Real extraction through the LLM layer, asked once per distinct request in a stage."""

    def __init__(self, backend: Extracts | None) -> None:
        self.backend = backend
        self.memo: dict[str, Any] = {}

    async def extract(self, request: ExtractRequest) -> Any:
        if self.backend is None:
            return {}
        key = request.model_dump_json(exclude={"template_class"})
        if key not in self.memo:
            self.memo[key] = await self.backend.extract(request)
        return self.memo[key]


class StubbedBackend:
    """A judging backend: real (shared) extraction, verdicts from a named pattern."""

    def __init__(self, extractor: SharedExtractor, pattern: str = "all_pass") -> None:
        self.extractor = extractor
        self.pattern = pattern  # switched between jobs; one job runs at a time
        self.model = "debug-stub"

    async def extract(self, request: ExtractRequest) -> Any:
        return await self.extractor.extract(request)

    async def verify(self, request: VerifyRequest) -> Verdict:
        passed = stub_verdict(self.pattern, request.claim)
        return Verdict(passed=passed, reasoning=f"stub: {self.pattern}")


async def run_local(job: EvalJob, backend: Any, pages: Any, limits: SandboxLimits) -> EvalOutcome:
    """In-process stand-in for the sandbox (same outcome shape, a timeout, no isolation)."""
    from toolkit.runner.loader import load_judge

    try:
        judge = load_judge(job.judge_path)
        summary, _ = await asyncio.wait_for(
            judge.run(backend=backend, answer=job.answer, pages=pages, answer_name=job.answer_name),
            timeout=limits.timeout_s,
        )
    except TimeoutError:
        return EvalOutcome.failure(
            job, "timeout", f"no result after {limits.timeout_s:g}s", error_type="Timeout"
        )
    except Exception as exc:
        evaluator = getattr(exc, "__evaluator__", None)
        outcome = EvalOutcome.failure(
            job,
            getattr(exc, "kind", "exception"),
            str(exc),
            error_type=type(exc).__name__,
        )
        outcome.errors[0]["traceback"] = traceback.format_exc()
        outcome.summary = evaluator.get_summary() if evaluator is not None else None
        return outcome
    return EvalOutcome(
        status="incomplete" if summary.get("status") == "incomplete" else "complete",
        task_id=job.task_id,
        answer_name=job.answer_name,
        summary=summary,
        errors=list(summary.get("errors", [])),
    )


class DebugJobs:
    """Runs debug jobs one at a time: in one sandboxed worker pool, or through `runner`."""

    def __init__(
        self, backend: StubbedBackend, limits: SandboxLimits, runner: Runner | None
    ) -> None:
        self.backend, self.limits, self.runner = backend, limits, runner
        self.pool: Any = None

    async def __aenter__(self) -> DebugJobs:
        if self.runner is None:
            from toolkit.runner.pool import WorkerPool

            self.pool = await WorkerPool(1, self.limits, self.backend).__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.pool is not None:
            await self.pool.aclose()

    async def run(self, job: EvalJob, pattern: str) -> EvalOutcome:
        self.backend.pattern = pattern
        if self.pool is not None:
            return await self.pool.evaluate(job)
        assert self.runner is not None
        return await self.runner(job, self.backend, None, self.limits)
