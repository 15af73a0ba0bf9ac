"""The native Evaluator rejects unknown keywords; the Mind2Web 2 layer stays lenient."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from toolkit.backends import ScriptedBackend
from toolkit.compat.evaluator import Evaluator as CompatEvaluator
from toolkit.evaluator import Evaluator


class Release(BaseModel):
    version: str | None = None


def native() -> Evaluator:
    return Evaluator.create(
        task_id="t", task_description="d", answer="a", backend=ScriptedBackend()
    )


async def test_verify_with_source_instead_of_sources_names_sources() -> None:
    ev = native()
    leaf = ev.add_leaf(id="leaf", desc="d")
    with pytest.raises(TypeError, match="did you mean `sources`"):
        await ev.verify(claim="c", node=leaf, source="https://example.org")  # type: ignore[call-arg]


async def test_extract_with_a_misspelled_keyword_fails_before_any_backend_call() -> None:
    ev = native()
    with pytest.raises(TypeError, match="did you mean `extraction_name`"):
        await ev.extract(prompt="p", template_class=Release, extract_name="r")  # type: ignore[call-arg]
    assert ev.verifications == [] and ev._extractions == []


@pytest.mark.parametrize("method", ["add_parallel", "add_sequential", "add_leaf"])
def test_node_builders_reject_unknown_keywords(method: str) -> None:
    with pytest.raises(TypeError, match="did you mean `critical`"):
        getattr(native(), method)(id="n", desc="d", critcal=True)


def test_custom_node_rejects_parent_misspelled() -> None:
    with pytest.raises(TypeError, match="did you mean `parent`"):
        native().add_custom_node(result=True, id="n", desc="d", parnet=None)  # type: ignore[call-arg]


def test_initialize_rejects_unknown_keywords_natively() -> None:
    with pytest.raises(TypeError, match="global_cache"):
        Evaluator().initialize(task_id="t", global_cache=None)  # type: ignore[call-arg]


async def test_mind2web2_layer_drops_keywords_published_judges_pass() -> None:
    ev = CompatEvaluator()
    ev.initialize(
        task_id="t",
        backend=ScriptedBackend(),
        global_cache=object(),
        global_semaphore=object(),
        logger=None,
        answer="a",
    )
    assert ev.answer == "a"
    node = ev.add_parallel(id_="group", desc="g", critical=False, unused_flag=1)
    leaf = ev.add_leaf(id="leaf", desc="d", parent=node, legacy_option=True)
    assert await ev.verify(claim="c", node=leaf, sources=None, legacy_option=True) in (True, False)
    assert leaf.status in ("passed", "failed")
