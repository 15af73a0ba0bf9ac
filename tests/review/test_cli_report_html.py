"""`judgegen report --html`: one self-contained page for results of one or all agents."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.review.helpers import BACKEND, TASK, invoke, workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """results/<agent>/first_ascents/answer_1.json for agents giving the good and wrong answers."""
    monkeypatch.chdir(workspace(tmp_path))
    for agent, kind in (("alpha", "good"), ("beta", "wrong")):
        target = tmp_path / "answers" / agent / TASK / "answer_1.md"
        target.parent.mkdir(parents=True)
        shutil.copy(tmp_path / "tasks" / TASK / "answers" / f"{kind}.md", target)
    args = ["run", "--answers", "answers", "--pages", "pages", "--backend", BACKEND]
    result = invoke([*args, "--include-unreviewed", "--no-sandbox"])
    assert result.exit_code == 0, result.stderr
    return tmp_path / "results"


def test_html_for_all_agents_has_metrics_answers_and_colored_trees(results: Path) -> None:
    result = invoke(["report", str(results), "--html", "out/report.html"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    page = Path("out/report.html").read_text()
    assert "<td>alpha</td><td>partial_completion</td>" in page
    assert "<td>beta</td><td>partial_completion</td>" in page
    assert 'data-id="k2_date"' in page and 'data-status="failed"' in page
    assert "scripted: not on the page: 1953" in page
    assert "<script src" not in page and "<link" not in page


def test_html_for_one_agent_still_prints_its_metrics_table(results: Path) -> None:
    result = invoke(["report", str(results / "beta"), "--html", "beta.html"])
    assert result.exit_code == 0, result.stderr
    assert "beta" in result.stdout
    page = Path("beta.html").read_text()
    assert "<td>beta</td>" in page and "<td>alpha</td>" not in page


def test_html_for_a_single_result_file(results: Path) -> None:
    one = results / "alpha" / TASK / "answer_1.json"
    result = invoke(["report", str(one), "--html", "one.html"])
    assert result.exit_code == 0, result.stderr
    page = Path("one.html").read_text()
    assert "alpha / first_ascents / answer_1" in page
    assert "<h2>Metrics</h2>" not in page


def test_a_result_file_without_html_is_a_usage_error(results: Path) -> None:
    result = invoke(["report", str(results / "alpha" / TASK / "answer_1.json")])
    assert result.exit_code == 2
    assert "needs --html OUT" in result.stderr


def test_committed_report_screenshot_is_a_small_png() -> None:
    png = ROOT / "docs" / "report.png"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) < 400 * 1024
