"""What a reviewer must hear before approving a judge: gaps between the judge's bytes, its
review record and its task spec.

An approval binds exact bytes, so it is only as good as what the reviewer read. These checks
name each way the review record (`reviews/<task_id>.json`) fails to vouch for the file being
approved: no record, a record of other bytes, a failed or skipped gate, an unmeasured kill
rate (or one measured on other bytes, or under other mutation kinds than judgegen applies now:
generate's and `judgegen mutate --write-review`'s, read as the latest through
`latest_mutation_testing`), mutations the judge failed on or scored lower
only while a cited page was missing (not evidence it notices them), a rewrite keeping an
answer's meaning whose score changed, or a spec edited since the judge was generated.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from generator.review.mutate import REWRITE_FIX, first_named
from generator.review.mutation_testing import (
    LatestMutationTesting,
    MutationMeasurement,
    read_latest_mutation_testing,
)
from generator.review.record import REVIEW_VERSION, ReviewRecord
from generator.review.staleness import staleness
from generator.stages.spec import load_spec
from toolkit.errors import SpecError
from toolkit.util.hashing import sha256_file


def approval_warnings(
    task_id: str, judge: Path, reviews_dir: Path, tasks_dir: Path | None = None
) -> list[str]:
    """Why the review record of `judge` does not vouch for its current bytes, one line each
    (file, field, fix); empty when the record describes exactly these bytes and every gate ran
    and passed."""
    warnings = _record_warnings(task_id, sha256_file(judge), reviews_dir)
    if tasks_dir is not None:
        warnings += _spec_warnings(task_id, judge, tasks_dir)
    return warnings


def _record_warnings(task_id: str, judge_sha256: str, reviews_dir: Path) -> list[str]:
    sidecar = reviews_dir / f"{task_id}.json"
    if not sidecar.is_file():
        return [
            f"{sidecar}: no review record, so nothing shows the judge passed generate's gates; "
            f"generate it (`judgegen generate {task_id}`) or check it by hand "
            f"(`judgegen validate`, `judgegen mutate --write-review`)"
        ]
    try:
        record = ReviewRecord.model_validate_json(sidecar.read_bytes())
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        return [f"{sidecar}: unreadable review record ({first}); regenerate it"]
    warnings = []
    if record.version > REVIEW_VERSION:
        warnings.append(
            f"{sidecar}: version is {record.version}, a newer judgegen's (this one reads up to "
            f"{REVIEW_VERSION}): what it records beyond that is not checked here; approve with "
            "that judgegen"
        )
    if record.judge_sha256 != judge_sha256:
        warnings.append(
            f"{sidecar}: judge_sha256 is {str(record.judge_sha256)[:19]}…, but the judge is "
            f"now {judge_sha256[:19]}…: the review record describes other bytes (edited since "
            f"generation); review the edit (`judgegen diff {task_id}`) or regenerate the record"
        )
    if record.status != "published":
        warnings.append(f"{sidecar}: status is '{record.status}'; regenerate the judge")
    acceptance = record.acceptance
    if acceptance is None or not acceptance.ran:
        note = acceptance.note if acceptance is not None else "not recorded"
        warnings.append(
            f"{sidecar}: acceptance did not run ({note}): the intended scores were never "
            f"checked; regenerate with --pages PAGES"
        )
    elif not acceptance.ok:
        warnings.append(f"{sidecar}: acceptance failed ({acceptance.summary_line(cost=False)})")
    try:
        latest = read_latest_mutation_testing(sidecar, judge_sha256)
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        return [
            *warnings,
            f"{sidecar}: unreadable mutation_testing ({first}); rerun "
            f"`judgegen mutate {task_id} --write-review`",
        ]
    return warnings + _mutation_warnings(task_id, sidecar, latest, judge_sha256)


def _mutation_warnings(
    task_id: str, sidecar: Path, latest: LatestMutationTesting, judge_sha256: str
) -> list[str]:
    """Why the record's latest mutation testing does not vouch for these bytes: it measured
    other bytes, applied other mutation kinds than judgegen's current ones, measured nothing,
    or counts errors or inconclusive mutations as not killed."""
    rerun = f"`judgegen mutate {task_id} --write-review`"
    if latest.current is None and latest.stale is not None:
        stale = latest.stale
        return [
            f"{sidecar}: mutation testing is stale: {stale.summary}, by {stale.where}, was "
            f"measured on judge bytes {str(stale.judge_sha256)[:19]}…, but the judge is now "
            f"{judge_sha256[:19]}…: nothing measured the kill rate of the judge being approved; "
            f"regenerate it (`judgegen regenerate {task_id}`: its record then measures these "
            f"bytes) or measure them (`judgegen mutate {task_id}`)"
        ]
    current = latest.current
    if current is None:
        return [
            f"{sidecar}: mutation kill rate not measured (not recorded); run {rerun} or "
            "regenerate with --pages PAGES"
        ]
    warnings = [f"{sidecar}: {note}" for note in current.notes]
    if current.kinds_change is not None:
        warnings.append(
            f"{sidecar}: mutation testing is stale: {current.summary}, by {current.where}, "
            f"applied other mutation kinds than judgegen applies now ({current.kinds_change}): "
            f"that kill rate is not over the current set of mutations; measure it again with "
            f"{rerun} (or regenerate the judge: its record then applies the current kinds)"
        )
    if not current.measured:
        warnings.append(
            f"{sidecar}: mutation kill rate not measured ({current.summary}); run {rerun} or "
            "regenerate with --pages PAGES"
        )
    return warnings + _unproven_warnings(sidecar, current) + _rewrite_warnings(sidecar, current)


def _rewrite_warnings(sidecar: Path, measured: MutationMeasurement) -> list[str]:
    """The rewrites keeping an answer's meaning whose score changed, named with the fix."""
    if not measured.rewrites_changed:
        return []
    named = first_named(measured.rewrites_changed)
    return [
        f"{sidecar}: a rewrite keeping the answer's meaning changed the judge's score: {named}; "
        f"{REWRITE_FIX} (recorded by {measured.where})"
    ]


def _unproven_warnings(sidecar: Path, measured: MutationMeasurement) -> list[str]:
    """The mutations the kill rate counts as not killed though none survived (errors,
    inconclusive), named with what to do; none when every mutation was killed or survived."""
    if not measured.unproven_counted:
        return []
    named = first_named(measured.unproven)
    return [
        f"{sidecar}: mutation testing counts {measured.unproven_counted} as not killed"
        f"{': ' + named if named else ''}; "
        + "; ".join(measured.fixes)
        + f" (recorded by {measured.where})"
    ]


def latest_kill_rate(task_id: str, judge: Path, reviews_dir: Path) -> MutationMeasurement | None:
    """The review record's latest mutation testing of `judge`'s current bytes, when it measured
    a kill rate (None otherwise, or when it cannot be read: `approval_warnings` says why)."""
    try:
        latest = read_latest_mutation_testing(reviews_dir / f"{task_id}.json", sha256_file(judge))
    except (OSError, ValidationError, ValueError):
        return None
    return latest.current if latest.current is not None and latest.current.measured else None


def _spec_warnings(task_id: str, judge: Path, tasks_dir: Path) -> list[str]:
    """The judge's provenance header against the task's spec as it is now (`staleness`, the
    check `judgegen run` and `regenerate` make)."""
    if not (tasks_dir / task_id).is_dir():
        return []
    try:
        state = staleness(load_spec(task_id, tasks_dir), judge.parent)
    except (SpecError, ValidationError, UnicodeDecodeError) as exc:
        return [f"{judge}: cannot compare with the spec in {tasks_dir / task_id} ({exc})"]
    if state.judge_spec_sha256 is None:
        return [
            f"{judge}: no provenance header (spec_sha256), so nothing shows which spec it "
            f"judges; regenerate it (`judgegen regenerate {task_id} --force`)"
        ]
    if state.stale:
        return [
            f"{judge}: header spec_sha256 is {state.judge_spec_sha256[:19]}…, but "
            f"{tasks_dir / task_id} is now {state.spec_sha256[:19]}…: the spec changed since "
            f"the judge was generated; regenerate it (`judgegen regenerate {task_id}`) before "
            "approving"
        ]
    return []
