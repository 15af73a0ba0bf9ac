"""lint_source/lint_file: formatting, finding shape, ruff integration and failure modes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from generator.stages.lint import Finding, LintReport, lint_file, lint_source, ruffcheck
from toolkit.errors import InfraError, SpecError

CLEAN = '''from toolkit import Evaluator

TASK_ID = "t"
TASK_DESCRIPTION = """Task."""


async def evaluate(ev: Evaluator) -> None:
    ev.add_custom_node(result=bool(ev.answer), id="answered", desc="An answer is given")
'''


def test_clean_source_gives_an_ok_report_with_unchanged_source() -> None:
    report = lint_source(CLEAN)
    assert report.ok and report.findings == []
    assert report.source == CLEAN and not report.reformatted
    assert report.path == "<judge>"


def test_source_is_ruff_formatted_and_lines_refer_to_the_formatted_text() -> None:
    messy = (
        CLEAN.replace('id="answered"', "id='answered'")
        + "\n\n\nleaf=ev.add_leaf(id='x',desc='d')\n"
    )
    report = lint_source(messy, "messy.py")
    assert report.reformatted
    assert 'leaf = ev.add_leaf(id="x", desc="d")' in report.source
    undefined = [f for f in report.findings if f.rule == "F821"]
    assert undefined and undefined[0].origin == "ruff"
    line = report.source.splitlines()[undefined[0].line - 1]
    assert line.startswith("leaf = ev.add_leaf")
    assert undefined[0].snippet == line


def test_judgegen_finding_has_position_snippet_and_guidance() -> None:
    source = (
        CLEAN + '\n\nasync def helper(ev: Evaluator) -> None:\n    ev.add_leaf(id="x", desc="d")\n'
    )
    report = lint_source(source)
    [finding] = [f for f in report.findings if f.rule == "JG004"]
    assert (finding.line, finding.column, finding.end_line) == (12, 5, 12)
    assert finding.snippet == '    ev.add_leaf(id="x", desc="d")'
    assert finding.origin == "judgegen" and finding.guidance and "add_leaf" in finding.guidance


def test_findings_are_sorted_by_position() -> None:
    source = "import os\n" + CLEAN + "\nimport socket\n"
    report = lint_source(source)
    keys = [(f.line, f.column, f.rule) for f in report.findings]
    assert keys == sorted(keys) and len(keys) >= 3


def test_report_round_trips_through_json_with_version_and_ok() -> None:
    report = lint_source("import os\n" + CLEAN)
    data = json.loads(report.model_dump_json())
    assert data["version"] == 1 and data["ok"] is False
    assert data["findings"][0]["version"] == 1
    data.pop("ok")
    assert LintReport.model_validate(data) == report


def test_rules_argument_restricts_judgegen_rules() -> None:
    source = "import os\n" + CLEAN.replace('TASK_ID = "t"\n', "")
    report = lint_source(source, rules={"JG002"}, ruff=False)
    assert {f.rule for f in report.findings} == {"JG002"}


def test_without_ruff_nothing_is_formatted() -> None:
    messy = CLEAN.replace('id="answered"', "id = 'answered'")
    report = lint_source(messy, ruff=False)
    assert report.source == messy and not report.reformatted and report.ok


def test_syntax_error_without_ruff_comes_from_libcst() -> None:
    report = lint_source("async def evaluate(ev)\n    pass\n", ruff=False)
    assert [f.rule for f in report.findings] == ["JG000"]
    assert report.findings[0].origin == "judgegen"


def test_render_lists_path_line_column_rule_and_message() -> None:
    report = lint_source("import os\n" + CLEAN, "j.py")
    lines = report.render().splitlines()
    assert "j.py:1:8: F401 `os` imported but unused" in lines
    assert "j.py:1:8: JG003 Import of `os` is not allowed in a judge." in lines


def test_guided_render_shows_snippets_and_each_rules_fix_once() -> None:
    report = lint_source("import os\nimport socket\n" + CLEAN, "j.py")
    text = report.render(guidance=True)
    assert "    | import os" in text and "    | import socket" in text
    assert text.count("- JG003: ") == 1
    assert text.index("How to fix:") > text.index("    | import socket")


def test_ruff_that_cannot_run_is_an_infra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ruffcheck, "ruff_command", lambda: ["/nonexistent/ruff-binary"])
    with pytest.raises(InfraError, match="ruff could not run"):
        lint_source(CLEAN)


def test_ruff_command_falls_back_to_python_module(monkeypatch: pytest.MonkeyPatch) -> None:
    import ruff

    def missing() -> str:
        raise FileNotFoundError("no ruff binary")

    monkeypatch.setattr(ruff, "find_ruff_bin", missing)
    assert ruffcheck.ruff_command() == [sys.executable, "-m", "ruff"]


def test_lint_file_reads_utf8_and_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "judge.py"
    path.write_text(CLEAN.replace("Task.", "Tâche."), encoding="utf-8")
    report = lint_file(path)
    assert report.path == str(path) and report.ok


def test_lint_file_rejects_non_utf8_with_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "judge.py"
    path.write_bytes(b"TASK_ID = '\xff'\n")
    with pytest.raises(SpecError, match="encoding"):
        lint_file(path)


def test_finding_model_rejects_line_zero() -> None:
    with pytest.raises(ValueError):
        Finding(
            rule="JG001", origin="judgegen", message="m", line=0, column=1, end_line=1, snippet=""
        )
