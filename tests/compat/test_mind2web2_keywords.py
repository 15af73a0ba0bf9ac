"""Keywords of Mind2Web 2's Evaluator that change what is judged are honoured or refused,
never dropped: a dropped one would score an imported judge differently without a word.

Mind2Web 2's `extract` passes `use_screenshot` to `Extractor.extract_from_url` and any other
keyword to methods that take none (a `TypeError`); `add_parallel`/`add_sequential` pass their
extra keywords, and `add_leaf` its extra keywords, to `VerificationNode(...)`, which sets the
node's fields (`score`, `status`, `strategy`, `children`) and ignores unknown names;
`initialize` passes its keywords to `create_evaluator`, which takes a fixed set.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from tests.compat.conftest import PAGE, evaluator
from toolkit.backends import ExtractRequest, LLMBackend, ScriptedBackend
from toolkit.compat.evaluator import Evaluator
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner.loader import JudgeContext


class Price(BaseModel):
    price: str | None = None


def extract_requests(backend: ScriptedBackend) -> list[ExtractRequest]:
    return [call for call in backend.calls if isinstance(call, ExtractRequest)]


async def test_extract_use_screenshot_false_sends_the_model_the_page_text_alone():
    provider = ScriptedProvider(lambda request: {"price": "$299"})
    ev = evaluator(LLMBackend(provider))
    await ev.extract("The price", Price, "price", source=PAGE, use_screenshot=False)
    assert [type(part).__name__ for part in provider.calls[0].messages[0].content] == ["TextPart"]


async def test_extract_from_a_page_shows_the_screenshot_by_default_as_in_mind2web2():
    provider = ScriptedProvider(lambda request: {"price": "$299"})
    ev = evaluator(LLMBackend(provider))
    await ev.extract("The price", Price, "price", source=PAGE)
    parts = [type(part).__name__ for part in provider.calls[0].messages[0].content]
    assert parts == ["TextPart", "ImagePart"]


async def test_extract_with_a_keyword_mind2web2_does_not_take_is_a_type_error_before_any_call():
    backend = ScriptedBackend()
    ev = evaluator(backend)
    with pytest.raises(TypeError, match="source_url"):
        await ev.extract("The price", Price, "price", source_url=PAGE)
    assert extract_requests(backend) == []


PARENT_FIELDS = [("score", 1.0), ("status", "passed"), ("strategy", "sequential"), ("children", [])]
DROPPED = [
    *(
        (method, field, value)
        for method in ("add_parallel", "add_sequential")
        for field, value in PARENT_FIELDS
    ),
    ("add_leaf", "strategy", "sequential"),
    ("add_leaf", "children", []),
]


@pytest.mark.parametrize(("method", "field", "value"), DROPPED)
def test_a_node_builder_refuses_a_node_field_it_would_drop(method, field, value):
    ev = evaluator(ScriptedBackend())
    with pytest.raises(TypeError, match=f"`{field}`"):
        getattr(ev, method)(id="n", desc="d", **{field: value})


def test_add_leaf_still_takes_its_score_and_status():
    leaf = evaluator(ScriptedBackend()).add_leaf(id="n", desc="d", score=1.0, status="passed")
    assert (leaf.score, leaf.status) == (1.0, "passed")


def test_a_node_builder_still_ignores_a_name_that_is_no_node_field_as_mind2web2_does():
    ev = evaluator(ScriptedBackend())
    group = ev.add_parallel(id="g", desc="d", unused_flag=1)
    leaf = ev.add_leaf(id="l", desc="d", parent=group, legacy_option=True)
    assert (group.id, leaf.id) == ("g", "l")


def test_initialize_with_a_keyword_mind2web2_does_not_take_is_a_type_error():
    with pytest.raises(TypeError, match="global_cahce"):
        Evaluator().initialize(task_id="t", backend=ScriptedBackend(), global_cahce=None)


def test_initialize_takes_every_keyword_of_mind2web2s_create_evaluator():
    ev = Evaluator()
    ev.initialize(
        task_id="t",
        client=JudgeContext(backend=ScriptedBackend()),
        task_description="d",
        answer="a",
        global_cache=None,
        global_semaphore=None,
        logger=None,
        default_model="o4-mini",
        extract_model="o4-mini",
        verify_model="o4-mini",
        config=None,
        browser_manager=None,
    )
    assert ev.answer == "a"
