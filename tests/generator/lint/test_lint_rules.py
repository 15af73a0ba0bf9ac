"""Each judgegen rule fires on its failing fixture and stays silent on its passing one."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.stages.lint import ALL_RULES, lint_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"

RULE_IDS = [rule.id for rule in ALL_RULES]


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_fires_on_its_bad_fixture(rule_id: str) -> None:
    report = lint_file(FIXTURES / f"{rule_id}_bad.py")
    assert rule_id in {f.rule for f in report.findings}


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_good_fixture_has_no_finding_at_all(rule_id: str) -> None:
    report = lint_file(FIXTURES / f"{rule_id}_good.py")
    assert report.findings == [], report.render(guidance=True)
    assert report.ok


def test_every_rule_has_both_fixtures() -> None:
    names = {p.name for p in Path(FIXTURES).glob("JG*.py")}
    for rule_id in RULE_IDS:
        assert {f"{rule_id}_bad.py", f"{rule_id}_good.py"} <= names


def test_rule_ids_are_unique_and_well_formed() -> None:
    assert len(set(RULE_IDS)) == len(RULE_IDS) >= 12
    assert all(rule_id.startswith("JG") and len(rule_id) == 5 for rule_id in RULE_IDS)
    assert sorted(RULE_IDS) == RULE_IDS


def test_syntax_error_is_reported_as_jg000_and_source_kept() -> None:
    path = FIXTURES / "JG000_bad.py"
    report = lint_file(path)
    assert [f.rule for f in report.findings] == ["JG000"]
    assert report.findings[0].line == 6
    assert report.source == path.read_text(encoding="utf-8")
    assert not report.reformatted and not report.ok
