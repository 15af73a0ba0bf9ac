"""Generator prompts: snapshots with fixed inputs, the cacheable prefix, and the checklist file.

Set JUDGEGEN_UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended template change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.context import GenerationContext, JudgeExample
from generator.draft import Problem, draft_request, repair_request
from generator.reflect import load_checklist, reflect_request
from generator.spec import load_spec
from toolkit.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "generator"
SNAPSHOTS = FIXTURES / "snapshots"
EXAMPLE = """TASK_ID = "tiny"\n\n\nasync def evaluate(ev):\n    ev.add_custom_node(result=True, id="ok", desc="ok")\n"""
PROBLEM = Problem(
    stage="debug",
    signature="exception:IndexError",
    summary="Running the judge on sample answer 'partial' failed: IndexError",
    details='Traceback (most recent call last):\n  File "river_lengths.py", line 3, in evaluate\nIndexError: list index out of range',
    lines=["3| river = rivers[1]"],
)
SOURCE = "TASK_ID = 'river_lengths'\n\n\nasync def evaluate(ev):\n    river = rivers[1]\n"


def context_for(task_dir: Path = FIXTURES / "river_lengths") -> GenerationContext:
    return GenerationContext(
        loaded=load_spec(task_dir),
        api_reference="API REFERENCE (fixed for the snapshot)",
        mistakes_catalog="MISTAKES CATALOG (fixed for the snapshot)",
        examples=[JudgeExample(task_id="tiny", origin="bundled", source=EXAMPLE)],
    )


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("JUDGEGEN_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; set JUDGEGEN_UPDATE_SNAPSHOTS=1 if intended"


def user_text(request) -> str:
    return request.messages[0].content[0].text


def reflect_for(context: GenerationContext, earlier: list[str] | None = None):
    return reflect_request(
        context,
        "model-x",
        source=SOURCE,
        skeleton="root\n  river_1  [critical]",
        results="good: all_pass=1, all_fail=0",
        checklist=load_checklist(),
        pass_number=1,
        max_passes=2,
        earlier=earlier,
    )


def test_system_prefix_snapshot() -> None:
    check_snapshot("system.txt", context_for().system_block().text)


def test_draft_prompt_snapshot() -> None:
    check_snapshot("draft.txt", user_text(draft_request(context_for(), "model-x")))


def test_repair_prompt_snapshot() -> None:
    request = repair_request(context_for(), "model-x", SOURCE, PROBLEM, 2)
    check_snapshot("repair.txt", user_text(request))


def test_reflect_prompt_snapshot() -> None:
    check_snapshot(
        "reflect.txt", user_text(reflect_for(context_for(), ["pass 1: reverted. It failed lint."]))
    )


def test_stable_prefix_is_one_cached_block_identical_across_calls_and_tasks() -> None:
    river, other = context_for(), context_for(ROOT / "tasks" / "rust_2024_edition")
    requests = [
        draft_request(river, "model-x"),
        repair_request(river, "model-x", SOURCE, PROBLEM, 1),
        reflect_for(river),
        draft_request(other, "model-x"),
    ]
    blocks = [request.system for request in requests]
    assert all(len(b) == 1 and b[0].cache for b in blocks)
    assert len({b[0].text for b in blocks}) == 1
    assert "river_lengths" not in blocks[0][0].text


def test_requests_carry_their_purpose_for_the_ledger() -> None:
    context = context_for()
    assert draft_request(context, "m").metadata.purpose == "draft"
    assert repair_request(context, "m", SOURCE, PROBLEM, 1).metadata.purpose == "repair"
    assert reflect_for(context).metadata.purpose == "reflect"
    assert reflect_for(context).output_schema is None  # the module comes back in a code fence


def test_checklist_covers_the_five_reviews() -> None:
    assert [item.id for item in load_checklist().items] == [
        "correctness",
        "coherence",
        "completeness",
        "edge_cases",
        "api_use",
    ]


def test_checklist_rejects_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "checklist.yaml"
    path.write_text("version: 1\nitems:\n  - {id: a, title: A, question: Q, weight: 2}\n")
    with pytest.raises(SpecError) as info:
        load_checklist(path)
    assert info.value.field == "items.0.weight"


def test_checklist_rejects_duplicate_ids(tmp_path: Path) -> None:
    path = tmp_path / "checklist.yaml"
    path.write_text(
        "version: 1\nitems:\n  - {id: a, title: A, question: Q}\n  - {id: a, title: B, question: R}\n"
    )
    with pytest.raises(SpecError, match="duplicate item ids: a"):
        load_checklist(path)
