"""The approval gate: a reviewer binds their name to one exact judge (its sha256).

`reviews/<task_id>.approval.json` records who approved which bytes; the runner executes a
judge only while its current sha256 equals the approved one, so any edit needs a new review.
Task ids match in any Unicode spelling (`toolkit.names`): a record or judge spelled NFD on disk
is the one of the task id spelled NFC.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from toolkit.errors import SpecError
from toolkit.names import canonical_name, entry_path
from toolkit.util.files import write_atomic
from toolkit.util.hashing import sha256_file

APPROVAL_VERSION = 1


class Approval(BaseModel):
    """One reviewer's approval of one judge revision."""

    version: int = APPROVAL_VERSION
    task_id: str
    reviewer: str = Field(min_length=1, description="Who read the judge and its review record.")
    date: datetime = Field(description="When the approval was given (UTC).")
    judge_sha256: str = Field(description="sha256 of the judge file that was approved.")
    judge_path: str = Field(default="", description="Path of the judge as given when approving.")


def approval_path(reviews_dir: str | Path, task_id: str) -> Path:
    """Where the approval of `task_id` lives (as spelled on disk, else canonically)."""
    return entry_path(reviews_dir, task_id, ".approval.json", "approval record")


def approve(
    task_id: str,
    *,
    reviewer: str,
    judges_dir: str | Path,
    reviews_dir: str | Path,
    now: datetime | None = None,
) -> Approval:
    """Record `reviewer`'s approval of the current `judges_dir/<task_id>.py`."""
    judge = entry_path(judges_dir, task_id, ".py", "judge")
    task_id = canonical_name(task_id)
    if not judge.is_file():
        raise SpecError(str(judge), "judge", "no such judge file", "generate or write it first")
    if not reviewer.strip():
        raise SpecError("--reviewer", "reviewer", "is empty", "pass the reviewer's name")
    record = Approval(
        task_id=task_id,
        reviewer=reviewer.strip(),
        date=now or datetime.now(UTC),
        judge_sha256=sha256_file(judge),
        judge_path=_portable(judge),
    )
    write_atomic(approval_path(reviews_dir, task_id), record.model_dump_json(indent=2) + "\n")
    return record


def _portable(path: Path) -> str:
    """The path relative to the working directory when inside it: no machine-specific prefix
    ends up in a committed approval."""
    relative = os.path.relpath(path.resolve())
    return Path(relative).as_posix() if not relative.startswith("..") else str(path)


def load_approval(reviews_dir: str | Path, task_id: str) -> Approval | None:
    """The recorded approval, or None when there is none; a corrupt file is a SpecError."""
    path = approval_path(reviews_dir, task_id)
    if not path.is_file():
        return None
    try:
        record = Approval.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError) as exc:
        raise SpecError(
            str(path), "approval", f"invalid: {exc}", "re-run `judgegen approve`"
        ) from exc
    if record.version > APPROVAL_VERSION:  # what it adds (a scope, a revocation) unread
        raise SpecError(
            str(path),
            "version",
            f"{record.version}: a newer judgegen wrote it (this one reads up to "
            f"{APPROVAL_VERSION}), so it is not taken as an approval",
            "run the judge with that judgegen, or re-run `judgegen approve` with this one",
        )
    return record


def approval_problem(judge_path: str | Path, reviews_dir: str | Path, task_id: str) -> str | None:
    """Why the judge file may not run (see `approval_problem_for`), or None if approved."""
    return approval_problem_for(sha256_file(judge_path), reviews_dir, task_id)


def approval_problem_for(judge_sha256: str, reviews_dir: str | Path, task_id: str) -> str | None:
    """Why judge bytes hashing to `judge_sha256` may not run as `task_id`: no approval, an
    approval of another task, or of other bytes; None when approved."""
    try:
        record = load_approval(reviews_dir, task_id)
    except SpecError as exc:
        return str(exc)
    if record is None:
        return "not reviewed (no approval record)"
    if canonical_name(record.task_id) != canonical_name(task_id):
        where = approval_path(reviews_dir, task_id)
        return f"{where} approves task '{record.task_id}', not '{task_id}'"
    if record.judge_sha256 != judge_sha256:
        return (
            f"changed since {record.reviewer} approved it on {record.date:%Y-%m-%d} "
            f"(approved {record.judge_sha256[:19]}…, now {judge_sha256[:19]}…)"
        )
    return None
