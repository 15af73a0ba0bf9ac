"""`judgegen check`: output lines, --json, and exit codes 0/1/2/3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.stages.lint import ruffcheck

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
GOOD = FIXTURES / "JG004_good.py"
BAD = FIXTURES / "JG004_bad.py"


def test_clean_file_exits_0_with_nothing_on_stdout() -> None:
    result = CliRunner().invoke(main, ["check", str(GOOD)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "0 finding(s) in 0 of 1 file(s)" in result.stderr


def test_findings_are_printed_as_path_line_col_rule_and_exit_1() -> None:
    result = CliRunner().invoke(main, ["check", str(GOOD), str(BAD)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert f"{BAD}:10:15: JG004 Leaf `capital` is created but never verified or used." in lines
    assert all(line.startswith(str(BAD)) for line in lines)
    assert "in 1 of 2 file(s)" in result.stderr


def test_json_output_holds_one_report_per_file_without_source() -> None:
    result = CliRunner().invoke(main, ["check", "--json", str(GOOD), str(BAD)])
    assert result.exit_code == 1
    reports = json.loads(result.stdout)
    assert [r["path"] for r in reports] == [str(GOOD), str(BAD)]
    assert [r["ok"] for r in reports] == [True, False]
    assert "source" not in reports[0]
    assert "JG004" in {f["rule"] for f in reports[1]["findings"]}


def test_missing_file_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["check", "no/such/judge.py"])
    assert result.exit_code == 2


def test_non_utf8_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "judge.py"
    path.write_bytes(b"\xff\xfe\x00")
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 2
    assert "UTF-8" in result.stderr


def test_ruff_failure_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ruffcheck, "ruff_command", lambda: ["/nonexistent/ruff-binary"])
    result = CliRunner().invoke(main, ["check", str(GOOD)])
    assert result.exit_code == 3
    assert "ruff could not run" in result.stderr


def test_help_documents_exit_codes() -> None:
    result = CliRunner().invoke(main, ["check", "--help"])
    assert result.exit_code == 0
    assert "Exit codes: 0 no findings; 1 findings" in result.stdout
