"""`judgegen check --task`: the debug stage on top of lint, offline through recordings."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from generator.cli import main

ROOT = Path(__file__).resolve().parents[3]
TASK = "rust_2024_edition"


def run_check(tmp_path: Path, judge: Path) -> object:
    args = ["check", str(judge), "--task", TASK, "--tasks-dir", str(ROOT / "tasks")]
    args += ["--provider", f"replay:{ROOT / 'recordings' / TASK}"]
    args += ["--cache-path", str(tmp_path / "cache.sqlite")]
    return CliRunner().invoke(main, args)


def test_a_reviewed_judge_passes_lint_and_debug(tmp_path):
    result = run_check(tmp_path, ROOT / "generated_judges" / f"{TASK}.py")
    assert result.exit_code == 0, result.stderr
    assert "0 finding(s)" in result.stderr


def test_a_judge_that_crashes_on_a_sample_answer_is_reported(tmp_path):
    source = (ROOT / "generated_judges" / f"{TASK}.py").read_text()
    broken = source.replace(
        "async def evaluate(ev: Evaluator) -> None:\n",
        "async def evaluate(ev: Evaluator) -> None:\n"
        '    if "1.82" in ev.answer:\n'
        '        raise ValueError("cannot handle this answer")\n',
        1,
    )
    assert broken != source
    judge = tmp_path / f"{TASK}.py"
    judge.write_text(broken)
    result = run_check(tmp_path, judge)
    assert result.exit_code == 1
    assert "debug: exception on wrong/" in result.stdout
    assert "cannot handle this answer" in result.stdout
