"""Imported Mind2Web 2-style judges score exactly as the same judges written natively."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.importer import import_judge
from tests.fixtures.m2w2 import scenario
from tests.fixtures.m2w2.scenario import TASKS

CASES = [
    pytest.param(task, answer, pattern, id=f"{task.name}-{answer}-{pattern}")
    for task in TASKS.values()
    for answer in task.answers
    for pattern in scenario.PATTERNS
]
BOOKSTORES = TASKS["portland_bookstores"]
STOPS = TASKS["cascades_stops"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each task's Mind2Web 2-style judge after `judgegen import`."""
    out = tmp_path_factory.mktemp("generated_judges")
    paths = {}
    for task in TASKS.values():
        report = import_judge(task.m2w2_judge, out)
        assert report.status == "written", report.problems
        paths[task.name] = Path(report.output)
    return paths


@pytest.mark.parametrize(
    ("task", "rewritten"), [(BOOKSTORES, 5), (STOPS, 3)], ids=[BOOKSTORES.name, STOPS.name]
)
def test_import_changes_only_import_lines(imported, task, rewritten):
    before = task.m2w2_judge.read_text().splitlines()
    after = imported[task.name].read_text().splitlines()
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert len(changed) == rewritten
    for old, new in changed:
        assert old.startswith(("from mind2web2", "import mind2web2"))
        assert new.startswith(("from toolkit.", "import toolkit."))


@pytest.mark.parametrize("task", TASKS.values(), ids=list(TASKS))
def test_import_keeps_every_other_byte(imported, task):
    before = task.m2w2_judge.read_bytes().split(b"\n")
    after = imported[task.name].read_bytes().split(b"\n")
    unchanged = [
        i
        for i, line in enumerate(before)
        if not line.startswith((b"from mind2web2", b"import mind2web2"))
    ]
    assert [after[i] for i in unchanged] == [before[i] for i in unchanged]


@pytest.mark.parametrize(("task", "answer", "pattern"), CASES)
async def test_imported_and_native_trees_and_scores_are_identical(imported, task, answer, pattern):
    mine = await scenario.run(task, imported[task.name], answer, pattern)
    native = await scenario.run(task, task.native_judge, answer, pattern)
    assert mine.tree == native.tree
    assert mine.summary["final_score"] == native.summary["final_score"]
    assert mine.summary["status"] == "complete"


@pytest.mark.parametrize("pattern", ["all_pass", "all_fail", "mix:1"])
async def test_imported_judge_makes_the_same_backend_and_tool_calls(imported, pattern):
    mine = await scenario.run(BOOKSTORES, imported[BOOKSTORES.name], "complete", pattern)
    native = await scenario.run(BOOKSTORES, BOOKSTORES.native_judge, "complete", pattern)
    assert (mine.extract_calls, mine.verify_calls, mine.tool_calls) == (
        native.extract_calls,
        native.verify_calls,
        native.tool_calls,
    )


@pytest.mark.parametrize("task", TASKS.values(), ids=list(TASKS))
async def test_imported_summary_equals_native_summary(imported, task):
    answer = next(iter(task.answers))
    mine = await scenario.run(task, imported[task.name], answer, "mix:2")
    native = await scenario.run(task, task.native_judge, answer, "mix:2")
    assert without_judge_lines(mine.summary) == without_judge_lines(native.summary)


def without_judge_lines(summary: dict) -> dict:
    """`summary` without the judge source line of each verification: the imported and the
    native judge are different files, so only their lines may differ."""
    verifications = [
        {key: value for key, value in entry.items() if key != "line"}
        for entry in summary.get("verifications", [])
    ]
    return {**summary, "verifications": verifications}


async def test_verdict_patterns_lead_to_different_scores(imported):
    path = imported[BOOKSTORES.name]
    passing = await scenario.run(BOOKSTORES, path, "complete", "all_pass")
    failing = await scenario.run(BOOKSTORES, path, "complete", "all_fail")
    assert failing.summary["final_score"] == 0.0
    assert passing.summary["final_score"] > 0.5


async def test_failed_critical_custom_node_skips_later_leaves(imported):
    outcome = await scenario.run(
        BOOKSTORES, imported[BOOKSTORES.name], "one_store_missing_page", "all_pass"
    )
    store_1 = outcome.tree["children"][1]
    assert [child["status"] for child in store_1["children"][:2]] == ["failed", "skipped"]


async def test_sequential_root_skips_stops_after_the_first_failure(imported):
    outcome = await scenario.run(STOPS, imported[STOPS.name], "second_unsourced", "all_pass")
    assert [child["status"] for child in outcome.tree["children"]] == [
        "passed",
        "failed",
        "skipped",
    ]
    assert outcome.summary["final_score"] == pytest.approx(1 / 3)
