"""The options of one run: where judges, reviews and results live, and how the run behaves.

Kept apart from the scheduler so `judgegen run` can describe a run (and answer a fully fresh
one) without importing the scheduler, the sandbox or the judge runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

JOBS_PER_LLM_SLOT = 4
MAX_DEFAULT_JOBS = 256


def default_jobs(llm_concurrency: int) -> int:
    """Evaluations in flight by default: a few per LLM slot, so every slot stays busy while
    some evaluations are between calls (starting, checking, writing their result)."""
    return max(1, min(MAX_DEFAULT_JOBS, JOBS_PER_LLM_SLOT * llm_concurrency))


@dataclass
class RunOptions:
    """Where things live and how the run behaves."""

    judges_dir: Path = Path("generated_judges")
    results_dir: Path = Path("results")
    reviews_dir: Path = Path("reviews")
    include_unreviewed: bool = False
    overwrite: bool = False
    jobs: int = default_jobs(8)
    backend_spec: str | None = None
    require_sandbox: bool = False
    tools: str | None = None
    """Identity of the tool provider judges are offered (`--maps`: a factory spec, `google`),
    None when none: a result whose judge called a tool is redone when it changes."""
    tasks: frozenset[str] | None = None
    """The tasks the inputs were limited to (`--task`); None: the inputs are every answer of
    their agents, so a result of a task with no input now has lost its answer (not counted,
    the task scored 0 as missing) where under a limit it is counted unchecked."""
