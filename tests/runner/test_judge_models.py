"""A result names the models the run's backend judged with, whatever models the judge named."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.runner.helpers import FIXTURES, DictPages, options, result_files
from tests.fixtures.runner.scripted import make_backend
from toolkit.runner.inputs import discover_answers
from toolkit.runner.scheduler import run_evaluations

ASKING_JUDGE = """
from toolkit.compat.evaluator import Evaluator

TASK_ID = "python_match"


async def evaluate_answer(
    client, answer, agent_name, answer_name, cache, semaphore, logger, model="o4-mini"
):
    evaluator = Evaluator()
    root = evaluator.initialize(
        task_id=TASK_ID, agent_name=agent_name, answer_name=answer_name, client=client,
        answer=answer, global_cache=cache, global_semaphore=semaphore, logger=logger,
        default_model=model, extract_model="gpt-4.1", verify_model="gpt-4.1",
    )
    leaf = evaluator.add_leaf(id="same", desc="The values match", parent=root)
    await evaluator.verify(claim="'3.10' is the same as '3.10'", node=leaf)
    return evaluator.get_summary()
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """One answer for `python_match`, judged by a Mind2Web 2-style judge naming gpt-4.1."""
    answers = tmp_path / "answers" / "alpha" / "python_match"
    answers.mkdir(parents=True)
    shutil.copy(FIXTURES / "answers" / "alpha" / "python_match" / "answer_1.md", answers)
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "python_match.py").write_text(ASKING_JUDGE)
    (tmp_path / "reviews").mkdir()
    return tmp_path


def judged(workspace: Path, backend: Any) -> dict[str, Any]:
    """The one result of running the workspace's judge with `backend`."""
    asyncio.run(
        run_evaluations(
            discover_answers(workspace / "answers"),
            backend=backend,
            options=options(workspace),
            isolation="in_process",
            pages=DictPages(),
        )
    )
    (result,) = result_files(workspace / "results").values()
    assert result["status"] == "complete", result["errors"]
    return result


def test_the_result_names_the_models_the_backend_used(workspace: Path) -> None:
    result = judged(workspace, make_backend())
    assert (result["judge_model"], result["extract_model"]) == ("scripted-judge", "scripted-judge")


def test_the_metrics_count_the_model_the_backend_used(workspace: Path) -> None:
    judged(workspace, make_backend())
    summary = json.loads((workspace / "results" / "alpha" / "summary.json").read_text())
    assert summary["judge_models"] == {"scripted-judge": 1}


def test_a_judge_asking_for_another_model_gets_a_note_naming_both_and_the_setting(
    workspace: Path,
) -> None:
    notes = judged(workspace, make_backend())["notes"]
    assert notes == [
        f"the judge asked for {role} model 'gpt-4.1' but the run's backend used "
        "'scripted-judge' (the run's --model or LLM settings choose the model, not the judge)"
        for role in ("verification", "extraction")
    ]


def test_only_the_model_that_differs_gets_a_note(workspace: Path) -> None:
    judge = workspace / "judges" / "python_match.py"
    judge.write_text(judge.read_text().replace('extract_model="gpt-4.1"', "extract_model=model"))
    notes = judged(workspace, make_backend())["notes"]
    assert [note.split(" model ")[0] for note in notes] == ["the judge asked for verification"]
