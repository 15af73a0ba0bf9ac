"""Running a judge file on one answer for the review commands (tree, diff, validate, mutate).

Invariant: a run either yields a complete summary or raises. Infrastructure failures (LLM,
budget, replay miss, sandbox, node-level `error`s) raise `InfraError`, so a reviewer never
reads an outage as a verdict; the judge's own failures (exception, timeout, crash) raise
`JudgeRunError` carrying the outcome.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, Field

from generator.review.codediff import FunctionDiff, diff_functions
from generator.review.rubric import RubricDiff, diff_trees, tree_of
from generator.stages.debug import SharedExtractor, StubbedBackend
from generator.stages.spec import SampleAnswer
from toolkit.backends import JudgingBackend, LLMBackend
from toolkit.errors import InfraError, JudgegenError, is_infra_failure
from toolkit.evaluator import PageSource
from toolkit.llm.settings import LLMSettings
from toolkit.runner.builder import judge_executor
from toolkit.runner.executors import Executor
from toolkit.runner.fingerprint import PageReads
from toolkit.runner.metering import MeteredBackend, metered_evaluation
from toolkit.runner.page_reads import recording_page_reads
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits

if TYPE_CHECKING:
    from toolkit.llm import LLMClient

DEFAULT_TIMEOUT_S = 120.0
REVIEW_DIFF_VERSION = 1


class JudgeRunError(JudgegenError):
    """The judge itself failed on an answer (raised, timed out, crashed, broke the sandbox)."""

    def __init__(self, message: str, outcome: EvalOutcome) -> None:
        self.outcome = outcome
        super().__init__(message)


def _first_error(errors: list[dict[str, Any]]) -> str:
    first = errors[0] if errors else {}
    return f"{first.get('type', 'Error')}: {first.get('message', '')}"[:500]


def check_outcome(outcome: EvalOutcome, where: str) -> dict[str, Any]:
    """The summary of a complete outcome; raises InfraError or JudgeRunError otherwise. An
    evaluation incomplete only for errors of the judge's own making (none an infrastructure
    failure: a claim of None the Evaluator could not build a request from) is the judge's
    failure, to repair, not an outage that stops the command."""
    for error in outcome.errors:
        if is_infra_failure(error):
            raise InfraError(f"{where}: {_first_error([error])}", kind=str(error.get("kind")))
    if outcome.errors or outcome.summary is None:
        raise JudgeRunError(f"{where}: the judge failed: {_first_error(outcome.errors)}", outcome)
    summary = outcome.summary
    if summary.get("status") == "incomplete":
        own = [e for e in summary.get("errors") or [] if isinstance(e, dict)]
        if own and not any(is_infra_failure(error) for error in own):
            raise JudgeRunError(f"{where}: the judge failed: {_first_error(own)}", outcome)
        raise InfraError(
            f"{where}: evaluation incomplete: {_first_error(summary.get('errors', []))}"
        )
    return summary


@dataclass(frozen=True)
class JudgedAnswer:
    """A complete summary of one run, and the cited pages it read or found missing (the
    runner's page-read log, as a result's fingerprint records them)."""

    summary: dict[str, Any]
    pages: PageReads

    @property
    def missing_pages(self) -> tuple[str, ...]:
        """Cited pages the evaluation asked for that the page source lacks (sorted)."""
        return self.pages.missing


class ReviewRuns:
    """Runs judge files one answer at a time with one backend, in the sandbox or in-process.

    Use as `async with ReviewRuns(backend, sandbox=True) as runs:`; the sandboxed worker
    starts on the first run and is shared by the following ones. As `judgegen run` does, each
    run is metered: a failure the backend or the page source raised to the judge makes its
    outcome incomplete even when the judge caught it (`except Exception`), so an outage is
    never read as the judge's verdict (a disagreement, a killed mutation).
    """

    def __init__(
        self,
        backend: JudgingBackend,
        *,
        pages: PageSource | None = None,
        sandbox: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._context = judge_executor(
            MeteredBackend(backend),
            isolation="sandbox" if sandbox else "in_process",
            pages=pages,
            limits=SandboxLimits(timeout_s=timeout_s),
            jobs=1,
        )
        self.executor: Executor | None = None

    async def __aenter__(self) -> ReviewRuns:
        self.executor = await self._context.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._context.__aexit__(*exc_info)
        self.executor = None

    async def outcome(
        self, judge_path: Path, answer: str, *, task_id: str, answer_name: str
    ) -> EvalOutcome:
        """Run the judge at `judge_path` on `answer`; whatever happened, as an outcome."""
        job = EvalJob(
            judge_path=str(judge_path),
            answer=answer,
            answer_name=answer_name,
            task_id=task_id,
            agent_name="review",
        )
        if self.executor is None:
            raise RuntimeError("use ReviewRuns as `async with ReviewRuns(...) as runs:`")
        return await metered_evaluation(self.executor.evaluate, job)

    async def summary(
        self, judge_path: Path, answer: str, *, task_id: str, answer_name: str
    ) -> dict[str, Any]:
        """The judge's complete summary on `answer` (raises InfraError / JudgeRunError)."""
        judged = await self.judged(judge_path, answer, task_id=task_id, answer_name=answer_name)
        return judged.summary

    async def judged(
        self, judge_path: Path, answer: str, *, task_id: str, answer_name: str
    ) -> JudgedAnswer:
        """The judge's complete summary on `answer` with the pages its run read or missed, as
        `judgegen run` notes them (raises InfraError / JudgeRunError)."""
        with recording_page_reads() as log:
            outcome = await self.outcome(
                judge_path, answer, task_id=task_id, answer_name=answer_name
            )
        summary = check_outcome(outcome, f"{task_id}/{answer_name}")
        return JudgedAnswer(summary, log.reads(summary.get("missing_sources") or []))


class RubricAndCodeDiff(BaseModel):
    """What changed between two versions of a judge: rubric nodes, then top-level code."""

    version: int = REVIEW_DIFF_VERSION
    task_id: str
    answer: str = Field(description="Sample answer both all-pass skeletons were built on.")
    rubric: RubricDiff
    code: FunctionDiff

    @property
    def empty(self) -> bool:
        """True when neither the rubric nor the code changed."""
        return self.rubric.empty and self.code.empty

    def to_text(self) -> str:
        """The rubric listing, then the code listing (as in review records)."""
        return self.rubric.to_text() + self.code.to_text()


def extraction_backend(settings: LLMSettings) -> tuple[LLMBackend, LLMClient]:
    """The real extraction the generator's debug stage uses: judge model, configured client."""
    from toolkit.llm import default_backend

    backend = default_backend(settings)
    return backend, cast("LLMClient", backend.client)  # default_backend builds an LLMClient


async def skeleton_summary(
    source: str,
    task_id: str,
    answer: SampleAnswer,
    extractor: SharedExtractor,
    *,
    sandbox: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """The summary of an all-pass run of judge `source` on `answer` (stubbed verdicts)."""
    backend = StubbedBackend(extractor, "all_pass")
    with tempfile.TemporaryDirectory(prefix="judgegen-review-") as tmp:
        path = Path(tmp) / f"{task_id}.py"
        path.write_text(source, "utf-8")
        async with ReviewRuns(backend, sandbox=sandbox, timeout_s=timeout_s) as runs:
            return await runs.summary(path, answer.text, task_id=task_id, answer_name=answer.name)


async def rubric_and_code_diff(
    task_id: str,
    old_source: str | None,
    new_source: str | None,
    *,
    answer: SampleAnswer,
    extraction: LLMBackend | SharedExtractor | None,
    sandbox: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> RubricAndCodeDiff:
    """Rubric nodes (all-pass skeletons on `answer`) and top-level functions that changed.

    Both versions share one extractor, so identical extraction requests are asked once. A
    version that is None (the judge does not exist there) has no nodes and no functions.
    """
    extractor = (
        extraction if isinstance(extraction, SharedExtractor) else SharedExtractor(extraction)
    )
    trees: list[dict[str, Any]] = []
    for source in (old_source, new_source):
        if source is None:
            trees.append({})
            continue
        summary = await skeleton_summary(
            source, task_id, answer, extractor, sandbox=sandbox, timeout_s=timeout_s
        )
        trees.append(tree_of(summary))
    return RubricAndCodeDiff(
        task_id=task_id,
        answer=answer.name,
        rubric=diff_trees(trees[0], trees[1]),
        code=diff_functions(old_source or "", new_source or ""),
    )
