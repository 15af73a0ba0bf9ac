"""Whether a task's judge was generated from the task's spec as it is now, and checked
against the scores its author intends now.

The judge's provenance header names the spec it was generated from (its sha256); an author
who edits the rubric and forgets to regenerate would otherwise get scores by the old rubric
unseen. Its review record keeps the intended scores acceptance compared it with; labels
edited since (`labels/`, `intended_scores`) were never checked against the judge. Lean on
purpose (specs, labels, headers and records only): `judgegen run` checks its tasks with it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from generator.stages.provenance import Provenance
from generator.stages.spec import MARKDOWN_SPEC_FILE, SPEC_FILE, LoadedSpec, load_spec
from toolkit.names import entry_path

STALENESS_VERSION = 1


class Staleness(BaseModel):
    """Whether a task's judge was generated from the task's current spec."""

    version: int = STALENESS_VERSION
    task_id: str
    judge_path: str
    has_judge: bool
    judge_spec_sha256: str | None = Field(description="From the judge's provenance header.")
    spec_sha256: str = Field(description="Of the spec as it is now.")

    @property
    def stale(self) -> bool:
        """True when a judge exists and its header names another spec (or no spec at all)."""
        return self.has_judge and self.judge_spec_sha256 != self.spec_sha256


def judge_file(judges_dir: str | Path, task_id: str) -> Path:
    """Where the judge of `task_id` lives (named by the id in any Unicode spelling:
    `toolkit.names`)."""
    return entry_path(judges_dir, task_id, ".py", "judge")


def staleness(loaded: LoadedSpec, judges_dir: str | Path) -> Staleness:
    """Compare the spec's sha256 with the one in the judge's provenance header."""
    path = judge_file(judges_dir, loaded.task_id)
    provenance = Provenance.from_header(path.read_text("utf-8")) if path.is_file() else None
    return Staleness(
        task_id=loaded.task_id,
        judge_path=str(path),
        has_judge=path.is_file(),
        judge_spec_sha256=provenance.spec_sha256 if provenance else None,
        spec_sha256=loaded.sha256(),
    )


def task_folders(tasks_dir: str | Path) -> list[Path]:
    """Every folder under `tasks_dir` holding a spec, sorted by name."""
    root = Path(tasks_dir)
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and ((p / SPEC_FILE).is_file() or (p / MARKDOWN_SPEC_FILE).is_file())
    )


def find_stale(tasks_dir: str | Path, judges_dir: str | Path) -> list[Staleness]:
    """The stale tasks under `tasks_dir`: a judge exists and was made from another spec.

    A task without a judge (a scaffold still being written, say) is never stale, so its spec
    is not even read.
    """
    found = [
        staleness(load_spec(folder, tasks_dir), judges_dir)
        for folder in task_folders(tasks_dir)
        if judge_file(judges_dir, folder.name).is_file()
    ]
    return [item for item in found if item.stale]


def intent_changes(loaded: LoadedSpec, reviews_dir: str | Path) -> list[str]:
    """How the intended scores of the task's sample answers differ from those its judge's
    acceptance compared it with (`reviews/<id>.json`), one "answer: old → new" each; nothing
    when they agree, or when no record shows an acceptance that ran."""
    from generator.review.labels import intended_labels

    record_path = Path(reviews_dir) / f"{loaded.task_id}.json"
    try:
        acceptance = json.loads(record_path.read_text("utf-8")).get("acceptance") or {}
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(acceptance, dict) or not acceptance.get("ran"):
        return []
    checked = {
        str(item.get("answer")): item.get("intended")
        for item in acceptance.get("answers") or []
        if isinstance(item, dict)
    }
    now = {name: label.root_score for name, label in intended_labels(loaded).items()}
    return [
        f"{name}: {_shown(checked.get(name))} → {_shown(now.get(name))}"
        for name in sorted(checked.keys() | now.keys())
        if checked.get(name) != now.get(name)
    ]


def _shown(score: object) -> str:
    return "none" if score is None else f"{score:g}" if isinstance(score, float | int) else "?"
