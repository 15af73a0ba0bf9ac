"""`judgegen import`: files written, report formats, --check and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.importer import ImportReport

JUDGE = (
    "from mind2web2.evaluator import Evaluator\n\n"
    "async def evaluate_answer(client, answer, agent_name, answer_name, cache, semaphore, "
    "logger, model='o4-mini'):\n    return Evaluator()\n"
)


@pytest.fixture
def judge(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "my_task.py"
    path.parent.mkdir()
    path.write_text(JUDGE)
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, ["import", *args])


def test_writes_the_rewritten_judge_under_its_name(judge, tmp_path):
    out = tmp_path / "generated_judges"
    result = invoke(str(judge), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "my_task.py").read_text() == JUDGE.replace(
        "mind2web2.evaluator", "toolkit.compat.evaluator"
    )
    assert (
        f"{judge}:1: mind2web2.evaluator -> toolkit.compat.evaluator (Evaluator)" in result.stdout
    )


def test_json_report_is_an_import_report(judge, tmp_path):
    result = invoke(str(judge), "--out", str(tmp_path / "out"), "--json")
    report = ImportReport.model_validate(json.loads(result.stdout))
    assert [j.status for j in report.judges] == ["written"]
    assert report.judges[0].rewrites[0].target == "toolkit.compat.evaluator"


def test_unmappable_judge_exits_1_and_is_not_written(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("from mind2web2.evaluator import SourceKind\n" + JUDGE)
    out = tmp_path / "out"
    result = invoke(str(path), "--out", str(out))
    assert result.exit_code == 1
    assert f"{path}:1: error:" in result.stdout
    assert not (out / "bad.py").exists()


def test_check_writes_nothing_and_fails_while_output_is_missing(judge, tmp_path):
    out = tmp_path / "out"
    result = invoke(str(judge), "--out", str(out), "--check")
    assert result.exit_code == 1
    assert "out of date" in result.stdout
    assert not out.exists()


def test_check_passes_once_output_is_up_to_date(judge, tmp_path):
    out = tmp_path / "out"
    assert invoke(str(judge), "--out", str(out)).exit_code == 0
    result = invoke(str(judge), "--out", str(out), "--check")
    assert result.exit_code == 0
    assert "up to date" in result.stdout


def test_reimport_of_an_unchanged_judge_reports_unchanged(judge, tmp_path):
    out = tmp_path / "out"
    invoke(str(judge), "--out", str(out))
    assert "unchanged" in invoke(str(judge), "--out", str(out)).stdout


def test_directory_argument_imports_its_python_files(judge, tmp_path):
    (judge.parent / "second.py").write_text(JUDGE)
    out = tmp_path / "out"
    assert invoke(str(judge.parent), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["my_task.py", "second.py"]


def test_missing_path_is_a_usage_error(tmp_path):
    result = invoke(str(tmp_path / "nope.py"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_two_judges_with_one_name_are_a_usage_error(judge, tmp_path):
    other = tmp_path / "other" / "my_task.py"
    other.parent.mkdir()
    other.write_text(JUDGE)
    result = invoke(str(judge), str(other), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2


def test_syntax_error_is_a_usage_error(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def broken(:\n")
    assert invoke(str(path), "--out", str(tmp_path / "out")).exit_code == 2
