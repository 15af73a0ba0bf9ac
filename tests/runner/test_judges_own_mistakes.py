"""A judge's own mistake is the judge's error, the same in process and sandboxed: never a
missing page, an outage, or a complete result with a check that gave no verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.test_runner_sees_infra import MODES, hostile_input, only_result, run
from toolkit import ScriptedBackend
from toolkit.pages import PageStore


@pytest.mark.parametrize("source", ["none", "page_store"])
@pytest.mark.parametrize("mode", MODES)
def test_a_page_read_of_no_url_is_the_judges_error(work: Path, mode: str, source: str) -> None:
    """`ev.pages.get(None)` (an extraction that found no URL) was a page called "None" that
    is missing sandboxed (a complete 0), and in process a run that crashed (no page store) or
    a page-store failure (one)."""
    item = hostile_input(work, "reads_page_of_no_url")
    with PageStore(work / "pages") as store:
        pages = store if source == "page_store" else None
        report = run(work, [item], ScriptedBackend(), mode, pages=pages)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [(e["type"], e["kind"]) for e in result.errors] == [("TypeError", "judge_exception")]
    assert (
        "ev.pages.get(url) takes the page's URL as a string, got None"
        in result.errors[0]["message"]
    )
    assert report.stopped is None
