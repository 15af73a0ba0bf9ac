"""Repair and reflection limits: repeats stop early, rounds are bounded, bad revisions revert."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.pipeline import GenerationFailed, PipelineOptions, generate
from generator.spec import load_spec
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "river_lengths"
GOOD = (FIXTURE / "replies" / "repair_2.md").read_text()
OK_FINDINGS = [
    {"item": i, "status": "ok", "evidence": "fine", "fix": ""}
    for i in ("correctness", "coherence", "completeness", "edge_cases")
]


def with_import(reply: str, module: str) -> str:
    return reply.replace("from pydantic import", f"import {module}\n\nfrom pydantic import", 1)


class Script:
    """Replies by request label; extraction returns the fixture's extraction for any answer."""

    def __init__(self, replies: dict[str, str | dict]) -> None:
        self.replies = replies

    def __call__(self, request: LLMRequest) -> str | dict:
        if request.metadata.purpose == "extract":
            return {"rivers": [{"name": "Nile", "length_km": 6650, "url": "https://x.example"}]}
        return self.replies[request.metadata.label or ""]


async def run(tmp_path: Path, replies: dict[str, str | dict]) -> tuple[ScriptedProvider, object]:
    task = tmp_path / "tasks" / "river_lengths"
    shutil.copytree(FIXTURE, task, ignore=shutil.ignore_patterns("replies"))
    provider = ScriptedProvider(Script(replies))
    options = PipelineOptions(
        model="m", extract_model="e", repo=tmp_path, commit=False, isolation="in_process"
    )
    result = await generate(load_spec(task), LLMClient(provider, model="m"), None, options)
    return provider, result


async def test_same_error_twice_stops_repairing(tmp_path: Path) -> None:
    broken = with_import(GOOD, "os")
    with pytest.raises(GenerationFailed, match="same error repeated") as info:
        await run(tmp_path, {"draft": broken, "repair_1": broken})
    assert [(s.stage, s.round, s.status) for s in info.value.stages][-3:] == [
        ("lint", 1, "failed"),
        ("debug", 1, "ok"),  # the code still runs, so lint and debug go to the model together
        ("repair", 1, "stopped"),
    ]
    assert not (tmp_path / "generated_judges" / "river_lengths.py").exists()


async def test_repairs_are_bounded_at_three_rounds(tmp_path: Path) -> None:
    replies = {
        "draft": with_import(GOOD, "os"),
        "repair_1": with_import(GOOD, "sys"),
        "repair_2": with_import(GOOD, "socket"),
        "repair_3": with_import(GOOD, "subprocess"),
    }
    with pytest.raises(GenerationFailed, match="after 3 repair rounds"):
        await run(tmp_path, replies)


async def test_a_revision_that_fails_lint_is_reverted_and_recorded(tmp_path: Path) -> None:
    bad_revision = with_import(GOOD, "random").split("```python\n")[1].split("```")[0]
    replies = {
        "draft": GOOD,
        "reflect_1": {
            "findings": [{**OK_FINDINGS[0], "status": "problem", "fix": "x"}],
            "revised_script": bad_revision,
        },
        "reflect_2": {"findings": OK_FINDINGS, "revised_script": None},
    }
    _, result = await run(tmp_path, replies)
    passes = result.record.reflections
    assert [p.outcome for p in passes] == ["reverted", "no_change"]
    assert "JG003" in passes[0].reason or "F401" in passes[0].reason
    judge = (tmp_path / "generated_judges" / "river_lengths.py").read_text()
    assert "import random" not in judge and "async def evaluate" in judge


async def test_no_reflection_problems_means_one_pass(tmp_path: Path) -> None:
    replies = {"draft": GOOD, "reflect_1": {"findings": OK_FINDINGS, "revised_script": None}}
    provider, result = await run(tmp_path, replies)
    assert [r.metadata.purpose for r in provider.calls].count("reflect") == 1
    assert [p.outcome for p in result.record.reflections] == ["no_change"]


async def test_reply_without_code_block_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(GenerationFailed, match="no ```python code block"):
        await run(tmp_path, {"draft": "I cannot write this judge."})
