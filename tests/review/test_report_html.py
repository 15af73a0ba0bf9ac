"""The HTML report renders a collapsible, colored rubric tree; checked in headless Chromium."""

from __future__ import annotations

import glob
import os
import shutil
import tomllib
from pathlib import Path

from playwright.async_api import async_playwright

from generator.review.report import STATUS_COLORS, LeftOut, render_report

CHROMIUM = os.environ.get("JUDGEGEN_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def node(node_id, status, score, *children, critical=False, strategy="parallel", error=None):
    out = {
        "id": node_id,
        "desc": f"{node_id} <desc>",
        "critical": critical,
        "score": score,
        "status": status,
        "strategy": strategy,
        "children": list(children),
    }
    if error:
        out["error"] = error
    return out


RESULT = {
    "agent_name": "agent_a",
    "task_id": "llava_commit",
    "answer_name": "answer_1",
    "final_score": 0.5,
    "status": "incomplete",
    "errors": [{"message": "LLMError: overloaded"}],
    "tree_statistics": {"total_nodes": 7},
    "verifications": [
        {
            "node_id": "commit_id",
            "reasoning": "The page shows a1b2c3.",
            "supported_by": "https://github.com/x",
        }
    ],
    "eval_breakdown": [
        {
            "info": [{"commit": {"commit_id": "a1b2c3"}}],
            "verification_tree": node(
                "root",
                "partial",
                0.5,
                node(
                    "commit",
                    "passed",
                    1.0,
                    node("commit_id", "passed", 1.0, critical=True),
                    strategy="sequential",
                ),
                node(
                    "authors",
                    "failed",
                    0.0,
                    node("author_1", "failed", 0.0),
                    node("author_2", "skipped", 0.0),
                    node("author_3", "error", 0.0, error="timeout"),
                ),
            ),
        }
    ],
}


def test_report_escapes_text_and_is_self_contained():
    html = render_report([RESULT], {"agent_a": {"partial_completion": 0.5}})
    assert "commit_id &lt;desc&gt;" in html
    assert "http" not in html.replace("https://github.com/x", "")
    assert "partial_completion" in html


def test_chromium_is_installed():
    assert os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}; .ci/run installs the package"


async def test_report_tree_renders_nodes_and_status_colors_in_chromium(tmp_path):
    page_path = tmp_path / "report.html"
    page_path.write_text(render_report([RESULT], {"agent_a": {"partial_completion": 0.5}}))
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = await browser.new_page(viewport={"width": 1000, "height": 800})
        await page.goto(page_path.as_uri())
        assert await page.locator("details.node").count() == 7
        await page.evaluate("setAll(true)")
        colors = await page.eval_on_selector_all(
            "details.node > summary .badge",
            "els => els.map(e => [e.closest('details').dataset.id, getComputedStyle(e).backgroundColor])",
        )
        screenshot = await page.screenshot(full_page=True)
        await browser.close()
    by_id = dict(colors)
    assert by_id["author_1"] == _rgb(STATUS_COLORS["failed"])
    assert by_id["commit"] == _rgb(STATUS_COLORS["passed"])
    assert by_id["author_3"] == _rgb(STATUS_COLORS["error"])
    assert by_id["author_2"] == _rgb(STATUS_COLORS["skipped"])
    assert screenshot[:8] == b"\x89PNG\r\n\x1a\n" and len(screenshot) > 5000


def _rgb(hex_color: str) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def test_report_matches_its_recorded_snapshot():
    snapshot = Path(__file__).parents[1] / "fixtures" / "review" / "report_snapshot.html"
    html = render_report([RESULT], {"agent_a": {"partial_completion": 0.5, "complete": 1}})
    assert html == snapshot.read_text("utf-8"), "re-record only for an intended change of look"


def test_non_python_files_of_the_packages_are_declared_package_data():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = pyproject["tool"]["setuptools"]["package-data"]
    for package in ("generator", "prompts"):
        root = Path(__file__).parents[2] / package
        data = {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and p.suffix not in {".py", ".pyc"}
        }
        covered = {
            name for g in declared[package] for name in glob.glob(g, root_dir=root, recursive=True)
        }
        missing = sorted(data - covered)
        assert missing == [], f"add to [tool.setuptools.package-data] {package}: {missing}"


def test_report_names_the_pages_a_result_was_judged_without() -> None:
    """A claim checked against a missing or clipped page counts as unsupported: the reviewer
    reading the report is told which pages, not left to read it as the agent's fault."""
    result = {
        **RESULT,
        "missing_sources": ["https://a.example/gone"],
        "clipped_pages": ["https://b.example/long-report.pdf"],
    }
    html = render_report([result])
    assert "1 cited page(s) missing from the page store" in html
    assert "https://a.example/gone" in html and "judgegen cache-pages" in html
    assert "longer than the judging backend's page limit" in html
    assert "https://b.example/long-report.pdf" in html
    assert "missing from the page store" not in render_report([RESULT])
    assert "page limit" not in render_report([RESULT])


def test_report_marks_each_result_its_metrics_leave_out_with_the_reason() -> None:
    """A stale result's tree would otherwise read as one the metrics above count."""
    other = {**RESULT, "answer_name": "answer_2"}
    why = LeftOut("stale", "outdated: its judge changed since it was computed; run again")

    html = render_report([RESULT, other], left_out=[why, None])

    assert html.count('class="left-out"') == 1  # the table row of answer_1 only
    assert html.count('data-left-out="stale"') == 1
    assert (
        '<div class="left-out-banner"><b>stale</b>, left out of the metrics: outdated: its '
        "judge changed since it was computed; run again</div>"
    ) in html
    assert f'title="{why.reason}">stale: not in the metrics</span>' in html
    assert "left-out" not in html.split("answer_2 — score")[1]


def test_report_marks_one_of_two_results_of_the_same_names_by_position() -> None:
    """A copy of a result file holds the same agent, task and answer as the result it
    copies: the mark goes to the result it is given for, not to every result so named."""
    copy = LeftOut("not counted", "t/answer_1 (copy).json: a copy")

    html = render_report([RESULT, dict(RESULT)], left_out=[None, copy])

    assert html.count('data-left-out="not counted"') == 1
    assert html.count('class="left-out"') == 1


def test_report_escapes_the_reason_a_result_is_left_out() -> None:
    html = render_report([RESULT], left_out=[LeftOut("stale", "<b>x</b>")])
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_a_result_without_a_final_score_shows_no_score_not_zero() -> None:
    """An incomplete result (an infrastructure failure) or an excluded one has no final score:
    shown as 0.000 it would read as a wrong answer."""
    incomplete = {**RESULT, "final_score": None, "partial_score": 0.5}
    excluded = {**RESULT, "answer_name": "answer_2", "status": "excluded", "final_score": None}

    html = render_report([incomplete, excluded])

    assert "0.000" not in html
    assert html.count('<td class="num">-</td>') == 2
    assert "answer_1 — score - " in html and "answer_2 — score - " in html


def test_a_metric_without_a_value_shows_a_dash_not_none() -> None:
    html = render_report([RESULT], {"agent_a": {"partial_completion": None, "pass@1": 0.5}})

    assert "None" not in html
    assert '<td>agent_a</td><td>partial_completion</td><td class="num">-</td>' in html
    assert '<td>agent_a</td><td>pass@1</td><td class="num">0.500</td>' in html


def test_a_score_just_below_one_never_shows_as_one() -> None:
    html = render_report([{**RESULT, "status": "complete", "final_score": 0.9996}])

    assert "1.000" not in html and "answer_1 — score 0.999 " in html
