"""Shared helpers for toolkit tests: evaluators over a recording scripted backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolkit.backends import ScriptedBackend, Verdict, VerifyRequest
from toolkit.evaluator import Evaluator


class DictPages:
    """A page source over a dict: URL → text."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages

    def get(self, url: str) -> str | None:
        return self.pages.get(url)


@pytest.fixture
def make_evaluator() -> Callable[..., Evaluator]:
    def build(verify=None, extract=None, pages=None, strategy="parallel", answer="the answer"):
        backend = ScriptedBackend(extract=extract, verify=verify)
        return Evaluator.create(
            task_id="t1",
            task_description="Find things.",
            answer=answer,
            backend=backend,
            pages=DictPages(pages or {}),
            strategy=strategy,
            agent_name="agent",
            answer_name="answer_1",
        )

    return build


def verdict_by_claim(failing: set[str]) -> Callable[[VerifyRequest], Verdict]:
    """Verdicts that fail exactly the claims in `failing`."""

    def verify(request: VerifyRequest) -> Verdict:
        return Verdict(passed=request.claim not in failing, reasoning="scripted")

    return verify
