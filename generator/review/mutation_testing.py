"""The judge's latest mutation testing: generate's mutation stage or a later
`judgegen mutate --write-review`, whichever is newest and was measured on the judge's bytes.

A review record can hold two kill rates: `mutation` (written by `generate`, of the bytes it
published) and `mutation_testing` (written by `judgegen mutate --write-review`, of the bytes it
ran on). `generate` rewrites the sidecar without `mutation_testing`, so when both are there the
latter is the newer. Approving reads them only through `latest_mutation_testing`, so a kill rate
measured on other bytes is never presented as the judge's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from generator.review.cost import LLMSpend
from generator.review.mutate import (
    MutationReport,
    MutationStage,
    kinds_change,
    unproven_count,
    unproven_fixes,
    unproven_note,
)
from generator.review.record import ReviewRecord

# the sidecar's mutation_testing; 2: `llm`, the run's calls and cost; 3: `inconclusive`, and a
# kill_rate counting errors and inconclusive mutations as not killed; 4: `report`, every row;
# 5: a `report` naming the mutation kinds it applied (`MutationReport.kinds`); 6: a `report`
# with the meaning-preserving rewrites (`MutationReport.rewrites`)
MUTATION_REPORT_VERSION = 6
SIDECAR_KEY = "mutation_testing"
Source = Literal["generate", "mutate"]
SOURCES = {
    "generate": "generate's mutation stage (`mutation`)",
    "mutate": "`judgegen mutate --write-review` (`mutation_testing`)",
}


class MutationTesting(BaseModel):
    """What `judgegen mutate --write-review` records under the sidecar's `mutation_testing`."""

    version: int = MUTATION_REPORT_VERSION
    answer: str
    mutations: int
    killed: int
    inconclusive: int = Field(default=0, description="0 in versions before 3 (not told apart).")
    errors: int = 0
    kill_rate: float | None
    judge_sha256: str = Field(description="sha256 of the judge bytes the mutations ran on.")
    llm: LLMSpend | None = None
    report: MutationReport | None = Field(
        default=None, description="Every mutation and its outcome; None before version 4."
    )

    @classmethod
    def of(
        cls, report: MutationReport, judge_sha256: str, spend: LLMSpend | None
    ) -> MutationTesting:
        """The record of `report`, measured on the judge bytes `judge_sha256`."""
        return cls(
            answer=report.answer,
            mutations=len(report.mutations),
            killed=report.killed,
            inconclusive=report.inconclusive,
            errors=report.errors,
            kill_rate=report.kill_rate,
            judge_sha256=judge_sha256,
            llm=spend,
            report=report,
        )


class MutationMeasurement(BaseModel):
    """One recorded mutation testing of a judge, as approve presents it."""

    source: Source
    judge_sha256: str | None = Field(description="The judge bytes it was measured on.")
    measured: bool = Field(description="Whether it produced a kill rate.")
    summary: str = Field(description="`kill rate 0.67 (4 of 6 mutations of good)` or why not.")
    unproven_counted: str = Field(description="`1 error and 2 inconclusive`, or empty.")
    unproven: list[str] = Field(description="Each error or inconclusive mutation, named.")
    fixes: list[str] = Field(description="What to do about them, one line per kind.")
    notes: list[str] = Field(default_factory=list, description="Doubts about the record itself.")
    kinds_change: str | None = Field(
        default=None,
        description="How judgegen's mutation kinds changed since it was measured (`kinds_change`):"
        " its kill rate is over another set of mutations; None when they are the current ones.",
    )
    rewrites_changed: list[str] = Field(
        default_factory=list,
        description="Each rewrite keeping an answer's meaning whose score changed "
        "(`MutationStage.rewrites_changed`): the judge reads how a value is written.",
    )

    @property
    def where(self) -> str:
        """Which command and field of the record measured it."""
        return SOURCES[self.source]

    def shown(self) -> str:
        """`kill rate 0.67 (...), by <where>`, marked stale when measured under other kinds."""
        stale = f" [stale: other mutation kinds ({self.kinds_change})]" if self.kinds_change else ""
        return f"{self.summary}, by {self.where}{stale}"


class LatestMutationTesting(BaseModel):
    """The newest measurement of the judge's current bytes, else the newest of other bytes."""

    current: MutationMeasurement | None
    stale: MutationMeasurement | None


def _of_stage(stage: MutationStage, judge_sha256: str | None) -> MutationMeasurement:
    return MutationMeasurement(
        source="generate",
        judge_sha256=judge_sha256,
        measured=stage.ran and stage.kill_rate is not None,
        summary=stage.summary_line(),
        unproven_counted=unproven_count(stage.errors, stage.inconclusive),
        unproven=stage.unproven(),
        fixes=stage.unproven_fixes(),
        kinds_change=stage.kinds_change() if stage.ran else None,
        rewrites_changed=stage.rewrites_changed(),
    )


def _of_mutate(recorded: MutationTesting) -> MutationMeasurement:
    if recorded.report is not None:
        stage = MutationStage(reports=[recorded.report])
        return _of_stage(stage, recorded.judge_sha256).model_copy(update={"source": "mutate"})
    survived = recorded.mutations - recorded.killed - recorded.errors - recorded.inconclusive
    judged = recorded.killed + survived > 0
    rate = recorded.killed / recorded.mutations if judged else None
    counted = unproven_count(recorded.errors, recorded.inconclusive)
    if rate is not None:
        summary = (
            f"kill rate {rate:.2f} ({recorded.killed} of {recorded.mutations} mutations of "
            f"{recorded.answer}{unproven_note(recorded.errors, recorded.inconclusive)})"
        )
    elif counted:
        summary = f"no mutation was judged conclusively ({counted})"
    else:
        summary = f"no mutation applies to {recorded.answer}"
    notes = []
    if recorded.version < 3:
        notes.append(
            f"recorded by an older judgegen (version {recorded.version}): a score drop while a "
            "cited page was missing counted as a kill then; rerun `judgegen mutate "
            "--write-review` for a rate that tells them apart"
        )
    return MutationMeasurement(
        source="mutate",
        judge_sha256=recorded.judge_sha256,
        measured=rate is not None,
        summary=summary,
        unproven_counted=counted,
        unproven=[],
        fixes=unproven_fixes(recorded.errors, recorded.inconclusive),
        notes=notes,
        kinds_change=kinds_change(None),
    )


def latest_mutation_testing(
    sidecar: dict[str, Any],
    stage: MutationStage | None,
    record_judge_sha256: str | None,
    judge_sha256: str,
) -> LatestMutationTesting:
    """The latest mutation testing of the judge whose bytes are `judge_sha256`, from the raw
    sidecar (its `mutation_testing`) and the record's generate stage (`stage`, of the bytes
    `record_judge_sha256`). Newest first, the first measured on these bytes is `current`; when
    none was, the newest is `stale`. Raises ValueError when `mutation_testing` is malformed."""
    measurements = []
    if sidecar.get(SIDECAR_KEY) is not None:
        measurements.append(_of_mutate(MutationTesting.model_validate(sidecar[SIDECAR_KEY])))
    if stage is not None:
        measurements.append(_of_stage(stage, record_judge_sha256))
    current = next((m for m in measurements if m.judge_sha256 == judge_sha256), None)
    stale = measurements[0] if current is None and measurements else None
    return LatestMutationTesting(current=current, stale=stale)


def read_latest_mutation_testing(sidecar: Path, judge_sha256: str) -> LatestMutationTesting:
    """`latest_mutation_testing` of the review record at `sidecar` for the judge bytes
    `judge_sha256`. Raises OSError, or ValueError when the record is malformed."""
    raw = sidecar.read_bytes()
    record = ReviewRecord.model_validate_json(raw)
    return latest_mutation_testing(
        json.loads(raw), record.mutation, record.judge_sha256, judge_sha256
    )
