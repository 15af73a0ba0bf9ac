"""What the debug stage runs judges with: stubbed verdicts, shared real extraction, a job runner.

Verdicts follow a named pattern (all pass, all fail, two seeded mixes hashed from the claim, so
a pattern gives the same verdicts on every run), except the claims a job names as failing;
extraction is real but asked once per distinct request for the whole generation, or blank
(every field null, no model call) for a job on an answer that says nothing. Jobs run one at a time on an executor from the run
builder (a single sandboxed worker by default, or in process for tests and benches) whose
backend switches pattern between jobs.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.runner.builder import Isolation, judge_executor
from toolkit.runner.executors import Executor
from toolkit.runner.metering import MeteredBackend, metered_evaluation
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits


def stub_verdict(pattern: str, claim: str) -> bool:
    """The stubbed outcome of verifying `claim` under `pattern` (seeded mixes hash the claim)."""
    if pattern == "all_pass":
        return True
    if pattern == "all_fail":
        return False
    seed = pattern.rsplit("_", 1)[-1]
    return hashlib.sha256(f"{seed}:{claim}".encode()).digest()[0] % 2 == 0


def stub_reasoning(pattern: str) -> str:
    """The reasoning of every verdict the stub gives under `pattern`: how a verification log
    entry shows the stub decided it (not a missing link, which fails without a verdict)."""
    return f"stub: {pattern}"


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
    """A judging backend: real (shared) extraction, verdicts from a named pattern.

    `failing` claims fail whatever the pattern; `blank` answers every extraction with nothing.
    Both, like the pattern, are switched between jobs (one job runs at a time).
    """

    def __init__(self, extractor: SharedExtractor, pattern: str = "all_pass") -> None:
        self.extractor = extractor
        self.pattern = pattern
        self.failing: frozenset[str] = frozenset()
        self.blank = False
        self.model = "debug-stub"

    async def extract(self, request: ExtractRequest) -> Any:
        if self.blank:
            return {}
        return await self.extractor.extract(request)

    async def verify(self, request: VerifyRequest) -> Verdict:
        passed = request.claim not in self.failing and stub_verdict(self.pattern, request.claim)
        return Verdict(passed=passed, reasoning=stub_reasoning(self.pattern))


class DebugJobs:
    """Runs debug jobs one at a time with the run builder (one sandboxed worker by default)."""

    def __init__(
        self, backend: StubbedBackend, limits: SandboxLimits, isolation: Isolation = "sandbox"
    ) -> None:
        self.backend = backend
        metered = MeteredBackend(backend)  # an outage the judge swallows is still seen
        self._context = judge_executor(metered, isolation=isolation, limits=limits, jobs=1)
        self.executor: Executor | None = None

    async def __aenter__(self) -> DebugJobs:
        self.executor = await self._context.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._context.__aexit__(*exc_info)
        self.executor = None

    async def run(
        self,
        job: EvalJob,
        pattern: str,
        *,
        failing: frozenset[str] = frozenset(),
        blank: bool = False,
    ) -> EvalOutcome:
        """Run `job` with verdicts following `pattern` but the `failing` claims failed, and
        with every extraction empty when `blank`."""
        if self.executor is None:
            raise RuntimeError("use DebugJobs as `async with DebugJobs(...) as jobs:`")
        self.backend.pattern, self.backend.failing, self.backend.blank = pattern, failing, blank
        return await metered_evaluation(self.executor.evaluate, job)
