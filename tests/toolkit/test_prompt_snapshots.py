"""Snapshot tests for the toolkit's prompt templates: fixed inputs, committed expected text.

Regenerate after an intended prompt change with `JUDGEGEN_UPDATE_SNAPSHOTS=1 pytest`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prompts import render

SNAPSHOTS = Path(__file__).parents[1] / "fixtures" / "prompts"

CASES = {
    "rules_extract": ("toolkit/rules_extract.j2", {}),
    "rules_verify": ("toolkit/rules_verify.j2", {}),
    "extract_answer": (
        "toolkit/extract_answer.j2",
        {
            "prompt": "Extract the commit id.",
            "task_description": "Find the commit.",
            "source": None,
            "text": "The commit is a1b2c3 <b>&</b>.",
            "additional_instruction": None,
        },
    ),
    "extract_page": (
        "toolkit/extract_page.j2",
        {
            "prompt": "Extract the date.",
            "task_description": "Find the commit.",
            "source": "https://github.com/x/y/commit/a1b2c3",
            "text": "Dec 7, 2023",
            "additional_instruction": "Use ISO format.",
        },
    ),
    "verify_plain": (
        "toolkit/verify_plain.j2",
        {
            "claim": "Dec 7, 2023 is the same date as 2023-12-07.",
            "task_description": "T",
            "answer": "A",
            "source": None,
            "page_text": "",
            "additional_instruction": None,
        },
    ),
    "verify_page": (
        "toolkit/verify_page.j2",
        {
            "claim": "The commit a1b2c3 was authored by Ada.",
            "task_description": "T",
            "answer": "A",
            "source": "https://github.com/x/y/commit/a1b2c3",
            "page_text": "Ada committed a1b2c3",
            "additional_instruction": None,
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_toolkit_prompt_matches_its_snapshot(name):
    template, context = CASES[name]
    rendered = render(template, **context)
    snapshot = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("JUDGEGEN_UPDATE_SNAPSHOTS"):
        snapshot.write_text(rendered)
    assert rendered == snapshot.read_text()


def test_missing_template_variable_is_an_error():
    from jinja2 import UndefinedError

    with pytest.raises(UndefinedError):
        render("toolkit/verify_plain.j2", claim="c")
