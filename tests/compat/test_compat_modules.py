"""What imported judges find in toolkit.compat: Mind2Web 2 spellings over judgegen's core."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import toolkit.compat as mind2web2
from toolkit.backends import ScriptedBackend
from toolkit.compat.evaluator import Evaluator
from toolkit.compat.llm_client.base_client import LLMClient
from toolkit.compat.utils.cache_filesys import CacheFileSys
from toolkit.errors import InfraError, TemplateError
from toolkit.runner.loader import JudgeContext
from toolkit.tools.maps import GoogleMapsTool


def make_evaluator() -> Evaluator:
    evaluator = Evaluator()
    evaluator.initialize(
        task_id="t",
        client=JudgeContext(backend=ScriptedBackend()),
        task_description="d",
        answer="a",
        global_cache=CacheFileSys("unused/dir"),
        global_semaphore=None,
        logger=None,
        default_model="o4-mini",
    )
    return evaluator


def test_compat_evaluator_is_the_core_evaluator():
    from toolkit.evaluator import Evaluator as Core

    assert issubclass(Evaluator, Core)


def test_older_id_underscore_keyword_names_the_node():
    ev = make_evaluator()
    group = ev.add_parallel(id_="group", desc="g", critical=False)
    leaf = ev.add_leaf(id_="leaf", desc="l", parent=group)
    assert (group.id, leaf.id) == ("group", "leaf")
    assert ev.find_node("leaf") is leaf


def test_node_without_any_id_is_a_type_error():
    with pytest.raises(TypeError):
        make_evaluator().add_sequential(desc="no id")


def test_positional_arguments_still_work():
    ev = make_evaluator()
    node = ev.add_custom_node(True, "check", "a check")
    assert (node.id, node.status, node.critical) == ("check", "passed", True)


def test_add_existence_node_is_add_custom_node():
    node = make_evaluator().add_existence_node(False, "exists", "x")
    assert (node.status, node.score) == ("failed", 0.0)


def test_id_helpers_reflect_the_tree():
    ev = make_evaluator()
    ev.add_leaf(id="a", desc="a")
    assert ev.get_all_node_ids() == ["a", "root"]
    assert not ev.check_id_available("a")
    assert ev.check_id_available("b")
    assert ev.get_node_count() == 2


async def test_close_is_a_harmless_no_op():
    await make_evaluator().close()


def test_llm_client_stand_in_refuses_direct_requests():
    client = LLMClient(provider="openai", is_async=True)
    with pytest.raises(InfraError):
        client.response(model="o4-mini", messages=[])


async def test_llm_client_stand_in_refuses_async_requests():
    with pytest.raises(InfraError):
        await LLMClient().async_response(model="o4-mini", messages=[])


def test_root_package_mirrors_mind2web2_submodules():
    assert mind2web2.evaluator.Evaluator is Evaluator
    assert mind2web2.utils.cache_filesys.CacheFileSys is CacheFileSys
    assert mind2web2.llm_client.base_client.LLMClient is LLMClient
    assert mind2web2.api_tools.tool_googlemap.GoogleMapsTool is GoogleMapsTool
    assert mind2web2.verification_tree.VerificationNode is mind2web2.VerificationNode


def test_eval_toolkit_names_import_but_refuse_use():
    from toolkit.compat.eval_toolkit import Extractor, Verifier, create_evaluator

    for use in (lambda: create_evaluator(client=None), Extractor, Verifier):
        with pytest.raises(InfraError, match="not available under judgegen"):
            use()


def test_verifier_logger_keeps_warnings_and_errors_in_the_summary_info():
    ev = make_evaluator()
    ev.verifier.logger.error("lookup of %s failed", "Powell's")
    ev.extractor.logger.warning("odd extraction")
    ev.verifier.logger.info("routine detail")
    info = ev.get_summary()["eval_breakdown"][0]["info"]
    assert [entry["judge_log"] for entry in info if "judge_log" in entry] == [
        {"level": "ERROR", "message": "lookup of Powell's failed"},
        {"level": "WARNING", "message": "odd extraction"},
    ]


class Hours(BaseModel):
    hours: dict[str, str] = {}


async def test_extracting_a_map_template_is_a_recorded_error_as_in_the_core():
    ev = make_evaluator()
    with pytest.raises(TemplateError):
        await ev.extract("opening hours", Hours, "hours")
    summary = ev.get_summary()
    assert summary["status"] == "incomplete"
    assert [(e["target"], e["type"]) for e in summary["errors"]] == [("hours", "TemplateError")]
