"""An imported Mind2Web 2-style judge scores exactly as the same judge written natively."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.importer import import_judge
from tests.fixtures.m2w2 import scenario

CASES = [(answer, pattern) for answer in scenario.ANSWERS for pattern in scenario.PATTERNS]


@pytest.fixture(scope="module")
def imported_judge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated_judges")
    report = import_judge(scenario.M2W2_JUDGE, out)
    assert report.status == "written", report.problems
    return Path(report.output)


def test_import_changes_only_import_lines(imported_judge):
    before = scenario.M2W2_JUDGE.read_text().splitlines()
    after = imported_judge.read_text().splitlines()
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert len(changed) == 5
    for old, new in changed:
        assert old.startswith(("from mind2web2", "import mind2web2"))
        assert new.startswith(("from toolkit.", "import toolkit."))


def test_import_keeps_every_other_byte(imported_judge):
    before = scenario.M2W2_JUDGE.read_bytes().split(b"\n")
    after = imported_judge.read_bytes().split(b"\n")
    unchanged = [i for i, line in enumerate(before) if b"mind2web2" not in line]
    assert [after[i] for i in unchanged] == [before[i] for i in unchanged]


@pytest.mark.parametrize(("answer", "pattern"), CASES)
async def test_imported_and_native_trees_and_scores_are_identical(imported_judge, answer, pattern):
    imported = await scenario.run(imported_judge, answer, pattern)
    native = await scenario.run(scenario.NATIVE_JUDGE, answer, pattern)
    assert imported.tree == native.tree
    assert imported.summary["final_score"] == native.summary["final_score"]
    assert imported.summary["status"] == "complete"


@pytest.mark.parametrize("pattern", ["all_pass", "all_fail", "mix:1"])
async def test_imported_judge_makes_the_same_backend_and_tool_calls(imported_judge, pattern):
    imported = await scenario.run(imported_judge, "complete", pattern)
    native = await scenario.run(scenario.NATIVE_JUDGE, "complete", pattern)
    assert (imported.extract_calls, imported.verify_calls, imported.tool_calls) == (
        native.extract_calls,
        native.verify_calls,
        native.tool_calls,
    )


async def test_imported_summary_equals_native_summary(imported_judge):
    imported = await scenario.run(imported_judge, "wrong_city", "mix:2")
    native = await scenario.run(scenario.NATIVE_JUDGE, "wrong_city", "mix:2")
    assert imported.summary == native.summary


async def test_verdict_patterns_lead_to_different_scores(imported_judge):
    scores = {
        pattern: (await scenario.run(imported_judge, "complete", pattern)).summary["final_score"]
        for pattern in ("all_pass", "all_fail")
    }
    assert scores["all_fail"] == 0.0
    assert scores["all_pass"] > 0.5


async def test_failed_critical_custom_node_skips_later_leaves_without_calls(imported_judge):
    outcome = await scenario.run(imported_judge, "one_store_missing_page", "all_pass")
    store_1 = outcome.tree["children"][1]
    assert store_1["children"][0]["status"] == "failed"
    assert store_1["children"][1]["status"] == "skipped"
