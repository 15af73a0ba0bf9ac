"""One generation: its options, its state as the stages run (inputs, clients, stage history),
and the failure that ends it. Every stage takes a `GenerationRun`; `pipeline` drives them."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.review.mutate import MutationStage
from generator.review.record import StageRecord
from generator.review.runs import ReviewRuns
from generator.stages.acceptance import (
    DEFAULT_BUDGET_USD,
    AcceptanceBackend,
    AcceptanceReport,
    BudgetedClient,
)
from generator.stages.context import GenerationContext
from generator.stages.debug import DEFAULT_LIMITS, SharedExtractor
from generator.stages.spec import LoadedSpec
from generator.stages.tape import CallTape
from toolkit.backends import LLMBackend, LLMClientLike
from toolkit.errors import JudgegenError
from toolkit.runner.builder import Isolation
from toolkit.sandbox.protocol import SandboxLimits

Progress = Callable[[str], None]


class GenerationFailed(JudgegenError):
    """The judge still failed lint or debug after the allowed repairs; nothing was published."""

    def __init__(self, message: str, stages: list[StageRecord]) -> None:
        self.stages = stages
        super().__init__(message)


@dataclass
class PipelineOptions:
    """How one generation runs and where it publishes."""

    model: str
    extract_model: str
    repo: Path = Path(".")
    judges_dir: Path = Path("generated_judges")
    reviews_dir: Path = Path("reviews")
    commit: bool = True
    max_repairs: int = 3
    max_reflections: int = 2
    max_examples: int = 2
    fixtures_dir: Path | None = None
    limits: SandboxLimits = field(default_factory=lambda: DEFAULT_LIMITS.model_copy())
    isolation: Isolation = "sandbox"
    acceptance: bool = True
    acceptance_budget_usd: float = DEFAULT_BUDGET_USD
    mutation: bool = True
    min_kill_rate: float | None = None
    pages: Path | None = None
    responses: str = ""
    no_model: bool = False  # a replay or scripted policy: calls cost $0, priced as an estimate


@dataclass
class GenerationRun:
    """One generation's inputs, clients and stage history."""

    loaded: LoadedSpec
    options: PipelineOptions
    tape: CallTape
    extractor: SharedExtractor
    progress: Progress
    context: GenerationContext
    stages: list[StageRecord] = field(default_factory=list)
    pages: Any = None
    budgeted: BudgetedClient | None = None
    acceptance_backend: AcceptanceBackend | None = None
    judge_runs: ReviewRuns | None = None
    scratch: tempfile.TemporaryDirectory[str] | None = None
    acceptance: AcceptanceReport | None = None
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    mutation: MutationStage | None = None

    @classmethod
    def start(
        cls,
        loaded: LoadedSpec,
        options: PipelineOptions,
        generation: LLMClientLike,
        extraction: LLMClientLike | None,
        progress: Progress,
        context: GenerationContext,
    ) -> GenerationRun:
        """A run whose calls go on one tape; extraction, when it has its own client, on a
        second tape sharing the first one's budget and usage."""
        replayed = options.no_model or options.fixtures_dir is not None
        tape = CallTape(generation, replayed=replayed)
        extract_tape = (
            tape
            if extraction is None or extraction is generation
            else CallTape(extraction, shared=tape)
        )
        backend = LLMBackend(extract_tape, model=options.extract_model)
        return cls(loaded, options, tape, SharedExtractor(backend), progress, context)

    def record(self, stage: StageRecord) -> None:
        self.stages.append(stage)
        self.progress(f"[{self.loaded.task_id}] {stage.stage}: {stage.status}: {stage.summary}")
