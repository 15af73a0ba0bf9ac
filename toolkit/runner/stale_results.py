"""Which results of an agent's folder no longer stand for their inputs, found from the
folder alone: the runner's freshness test (`freshness.stale_reason`) for `judgegen report`.

A result records its input (`input_path`, found in any Unicode spelling of its names, as a run
finds its answers: `toolkit.names.on_disk`) and the fingerprint of what it was computed from.
`check_results` builds the fingerprint the inputs give now — the answer read as a run reads
it, the judge in the judges folder given, this judgegen's judge templates and toolkit code —
under the configuration the result records (backend, models, --maps provider: a run's
choice, not an input that can change under it), and asks `stale_reason`, the test a rerun
redoes a result by (its reasons worded as a run's summary words them: `outdated_reason`). What it cannot see (an input or judges folder not there, a page store
not given) it names in `FreshnessCheck.unchecked`: those results count as found, and say so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, Field

from toolkit.errors import NameCollision
from toolkit.names import on_disk
from toolkit.runner.fingerprint import Fingerprint, judge_templates_sha256, make_fingerprint
from toolkit.runner.freshness import (
    ANSWER_GONE,
    JudgeInfo,
    outdated_reason,
    resolve_judges,
    unstanding_reason,
)
from toolkit.runner.inputs import (
    DEFAULT_MAX_ANSWER_BYTES,
    AnswerInput,
    answer_input,
    trajectory_input,
)
from toolkit.runner.metrics import Summary
from toolkit.runner.results import EvaluationResult, input_folder, input_root
from toolkit.util.deferred import DEFERRED

FRESHNESS_CHECK_VERSION = 2


class StaleResult(BaseModel):
    """A result that no longer stands for its inputs now, and why."""

    model_config = DEFERRED

    task_id: str
    answer_name: str
    reason: str
    answer_exists: bool = Field(
        description="Its answer is still there: the pair is left out as not evaluated, not "
        "scored 0 as missing (as a run that stopped before redoing it leaves it)."
    )


class FreshnessCheck(BaseModel):
    """What checking the freshness of an agent's counted results found."""

    model_config = DEFERRED

    version: int = FRESHNESS_CHECK_VERSION
    checked: int = Field(default=0, description="Results checked (those the metrics count).")
    stale: list[StaleResult] = Field(
        default_factory=list,
        description="Results a rerun would redo (their answer, judge, judge templates, "
        "judgegen's toolkit code, cited pages or outcome changed, or their answer is gone): "
        "left out of the metrics, as a run's summary leaves out the outdated results it did "
        "not redo.",
    )
    unchecked: list[str] = Field(
        default_factory=list,
        description="What could not be checked, and why, with how many results: those are "
        "counted as found.",
    )
    allow_stale: bool = Field(
        default=False, description="--allow-stale: stale results do not make the exit code."
    )
    judges_dir: str | None = Field(
        default=None,
        description="The judges folder the results were checked against (the run's, or "
        "--judges when given): what a `stale` or `unchecked` entry is relative to. None in "
        "checks before version 2.",
    )
    pages_dir: str | None = Field(
        default=None,
        description="The page store the results were checked against (None: none, or a "
        "check before version 2).",
    )
    max_answer_bytes: int | None = Field(
        default=None,
        description="The answer size limit answers were read with (None: a check before "
        "version 2).",
    )


class ReportRecord(Summary):
    """`judgegen report --json`: the agent's summary recomputed from its result files (stale
    results left out), and what the freshness check found."""

    freshness: FreshnessCheck


@dataclass(frozen=True)
class InputsNow:
    """Where the inputs are now, as `judgegen run` is given them: the judges folder, the
    page store (None: none given) and the answer size limit."""

    judges_dir: Path
    pages: Any = None
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    pages_dir: Path | None = None
    """The folder of `pages` (None: none given), named in the check's record."""
    no_pages_as_run: bool = False
    """No page store, as the run recorded it read none: a cited page it found missing is
    missing to a rerun too. Otherwise a store may now hold it, so without one such a result
    is not checked."""


@dataclass
class _AnyApproval:
    """The judge policy of a freshness check: approval is no input of a result (a run holds
    an unapproved judge back, but its results were computed from the same bytes)."""

    judges_dir: Path
    reviews_dir: Path
    include_unreviewed: bool = True


async def check_results(results: Iterable[EvaluationResult], inputs: InputsNow) -> FreshnessCheck:
    """Which of `results` (one agent's) no longer stand for the inputs `inputs` locates now,
    and what could not be checked."""
    results = list(results)
    unchecked: Counter[str] = Counter()
    judges = _judges({r.task_id for r in results}, inputs.judges_dir)
    templates = judge_templates_sha256()
    check = FreshnessCheck(
        checked=len(results),
        judges_dir=str(inputs.judges_dir.resolve()),
        pages_dir=None if inputs.pages_dir is None else str(inputs.pages_dir.resolve()),
        max_answer_bytes=inputs.max_answer_bytes,
    )
    for stored in results:
        try:
            item, why = _input_now(stored, inputs.max_answer_bytes)
        except (OSError, NameCollision) as exc:
            item, why = None, f"an answer cannot be read ({exc}): its result was not compared"
        if why is not None:
            unchecked[why] += 1
            continue
        if item is None:
            check.stale.append(_stale(stored, ANSWER_GONE, answer_exists=False))
            continue
        judge = judges.get(stored.task_id)
        judge_sha256 = stored.fingerprint.judge_sha256
        if isinstance(judge, JudgeInfo) and judge.sha256 is not None:
            judge_sha256 = judge.sha256
        else:
            unchecked[judge if isinstance(judge, str) else _no_judge(inputs.judges_dir)] += 1
        now = _fingerprint_now(stored.fingerprint, judge_sha256, item.answer_sha256, templates)
        reads = stored.fingerprint.pages
        cited = reads is not None and bool(
            reads.read or reads.shots or (reads.missing and not inputs.no_pages_as_run)
        )
        check_pages = inputs.pages is not None or not cited
        if not check_pages:
            unchecked[_NO_PAGES] += 1
        why = await unstanding_reason(stored, item, now, inputs.pages, check_pages=check_pages)
        if why is not None:
            check.stale.append(_stale(stored, outdated_reason(why), answer_exists=True))
    check.unchecked = [f"{why} ({n} result(s))" for why, n in sorted(unchecked.items())]
    return check


_NO_PAGES = (
    "the cited pages results read from a page store were not compared (pass --pages DIR, "
    "the store `judgegen run` read)"
)


def _no_judge(judges_dir: Path) -> str:
    return (
        f"no judges folder {judges_dir}: the results' judges were not compared (pass "
        "--judges DIR, the folder `judgegen run` read)"
    )


def _judges(task_ids: set[str], judges_dir: Path) -> dict[str, JudgeInfo | str]:
    """Each task's judge now as a run reads it, or why its results' judge cannot be compared
    (none there: the judge may have moved with another --judges, so not a stale result)."""
    if not judges_dir.is_dir():
        return {}
    found = resolve_judges(task_ids, _AnyApproval(judges_dir, judges_dir))
    return {
        task: info
        if not info.missing
        else f"{info.problem}: its results' judge was not compared (pass --judges DIR)"
        for task, info in found.items()
    }


def _input_now(stored: EvaluationResult, max_bytes: int) -> tuple[AnswerInput | None, str | None]:
    """(the input of `stored` as a run would read it now, None when it is gone; why it cannot
    be looked at, when it cannot)."""
    recorded, task = stored.input_path, stored.task_id
    if not recorded or not Path(recorded).is_absolute():
        return None, (
            "results recording no absolute input path (written by an earlier judgegen): "
            "their answers were not compared"
        )
    recorded = str(on_disk(recorded))  # as a run finds it: its names in any spelling
    root = input_root(recorded, task)
    if not root.is_dir():
        return None, (
            f"the input folder {root} the results were computed from is not there (moved, or "
            "the results copied from elsewhere): their answers were not compared"
        )
    if stored.input_kind == "trajectory":
        folder = input_folder(recorded, task)
        if not folder.is_dir():
            return None, None
        return trajectory_input(stored.agent_name, folder, max_bytes), None
    path = Path(recorded)
    if not path.is_file():
        return None, None
    return answer_input(path, stored.agent_name, task, max_bytes), None


def _fingerprint_now(
    stored: Fingerprint, judge_sha256: str | None, answer_sha256: str, templates: str
) -> Fingerprint:
    """The fingerprint a run configured as `stored` records (backend, models, --maps
    provider) gives the judge and answer now, with this judgegen's templates and toolkit."""
    backend = SimpleNamespace(model=stored.judge_model, extract_model=stored.extract_model)
    return make_fingerprint(
        judge_sha256=judge_sha256,
        answer_sha256=answer_sha256,
        backend=backend,
        backend_spec=stored.backend,
        templates_digest=templates,
        tools=stored.tools,
    )


def _stale(stored: EvaluationResult, reason: str, *, answer_exists: bool) -> StaleResult:
    return StaleResult(
        task_id=stored.task_id,
        answer_name=stored.answer_name,
        reason=reason,
        answer_exists=answer_exists,
    )
