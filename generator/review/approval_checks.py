"""What a reviewer must hear before approving a judge: gaps between the judge's bytes, its
review record and its task spec.

An approval binds exact bytes, so it is only as good as what the reviewer read. These checks
name each way the review record (`reviews/<task_id>.json`) fails to vouch for the file being
approved: no record, a record of other bytes, a failed or skipped gate, an unmeasured kill
rate, mutations the judge failed on or scored lower only while a cited page was missing (not
evidence it notices them), or a spec edited since the judge was generated.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from generator.review.mutate import MutationStage, unproven_count
from generator.review.record import ReviewRecord
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
    mutation = record.mutation
    if mutation is None or not mutation.ran or mutation.kill_rate is None:
        why = mutation.summary_line() if mutation is not None else "not recorded"
        warnings.append(
            f"{sidecar}: mutation kill rate not measured ({why}); run "
            f"`judgegen mutate {task_id} --write-review` or regenerate with --pages PAGES"
        )
    if mutation is not None:
        warnings += _unproven_warnings(sidecar, mutation)
    return warnings


def _unproven_warnings(sidecar: Path, mutation: MutationStage) -> list[str]:
    """The mutations the recorded kill rate counts as not killed though none survived (errors,
    inconclusive), named with what to do; none when every mutation was killed or survived."""
    counted = unproven_count(mutation.errors, mutation.inconclusive)
    if not counted:
        return []
    named = "; ".join(mutation.unproven()[:3])
    more = len(mutation.unproven()) - 3
    named += f" (+{more} more)" if more > 0 else ""
    return [
        f"{sidecar}: mutation testing counts {counted} as not killed: {named}; "
        + "; ".join(mutation.unproven_fixes())
    ]


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
