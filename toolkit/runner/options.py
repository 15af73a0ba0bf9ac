"""The options of one run: where judges, reviews and results live, and how the run behaves.

Kept apart from the scheduler so `judgegen run` can describe a run (and answer a fully fresh
one) without importing the scheduler, the sandbox or the judge runtime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from toolkit.runner.inputs import DEFAULT_MAX_ANSWER_BYTES

JOBS_PER_LLM_SLOT = 4
MAX_DEFAULT_JOBS = 256
DEFAULT_SCORE_NAME = "judgegen"
"""The webeval score files' name by default: `<traj dir>/scores/judgegen_<task_id>.json`."""
_SCORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def score_name_problem(name: str) -> str | None:
    """Why `name` cannot name score files (`scores/<name>_<task_id>.json`), or None: it must
    be a plain file-name fragment, a letter or digit then letters, digits, `.`, `_` or `-`,
    64 characters at most. (Here, not beside the score files in `toolkit.runner.results`:
    `run` checks the flag as it parses it, before a rerun answered from its stamp, which
    must not load pydantic.)"""
    if _SCORE_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a plain file-name fragment: use a letter or digit, then letters, "
        "digits, '.', '_' or '-' (64 characters at most), e.g. judgegen_o3"
    )


def default_jobs(llm_concurrency: int) -> int:
    """Evaluations in flight by default: a few per LLM slot, so every slot stays busy while
    some evaluations are between calls (starting, checking, writing their result)."""
    return max(1, min(MAX_DEFAULT_JOBS, JOBS_PER_LLM_SLOT * llm_concurrency))


@dataclass
class RunOptions:
    """Where things live and how the run behaves."""

    judges_dir: Path = Path("generated_judges")
    pages_dir: Path | None = None
    """The page store the run reads (`--pages`), None when none: recorded, with `judges_dir`, in
    each agent's summary.json, for `judgegen report` to check the results against."""
    results_dir: Path = Path("results")
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    """The size above which an answer is excluded (`--max-answer-bytes`): recorded in each
    agent's summary.json, for `judgegen report` to decide the answers' outcomes by it."""
    reviews_dir: Path = Path("reviews")
    include_unreviewed: bool = False
    overwrite: bool = False
    jobs: int = default_jobs(8)
    backend_spec: str | None = None
    require_sandbox: bool = False
    tools: str | None = None
    """Identity of the tool provider judges are offered (`--maps`: a factory spec, `google`),
    None when none: a result whose judge called a tool is redone when it changes."""
    score_name: str = DEFAULT_SCORE_NAME
    """The webeval score files' name (`--score-name`): `<traj dir>/scores/<name>_<task_id>.json`."""
    abandoned_wait_s: float = 600.0
    """How long an evaluation that ended with LLM calls still running (its judge timed out,
    its process ended) waits for them to end before its result is written, so the result can
    count what they cost: `run` gives the shorter of the judge's --timeout and the LLM call
    timeout. An evaluation that left no call running does not wait."""
    tasks: frozenset[str] | None = None
    """The tasks the inputs were limited to (`--task`); None: the inputs are every answer of
    their agents, so a result of a task with no input now has lost its answer (not counted,
    the task scored 0 as missing) where under a limit it is counted unchecked."""
    inputs_by_task: bool = False
    """Each task's inputs come from their own folder, not one input root per agent (`run
    --answers tasks/<id>`: every task's sample answers are agent `samples`, each task fed from
    its task folder). An agent's results folder then holds results of several inputs by
    design: a task's stored results must come from this run's folder for that task, where
    otherwise all of an agent's results must come from this run's input root."""
