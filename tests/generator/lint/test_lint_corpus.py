"""Every reviewed judge, fixture judge and prompt example in the repo lints clean (no false positives)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.stages.lint import lint_file, run_rules

REPO = Path(__file__).resolve().parents[3]
CORPUS_GLOBS = (
    "generated_judges/*.py",
    "tests/fixtures/runner/judges/*.py",
    "tests/fixtures/lint/corpus/*.py",
    "generator/stages/examples/*.py.txt",
)
CORPUS = sorted(path for pattern in CORPUS_GLOBS for path in REPO.glob(pattern))


def test_corpus_is_not_empty() -> None:
    assert any(path.parent.name == "corpus" for path in CORPUS)


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: str(path.relative_to(REPO)))
def test_corpus_judge_has_no_finding(path: Path) -> None:
    report = lint_file(path)
    assert report.findings == [], report.render(guidance=True)


def test_rules_never_crash_on_any_fixture_module() -> None:
    paths = sorted((REPO / "tests" / "fixtures").rglob("*.py"))
    assert len(paths) > 20
    for path in paths:
        findings = run_rules(path.read_text(encoding="utf-8"))
        assert all(f.line >= 1 and f.rule.startswith("JG") for f in findings), path
