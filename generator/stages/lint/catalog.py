"""The mistakes catalog: every rule's id, title, explanation and bad/good snippets.

Rendered into the drafting prompt, so the text is deterministic (rule order by id, no dates,
no paths) and byte-identical between calls, which keeps the prompt prefix cacheable.
"""

from __future__ import annotations

from generator.stages.lint.models import RuleDoc
from generator.stages.lint.ruffcheck import RUFF_IGNORE, RUFF_SELECT
from generator.stages.lint.rules import ALL_RULES


def catalog() -> list[RuleDoc]:
    """Every judgegen rule's catalog entry, ordered by id."""
    return [rule.doc() for rule in ALL_RULES]


def render_catalog_markdown() -> str:
    """The catalog as Markdown for the drafting prompt (deterministic text)."""
    parts = [
        "# Mistakes catalog for judge scripts",
        "",
        "Every drafted judge is checked for these mistakes; a finding names the rule id.",
        "The code is also run through `ruff format` and `ruff check` (rules "
        + ", ".join(RUFF_SELECT)
        + "; ignoring "
        + ", ".join(RUFF_IGNORE)
        + ").",
    ]
    for doc in catalog():
        parts += [
            "",
            f"## {doc.id} {doc.name}: {doc.title}",
            "",
            doc.message,
            "",
            "Wrong:",
            "```python",
            doc.bad.rstrip("\n"),
            "```",
            "",
            "Right:",
            "```python",
            doc.good.rstrip("\n"),
            "```",
        ]
    return "\n".join(parts) + "\n"
