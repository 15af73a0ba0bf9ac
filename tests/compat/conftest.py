"""Shared by the compat tests: one cited page with a screenshot, and a Mind2Web 2-style
Evaluator initialized to judge an answer citing it."""

from __future__ import annotations

from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.compat.evaluator import Evaluator
from toolkit.runner.loader import JudgeContext

PAGE = "https://shop.example/monitor"


class Pages:
    """One page with a screenshot."""

    def get(self, url: str) -> str | None:
        return "Dell S3422DWG: $299" if url == PAGE else None

    def screenshot(self, url: str) -> str | None:
        return "aGVsbG8=" if url == PAGE else None


def evaluator(backend: JudgingBackend, **settings: Any) -> Evaluator:
    """An Evaluator initialized as a published judge does (Mind2Web 2's keywords), judging
    with `backend`; `settings`: more `initialize` keywords (its `config=`)."""
    ev = Evaluator()
    ev.initialize(
        task_id="t",
        client=JudgeContext(backend=backend, pages=Pages()),
        task_description="Find the cheapest monitor",
        answer="The Dell S3422DWG at $299.",
        global_cache=None,
        global_semaphore=None,
        logger=None,
        **settings,
    )
    return ev
