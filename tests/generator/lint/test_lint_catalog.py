"""The mistakes catalog: deterministic text, every rule, snippets that match their rule."""

from __future__ import annotations

import pytest

from generator.stages.lint import ALL_RULES, catalog, render_catalog_markdown, run_rules


def test_catalog_markdown_is_byte_identical_across_calls() -> None:
    assert render_catalog_markdown().encode() == render_catalog_markdown().encode()


def test_catalog_lists_every_rule_in_id_order() -> None:
    docs = catalog()
    assert [doc.id for doc in docs] == [rule.id for rule in ALL_RULES]
    text = render_catalog_markdown()
    positions = [text.index(f"## {doc.id} {doc.name}: {doc.title}") for doc in docs]
    assert positions == sorted(positions)


def test_catalog_entries_are_complete() -> None:
    for doc in catalog():
        assert doc.version == 1
        assert doc.title and doc.message and doc.bad.strip() and doc.good.strip()
        assert doc.bad != doc.good


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_catalog_bad_snippet_triggers_its_rule(rule: type) -> None:
    assert {f.rule for f in run_rules(rule.bad, {rule.id})} == {rule.id}


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.id)
def test_catalog_good_snippet_passes_every_rule(rule: type) -> None:
    fragment_rules = {"JG001", "JG002"} - {rule.id}
    assert [f for f in run_rules(rule.good) if f.rule not in fragment_rules] == []


def test_catalog_names_the_ruff_selection() -> None:
    assert "`ruff check` (rules F, E9," in render_catalog_markdown()
