"""The rules' heuristics on small judges: what they accept and what they report."""

from __future__ import annotations

import textwrap

from generator.lint import run_rules

HEADER = '''
from pydantic import BaseModel

from toolkit import Evaluator

TASK_ID = "t"
TASK_DESCRIPTION = """Task."""


class Item(BaseModel):
    name: str | None = None
    url: str | None = None
    tags: list[str] = []


class Listing(BaseModel):
    items: list[Item] = []
'''


def findings(body: str, rule: str) -> list[str]:
    """Messages of `rule` on a judge made of HEADER plus `body`."""
    source = HEADER + textwrap.dedent(body)
    return [f.message for f in run_rules(source, {rule})]


def test_same_literal_id_in_if_and_else_branches_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        if ev.answer:
            ev.add_custom_node(result=True, id="x", desc="d")
        elif len(ev.answer) > 3:
            ev.add_custom_node(result=True, id="x", desc="d")
        else:
            ev.add_custom_node(result=False, id="x", desc="d")
    """
    assert findings(body, "JG006") == []


def test_same_literal_id_in_two_helpers_is_reported() -> None:
    body = """
    def first(ev: Evaluator) -> None:
        ev.add_custom_node(result=True, id="x", desc="d")

    def second(ev: Evaluator) -> None:
        ev.add_custom_node(result=True, id="x", desc="d")

    async def evaluate(ev: Evaluator) -> None:
        first(ev)
        second(ev)
    """
    assert findings(body, "JG006") == ['The id "x" is already used on line 20.']


def test_literal_id_in_helper_called_in_a_loop_is_reported() -> None:
    body = """
    def check(ev: Evaluator, name: str) -> None:
        ev.add_custom_node(result=bool(name), id="named", desc="d")

    async def evaluate(ev: Evaluator) -> None:
        for name in ["a", "b"]:
            check(ev, name)
    """
    assert len(findings(body, "JG006")) == 1


def test_literal_id_under_a_condition_in_a_loop_or_helper_is_accepted() -> None:
    body = """
    def check(ev: Evaluator, index: int) -> None:
        if index == 0:
            ev.add_custom_node(result=True, id="first_only", desc="d")

    async def evaluate(ev: Evaluator) -> None:
        for index, name in enumerate(["a", "b"]):
            if index == 0:
                ev.add_custom_node(result=bool(name), id="first_named", desc="d")
            check(ev, index)
    """
    assert findings(body, "JG006") == []


def test_f_string_id_without_the_loop_variable_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        prefix = "item"
        for index, name in enumerate(["a", "b"]):
            ev.add_custom_node(result=bool(name), id=f"{prefix}_named", desc="d")
    """
    assert findings(body, "JG006") == ["The id does not change between loop iterations."]


def test_f_string_id_with_a_counter_updated_in_the_loop_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        count = 0
        for name in ["a", "b"]:
            count += 1
            ev.add_custom_node(result=bool(name), id=f"item_{count}", desc="d")
    """
    assert findings(body, "JG006") == []


def test_id_passed_in_as_a_parameter_is_accepted() -> None:
    body = """
    def check(ev: Evaluator, node_id: str) -> None:
        ev.add_custom_node(result=True, id=node_id, desc="d")
        ev.add_custom_node(result=True, id=f"{node_id}_extra", desc="d")
    """
    assert findings(body, "JG006") == []


def test_mind2web2_id_underscore_spelling_counts_as_an_id() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        ev.add_custom_node(result=True, id_="x", desc="d")
        ev.add_custom_node(result=True, id="x", desc="d")
    """
    assert findings(body, "JG006") == ['The id "x" is already used on line 20.']


def test_reserved_root_id_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        ev.add_custom_node(result=True, id="root", desc="d")
    """
    assert findings(body, "JG006") == ['The id "root" is reserved for the root.']


def test_verifying_in_both_branches_is_not_a_double_verification() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        if ev.answer:
            await ev.verify(claim="a", node=leaf)
        else:
            await ev.verify(claim="b", node=leaf)
    """
    assert findings(body, "JG005") == []


def test_verifying_a_fresh_leaf_per_iteration_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        for index, url in enumerate(["u1", "u2"]):
            leaf = ev.add_leaf(id=f"url_{index}", desc="d")
            await ev.verify(claim="c", node=leaf, sources=url)
    """
    assert findings(body, "JG005") == []


def test_a_leaf_twice_in_one_batch_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        await ev.batch_verify([("a", None, leaf, None), ("b", None, leaf, None)])
    """
    assert findings(body, "JG005") == ["Leaf `leaf` appears twice in one batch."]


def test_leaf_handed_to_a_helper_counts_as_used() -> None:
    body = """
    async def decide(ev: Evaluator, leaf) -> None:
        await ev.verify(claim="c", node=leaf)

    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        await decide(ev, leaf)
    """
    assert findings(body, "JG004") == []


def test_leaf_given_a_score_directly_counts_as_decided() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        leaf.score, leaf.status = 1.0, "passed"
    """
    assert findings(body, "JG004") == []


def test_custom_node_under_critical_parent_defaults_to_critical() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        core = ev.add_sequential(id="core", desc="d", critical=True)
        ev.add_custom_node(result=True, id="x", desc="d", parent=core)
    """
    assert findings(body, "JG007") == []


def test_parallel_child_without_critical_under_critical_parent_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        core = ev.add_parallel(id="core", desc="d", critical=True)
        ev.add_parallel(id="inner", desc="d", parent=core)
    """
    assert findings(body, "JG007") == ["`core` is critical but this child is not."]


def test_clock_read_through_an_alias_is_reported() -> None:
    body = """
    from datetime import date as D

    async def evaluate(ev: Evaluator) -> None:
        ev.add_custom_node(result=str(D.today()) in ev.answer, id="x", desc="d")
    """
    assert findings(body, "JG008") == [
        "`datetime.date.today` reads the clock, so runs on the same answer differ."
    ]


def test_building_a_fixed_date_is_not_a_clock_read() -> None:
    body = """
    import datetime

    EVAL_DATE = datetime.date(2025, 7, 1)
    LATER = EVAL_DATE + datetime.timedelta(days=60)
    """
    assert findings(body, "JG008") == []


def test_iterating_a_set_without_building_nodes_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        count = 0
        for word in set(ev.answer.split()):
            count += len(word)
        ev.add_custom_node(result=count > 10, id="x", desc="d")
    """
    assert findings(body, "JG008") == []


def test_ground_truth_passed_whole_counts_every_key_as_used() -> None:
    body = """
    GROUND_TRUTH = {"a": 1, "b": 2}

    async def evaluate(ev: Evaluator) -> None:
        ev.add_custom_node(result=all(str(v) in ev.answer for v in GROUND_TRUTH.values()), id="x", desc="d")
    """
    assert findings(body, "JG009") == []


def test_ground_truth_never_used_is_reported() -> None:
    body = """
    GROUND_TRUTH = {"a": 1}

    async def evaluate(ev: Evaluator) -> None:
        ev.add_custom_node(result=True, id="x", desc="d")
    """
    assert findings(body, "JG009") == ["`GROUND_TRUTH` is defined but no check uses it."]


def test_unsourced_claim_with_a_missing_field_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        item = await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        leaf = ev.add_leaf(id="x", desc="d", critical=True)
        await ev.verify(claim=f"The name '{item.name}' is 'Ada'.", node=leaf, sources=item.url)
    """
    assert len(findings(body, "JG010")) == 1
    plain = body.replace(", sources=item.url", "")
    assert findings(plain, "JG010") == []


def test_if_gate_on_the_object_accepts_the_claim() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        item = await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        leaf = ev.add_leaf(id="x", desc="d", critical=True)
        if item.name and item.url:
            await ev.verify(claim=f"It is {item.name}.", node=leaf, sources=item.url)
    """
    assert findings(body, "JG010") == []


def test_loop_item_of_an_extracted_list_is_checked() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        listing = await ev.extract(prompt="p", template_class=Listing, extraction_name="l")
        for index, item in enumerate(listing.items):
            leaf = ev.add_leaf(id=f"item_{index}", desc="d")
            await ev.verify(claim=f"It is {item.name}.", node=leaf, sources=item.url)
    """
    assert len(findings(body, "JG010")) == 1


def test_field_with_a_non_null_default_is_never_none() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        item = await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        leaf = ev.add_leaf(id="x", desc="d")
        await ev.verify(claim=f"Tags: {item.tags}.", node=leaf, sources="https://e.org")
    """
    assert findings(body, "JG010") == []


def test_extraction_passed_whole_to_a_helper_counts_every_field() -> None:
    body = """
    def describe(item: Item) -> str:
        return f"{item.name} {item.url} {item.tags}"

    async def evaluate(ev: Evaluator) -> None:
        item = await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        ev.add_custom_node(result=bool(describe(item)), id="x", desc="d")
    """
    assert findings(body, "JG011") == []


def test_discarded_extraction_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        await ev.extract(prompt="p", template_class=Item, extraction_name="i")
    """
    assert findings(body, "JG011") == ["The extraction result is discarded."]


def test_except_that_reraises_is_accepted() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        try:
            await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        except Exception as exc:
            raise RuntimeError("judge failed") from exc
    """
    assert findings(body, "JG013") == []


def test_bare_except_around_an_await_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        try:
            await ev.verify(claim="c", node=leaf)
        except:
            pass
    """
    assert findings(body, "JG013") == ["A bare `except:` hides infrastructure errors."]


def test_broad_except_in_synchronous_parsing_is_accepted() -> None:
    body = """
    def parse(text: str) -> float | None:
        try:
            return float(text)
        except Exception:
            return None

    async def evaluate(ev: Evaluator) -> None:
        try:
            value = parse(ev.answer)
        except Exception:
            value = None
        ev.add_custom_node(result=value is not None, id="x", desc="d")
    """
    assert findings(body, "JG013") == []


def test_broad_except_around_async_for_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        try:
            async for item in ev.stream():
                pass
        except BaseException:
            pass
    """
    assert len(findings(body, "JG013")) == 1


def test_gather_with_return_exceptions_is_reported() -> None:
    body = """
    import asyncio

    async def evaluate(ev: Evaluator) -> None:
        await asyncio.gather(asyncio.sleep(0), return_exceptions=True)
    """
    assert len(findings(body, "JG013")) == 1


def test_coroutine_tested_for_truth_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        leaf = ev.add_leaf(id="x", desc="d")
        if ev.verify(claim="c", node=leaf):
            ev.add_custom_node(result=True, id="y", desc="d")
    """
    assert len(findings(body, "JG014")) == 1


def test_coroutines_collected_and_gathered_are_accepted() -> None:
    body = """
    import asyncio

    async def evaluate(ev: Evaluator) -> None:
        pending = []
        for index in range(3):
            leaf = ev.add_leaf(id=f"x_{index}", desc="d")
            coroutine = ev.verify(claim="c", node=leaf)
            pending.append(coroutine)
        await asyncio.gather(*pending)
    """
    assert findings(body, "JG014") == []


def test_blocking_call_in_a_sync_helper_is_left_to_jg003() -> None:
    body = """
    import time

    def pause() -> None:
        time.sleep(1)
    """
    assert findings(body, "JG012") == []


def test_toolkit_internals_are_forbidden_imports() -> None:
    body = """
    from toolkit.llm.models import LLMRequest
    from toolkit import llm
    """
    assert len(findings(body, "JG003")) == 2


def test_allowed_stdlib_imports_are_accepted() -> None:
    body = """
    import re
    import json
    import urllib.parse
    from collections import Counter
    from datetime import date
    from toolkit import checks
    from toolkit.tree import VerificationNode
    """
    assert findings(body, "JG003") == []


def test_mind2web2_style_entry_point_is_accepted() -> None:
    body = """
    async def evaluate_answer(client, answer, agent_name, answer_name, cache, semaphore, logger, model="o4-mini"):
        return {}
    """
    assert findings(body, "JG001") == []


def test_missing_entry_point_is_reported() -> None:
    assert findings("", "JG001") == ["The module defines no module-level `async def evaluate(ev)`."]


def test_missing_field_in_a_node_description_is_reported() -> None:
    body = """
    async def evaluate(ev: Evaluator) -> None:
        item = await ev.extract(prompt="p", template_class=Item, extraction_name="i")
        ev.add_leaf(id="x", desc=f"The name {item.name} is right", critical=True)
    """
    assert len(findings(body, "JG010")) == 1
    gated = body.replace("        ev.add_leaf", "        if item.name:\n            ev.add_leaf")
    assert findings(gated, "JG010") == []


def test_ground_truth_key_unread_through_an_alias_is_reported() -> None:
    body = """
    GROUND_TRUTH = {"a": 1, "b": 2}

    async def evaluate(ev: Evaluator) -> None:
        gt = GROUND_TRUTH
        ev.add_custom_node(result=gt["a"] == 1, id="x", desc="d")
    """
    assert findings(body, "JG009") == ["`GROUND_TRUTH['b']` is never used."]
