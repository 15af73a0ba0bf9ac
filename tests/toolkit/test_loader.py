"""Loading and running judges: entry points, and failures a judge cannot hide."""

from __future__ import annotations

import textwrap

import pytest

from toolkit.backends import ScriptedBackend
from toolkit.errors import JudgeFailed, SpecError, TemplateError
from toolkit.runner.loader import load_judge

SWALLOWING_JUDGE = """
from toolkit.tools import call_tool

TASK_ID = "swallow"
TASK_DESCRIPTION = "Find the distance."


async def evaluate(ev):
    try:
        await call_tool("maps.calculate_distance", origin="a", destination="b")
    except Exception:
        pass
    ev.add_custom_node(result=True, id="done", desc="judge finished")
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


async def test_a_swallowed_tool_failure_still_makes_the_evaluation_incomplete(tmp_path):
    judge = load_judge(write(tmp_path, "swallow.py", SWALLOWING_JUDGE))
    summary, _ = await judge.run(backend=ScriptedBackend(), answer="a")
    assert summary["status"] == "incomplete"
    assert summary["errors"][0]["operation"] == "tool"
    assert summary["final_score"] == 1.0


MAP_TEMPLATE_JUDGE = """
from pydantic import BaseModel

TASK_ID = "maps"
TASK_DESCRIPTION = "List the opening hours."


class Hours(BaseModel):
    hours: dict[str, str] = {}


async def evaluate(ev):
    try:
        found = await ev.extract(prompt="hours", template_class=Hours)
    except Exception:
        found = Hours()
    ev.add_custom_node(result=not found.hours, id="closed", desc="no hours given")
"""


async def test_a_judge_that_swallows_a_map_template_error_is_still_incomplete(tmp_path):
    judge = load_judge(write(tmp_path, "maps.py", MAP_TEMPLATE_JUDGE))
    summary, _ = await judge.run(backend=ScriptedBackend(), answer="a")
    assert summary["status"] == "incomplete"
    (error,) = summary["errors"]
    assert error["type"] == "TemplateError" and "Hours has a map field" in error["message"]


async def test_a_judge_whose_map_template_error_propagates_fails_with_that_error(tmp_path):
    source = """
    from pydantic import BaseModel

    TASK_ID = "maps"

    class Hours(BaseModel):
        hours: dict[str, str] = {}

    async def evaluate(ev):
        await ev.extract(prompt="hours", template_class=Hours)
    """
    judge = load_judge(write(tmp_path, "maps.py", source))
    with pytest.raises(JudgeFailed) as info:
        await judge.run(backend=ScriptedBackend(), answer="a")
    assert isinstance(info.value.cause, TemplateError)
    assert info.value.partial["status"] == "incomplete"


async def test_native_judge_gets_task_constants_and_ground_truth(tmp_path):
    source = """
    TASK_ID = "gt"
    TASK_DESCRIPTION = "Describe."
    GROUND_TRUTH = {"year": 2023}
    ROOT_STRATEGY = "sequential"

    async def evaluate(ev):
        ev.add_custom_info({"k": 1}, "custom")
        ev.add_custom_node(result=True, id="a", desc="a")
    """
    judge = load_judge(write(tmp_path, "gt.py", source))
    summary, evaluator = await judge.run(backend=ScriptedBackend(), answer="x")
    assert judge.style == "native" and judge.task_id == "gt"
    assert evaluator.root.strategy.value == "sequential"
    assert summary["eval_breakdown"][0]["info"] == [
        {"ground_truth": {"year": 2023}},
        {"custom": {"k": 1}},
    ]


async def test_a_failing_judge_raises_judge_failed_with_its_partial_tree(tmp_path):
    source = """
    TASK_ID = "boom"
    TASK_DESCRIPTION = "x"

    async def evaluate(ev):
        ev.add_custom_node(result=True, id="before", desc="built before the crash")
        raise RuntimeError("judge bug")
    """
    judge = load_judge(write(tmp_path, "boom.py", source))
    with pytest.raises(JudgeFailed) as info:
        await judge.run(backend=ScriptedBackend(), answer="x")
    assert isinstance(info.value.cause, RuntimeError) and not info.value.timed_out
    tree = info.value.partial["eval_breakdown"][0]["verification_tree"]
    assert [child["id"] for child in tree["children"]] == ["before"]


async def test_a_judge_over_its_deadline_raises_judge_failed_marked_timed_out(tmp_path):
    source = """
    import asyncio

    TASK_ID = "slow"

    async def evaluate(ev):
        ev.add_custom_node(result=True, id="before", desc="built before the wait")
        await asyncio.sleep(30)
    """
    judge = load_judge(write(tmp_path, "slow.py", source))
    with pytest.raises(JudgeFailed) as info:
        await judge.run(backend=ScriptedBackend(), answer="x", timeout_s=0.05)
    assert info.value.timed_out and isinstance(info.value.cause, TimeoutError)
    assert info.value.partial["eval_breakdown"][0]["verification_tree"]["children"]


def test_a_module_without_an_entry_point_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="evaluate"):
        load_judge(write(tmp_path, "none.py", "TASK_ID = 'x'\n"))
