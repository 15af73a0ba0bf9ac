"""Which `--score-name`s a results folder wrote webeval score files under, so it writes under
one at a time.

A results folder rerun under another name writes `scores/<new>_<task_id>.json`; its files
under the old name would stay, still naming it (`judgegen_results_folder`) while holding the
scores it had then, and a reader of the old name (the default one) would read them as
current. So the folder records every name it wrote under in `RESULTS/score_names.json`
(`ScoreNames`), and a run under one name withdraws, for each of its trajectories, the files
under the others that name its folder: every score file naming a results folder then agrees
with that folder's result, or does not exist. Files another results folder wrote, or naming
none, are never touched. A folder with no record (written before judgegen kept one) has its
trajectories' `scores/` folders searched once for files naming it instead.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from toolkit.runner.options import score_name_problem
from toolkit.runner.results import ScoreFiles, score_file_task, score_file_writer, write_output
from toolkit.util.deferred import DEFERRED

SCORE_NAMES_FILE = "score_names.json"
SCORE_NAMES_VERSION = 1

Trajectories = Sequence[tuple[Path, str]]
"""(traj dir, task id) of each trajectory a run covers."""


class ScoreNames(BaseModel):
    """`RESULTS/score_names.json`: the score names a results folder wrote score files under."""

    model_config = DEFERRED

    version: int = SCORE_NAMES_VERSION
    names: list[str] = Field(
        description="Every --score-name this results folder wrote webeval score files under "
        "(`<traj dir>/scores/<name>_<task_id>.json`), sorted; a run under one of them "
        "withdraws its files under the others."
    )

    @field_validator("names")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        """Only plain file-name fragments: a name is joined into paths of files to remove."""
        for name in names:
            problem = score_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        return names


def read_score_names(results_dir: Path) -> set[str] | None:
    """The names `results_dir` records, or None when it records none (no record, or one that
    cannot be read or is of another version)."""
    try:
        record = ScoreNames.model_validate_json((results_dir / SCORE_NAMES_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None
    return set(record.names) if record.version == SCORE_NAMES_VERSION else None


def found_score_names(trajectories: Trajectories, writer: Path) -> set[str]:
    """The names under which `trajectories` have score files naming `writer`, found by
    listing their `scores/` folders (for a results folder that keeps no record)."""
    ours, found = str(writer), set()
    for traj_dir, task_id in trajectories:
        suffix = f"_{score_file_task(traj_dir, task_id)}.json"
        try:
            with os.scandir(os.path.join(traj_dir, "scores")) as entries:
                names = [e.name[: -len(suffix)] for e in entries if e.name.endswith(suffix)]
        except OSError:
            continue
        for name in names:
            if name in found or score_name_problem(name) is not None:
                continue
            try:
                path = os.path.join(traj_dir, "scores", f"{name}{suffix}")
                if score_file_writer(path, ours) == ours:
                    found.add(name)
            except FileNotFoundError:
                continue
    return found


def score_files_for(results_dir: Path, name: str, trajectories: Trajectories) -> ScoreFiles:
    """The score files a run writing `results_dir` under `name` writes, with the other names
    the folder wrote under as `earlier`: those it records, or with no record those its files
    among `trajectories` are found under."""
    scores = ScoreFiles.of(results_dir, name)
    if not trajectories:  # a run over answers writes no score file
        return scores
    known = read_score_names(results_dir)
    if known is None:
        known = found_score_names(trajectories, scores.writer)
    return replace(scores, earlier=tuple(sorted(known - {name})))


def record_score_names(results_dir: Path, scores: ScoreFiles) -> None:
    """Record that `results_dir` wrote under `scores`' name and earlier names, before it
    writes any file under the name; the record is rewritten only when that changes it."""
    names = sorted({scores.name, *scores.earlier})
    if read_score_names(results_dir) == set(names):
        return
    write_output(
        results_dir / SCORE_NAMES_FILE, ScoreNames(names=names).model_dump_json(indent=2) + "\n"
    )


def withdraw_earlier_names(scores: ScoreFiles, trajectories: Trajectories) -> dict[str, int]:
    """Remove the score files of `trajectories` under `scores`' earlier names that name its
    results folder; how many, by name."""
    withdrawn: Counter[str] = Counter()
    if scores.earlier:
        for traj_dir, task_id in trajectories:
            withdrawn.update(scores.withdraw_earlier(traj_dir, task_id))
    return dict(sorted(withdrawn.items()))
