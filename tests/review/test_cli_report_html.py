"""`judgegen report --html`: one self-contained page for results of one or all agents."""

from __future__ import annotations

import json
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


def test_html_metrics_say_how_many_tasks_and_runs_each_agent_is_scored_over(
    results: Path,
) -> None:
    """Agents side by side may have answered other tasks: without the counts, a success rate
    over one task reads like one over two."""
    shutil.copytree(results / "alpha" / TASK, results / "alpha" / "second_task")
    for path in (results / "alpha" / "second_task").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**data, "task_id": "second_task"}), encoding="utf-8")

    invoke(["report", str(results), "--html", "out.html", "--allow-stale"])

    page = Path("out.html").read_text(encoding="utf-8")
    assert '<td>alpha</td><td>tasks</td><td class="num">2</td>' in page
    assert '<td>beta</td><td>tasks</td><td class="num">1</td>' in page
    assert '<td>beta</td><td>runs</td><td class="num">1</td>' in page
    assert '<td>beta</td><td>excluded</td><td class="num">0</td>' in page


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


def section(page: str, heading: str) -> str:
    """The rubric-tree section of the page whose heading starts with `heading`."""
    start = page.rindex('<section class="result"', 0, page.index(f"<h3>{heading}"))
    return page[start : page.index("</section>", start)]


def test_html_marks_a_stale_result_with_its_reason(results: Path) -> None:
    answer = Path("answers") / "alpha" / TASK / "answer_1.md"
    answer.write_text(answer.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")

    result = invoke(["report", str(results), "--html", "out.html", "--pages", "pages"])

    assert result.exit_code == 4, result.output
    page = Path("out.html").read_text(encoding="utf-8")
    stale = section(page, f"alpha / {TASK} / answer_1")
    assert 'data-left-out="stale"' in stale
    assert (
        '<div class="left-out-banner"><b>stale</b>, left out of the metrics: outdated: its '
        "answer changed since it was computed; run again</div>"
    ) in stale
    assert "left-out" not in section(page, f"beta / {TASK} / answer_1")
    rows = [row.split("</tr>")[0] for row in page.split("<tr") if f"<td>{TASK}</td>" in row]
    assert [("left-out" in row, "<td>alpha</td>" in row) for row in rows] == [
        (True, True),
        (False, False),
    ]
    assert "stale: not in the metrics</span>" in rows[0]


def test_html_metrics_leave_out_the_results_it_marks_as_the_table_does(results: Path) -> None:
    answer = Path("answers") / "alpha" / TASK / "answer_1.md"
    answer.write_text(answer.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")

    invoke(["report", str(results), "--html", "out.html", "--pages", "pages"])
    table = invoke(["report", str(results / "alpha"), "--json", "--pages", "pages"])

    page = Path("out.html").read_text(encoding="utf-8")
    counts = json.loads(table.stdout)["counts"]
    assert counts["complete"] == 0
    assert f'<td>alpha</td><td>complete</td><td class="num">{counts["complete"]}</td>' in page
    assert '<td>alpha</td><td>stale</td><td class="num">1</td>' in page
    assert '<td>beta</td><td>complete</td><td class="num">1</td>' in page


def test_html_exit_code_follows_the_results_its_metrics_count(results: Path) -> None:
    """An incomplete result that is stale is left out of the metrics: accepted with
    --allow-stale, it no longer makes the exit code 1, as the agent's table does not."""
    path = results / "alpha" / TASK / "answer_1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "status": "incomplete"}), encoding="utf-8")
    answer = Path("answers") / "alpha" / TASK / "answer_1.md"
    answer.write_text(answer.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")
    args = ["--pages", "pages", "--allow-stale"]

    page = invoke(["report", str(results), "--html", "out.html", *args])
    table = invoke(["report", str(results / "alpha"), *args])

    assert (page.exit_code, table.exit_code) == (0, 0), page.output
    assert "STALE (accepted with --allow-stale)" in page.stderr


def test_html_marks_a_copy_of_a_result_file_not_counted_and_not_the_result_it_copies(
    results: Path,
) -> None:
    """`answer_1 (copy).json` holds answer_1's result: the metrics never count it, so its
    tree must not read as counted, nor may the mark of the copy land on the original."""
    folder = results / "alpha" / TASK
    shutil.copy(folder / "answer_1.json", folder / "answer_1 (copy).json")

    result = invoke(["report", str(results), "--html", "out.html"])

    assert result.exit_code == 0, result.output
    page = Path("out.html").read_text(encoding="utf-8")
    trees = page.split('<section class="result"')[1:]
    alpha = [tree for tree in trees if f"<h3>alpha / {TASK} / answer_1 " in tree]
    marked = [tree for tree in alpha if 'data-left-out="not counted"' in tree]
    assert len(alpha) == 2 and len(marked) == 1
    assert (
        f"<b>not counted</b>, left out of the metrics: {TASK}/answer_1 (copy).json: it holds "
        f"the result of {TASK}/answer_1: not the result of its own path (a copy?), so not "
        "counted: delete the file</div>"
    ) in marked[0]
    rows = [row.split("</tr>")[0] for row in page.split("<tr") if "<td>alpha</td><td>" in row]
    answers = [row for row in rows if f"<td>{TASK}</td>" in row]
    assert sorted("not counted: not in the metrics" in row for row in answers) == [False, True]
    assert '<td>alpha</td><td>complete</td><td class="num">1</td>' in page
