"""Which recorded mutation testing is the judge's: the newest measured on its current bytes."""

from __future__ import annotations

from generator.review.mutate import MutationReport, MutationRow, MutationStage
from generator.review.mutation_testing import MutationTesting, latest_mutation_testing

JUDGE = "sha256:" + "a" * 64
EDITED = "sha256:" + "b" * 64


def _report(*outcomes: str) -> MutationReport:
    rows = [
        MutationRow(name=f"m{i}", description=f"change {i}", score=0.5, outcome=outcome)  # type: ignore[arg-type]
        for i, outcome in enumerate(outcomes)
    ]
    return MutationReport(task_id="t", answer="good", original_score=1.0, mutations=rows)


STAGE = MutationStage(reports=[_report("killed", "survived")])


def _sidecar(report: MutationReport, measured_on: str) -> dict:
    return {"mutation_testing": MutationTesting.of(report, measured_on, None).model_dump()}


def test_a_later_mutate_write_review_of_the_same_bytes_wins() -> None:
    sidecar = _sidecar(_report("killed", "killed"), JUDGE)
    latest = latest_mutation_testing(sidecar, STAGE, JUDGE, JUDGE)
    assert latest.current is not None and latest.current.source == "mutate"
    assert latest.current.summary == "kill rate 1.00 (2 of 2 mutations of good)"


def test_a_later_measurement_of_other_bytes_does_not_replace_one_of_these() -> None:
    sidecar = _sidecar(_report("killed", "killed"), EDITED)
    latest = latest_mutation_testing(sidecar, STAGE, JUDGE, JUDGE)
    assert latest.current is not None and latest.current.source == "generate"


def test_without_a_measurement_of_these_bytes_the_newest_is_stale() -> None:
    sidecar = _sidecar(_report("killed", "killed"), JUDGE)
    latest = latest_mutation_testing(sidecar, STAGE, JUDGE, EDITED)
    assert latest.current is None
    assert latest.stale is not None and latest.stale.source == "mutate"
