"""Acceptance records the cited pages each sample answer's run missed, as the runner's page-read
log notes them: mutation testing tells a drop caused by another missing page apart by them."""

from __future__ import annotations

from pathlib import Path

from generator.review.labels import intended_labels
from generator.review.runs import ReviewRuns
from generator.stages.acceptance import acceptance_stage
from generator.stages.spec import load_spec
from tests.fixtures.review.scripted import HERE, backend, page_store
from toolkit.pages.store import PageStore

K2 = "https://peaks.example/k2"


async def test_acceptance_records_the_cited_pages_each_answer_run_missed(tmp_path: Path) -> None:
    loaded = load_spec(HERE / "tasks" / "first_ascents")
    pages = PageStore(page_store(tmp_path / "pages", without=[K2]), readonly=True)
    judge = HERE / "judges" / "first_ascents.py"
    async with ReviewRuns(backend(), pages=pages, sandbox=False) as runs:
        report, _ = await acceptance_stage(judge, loaded, runs, intended_labels(loaded))
    missing = {a.answer: a.missing_pages for a in report.answers}
    assert missing == {"good": [K2], "partial": [], "wrong": [K2]}  # partial cites no K2 page
