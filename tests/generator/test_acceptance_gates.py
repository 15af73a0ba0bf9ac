"""Intended scores are never published unchecked: without a page store for cited pages the
generation stops before any LLM call (unless --no-acceptance), and with acceptance declined a
judge whose all-pass score is below an intended score is still sent back for repair."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.review.labels import AnswerLabels
from generator.stages.checking import unreachable_intended_issues
from generator.stages.debug import DebugReport, DebugRun
from generator.stages.pipeline import generate
from generator.stages.run import GenerationFailed, PipelineOptions
from generator.stages.spec import load_spec
from tests.generator.scripted_generation import EXAMPLE_REPLIES, ROOT, FixturePolicy
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider

TASK = "rust_2024_edition"
PROVIDER = "scripted:tests.generator.scripted_generation:example_run_policy"


def example_task(repo: Path) -> Path:
    """A copy of the rust example task (answers cite pages; intended 1.0 / 0.5 / 0.0)."""
    task_dir = repo / "tasks" / TASK
    shutil.copytree(ROOT / "tasks" / TASK, task_dir)
    return task_dir


def scripted() -> ScriptedProvider:
    """The example's authored replies: its repair 1 gives the partial answer 0 on all-pass."""
    policy = FixturePolicy(ROOT / "tasks" / TASK, EXAMPLE_REPLIES / TASK / "replies", False)
    return ScriptedProvider(policy)


def options(repo: Path, *, acceptance: bool = True) -> PipelineOptions:
    return PipelineOptions(
        model="m",
        extract_model="e",
        repo=repo,
        commit=False,
        isolation="in_process",
        acceptance=acceptance,
    )


def test_generate_without_pages_for_cited_answers_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example_task(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["generate", TASK, "--provider", PROVIDER, "--cache-mode", "off", "--no-commit"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "--pages" in result.stderr and "--no-acceptance" in result.stderr
    assert not (tmp_path / "generated_judges" / f"{TASK}.py").exists()


def test_a_generation_from_a_scripted_policy_says_no_model_was_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example_task(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["generate", TASK, "--provider", PROVIDER, "--cache-mode", "off", "--no-commit"]
    result = CliRunner().invoke(main, [*args, "--no-acceptance"])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "reviews" / f"{TASK}.json").read_text())
    assert record["responses"] == (
        f"scripted policy {PROVIDER.removeprefix('scripted:')}, no model called"
    )
    assert record["usage"] and all(row["cost_usd"] == 0 for row in record["usage"])
    assert all(row["estimated_live_usd"] > 0 for row in record["usage"])


async def test_the_pipeline_refuses_before_any_llm_call_when_intended_scores_cannot_be_compared(
    tmp_path: Path,
) -> None:
    provider = scripted()
    with pytest.raises(GenerationFailed, match="no page store was given"):
        await generate(
            load_spec(example_task(tmp_path)),
            LLMClient(provider, model="m"),
            None,
            options(tmp_path),
        )
    assert provider.calls == []
    assert not (tmp_path / "generated_judges" / f"{TASK}.py").exists()


async def test_with_acceptance_declined_an_intended_score_above_all_pass_is_repaired(
    tmp_path: Path,
) -> None:
    provider = scripted()
    result = await generate(
        load_spec(example_task(tmp_path)),
        LLMClient(provider, model="m"),
        None,
        options(tmp_path, acceptance=False),
    )
    debug = [s for s in result.record.stages if s.stage == "debug"]
    assert [(s.round, s.status) for s in debug[:3]] == [(0, "failed"), (1, "failed"), (2, "ok")]
    assert any("intended score 0.5 is above 0" in d for d in debug[1].details)
    acceptance = next(s for s in result.record.stages if s.stage == "acceptance")
    assert (acceptance.status, acceptance.summary) == ("skipped", "--no-acceptance")


def test_only_an_intended_score_above_the_all_pass_score_is_an_issue() -> None:
    report = DebugReport(
        runs=[
            DebugRun(answer="good", pattern="all_pass", status="ok", score=1.0),
            DebugRun(answer="partial", pattern="all_pass", status="ok", score=0.0),
            DebugRun(answer="partial", pattern="all_fail", status="ok", score=0.0),
            DebugRun(answer="wrong", pattern="all_pass", status="ok", score=0.5),
        ]
    )
    labels = {
        name: AnswerLabels(root_score=score)
        for name, score in {"good": 1.0, "partial": 0.5, "wrong": 0.0}.items()
    }
    issues = unreachable_intended_issues(report, labels)
    assert [(i.kind, i.answer, i.pattern) for i in issues] == [
        ("intended_above_all_pass", "partial", "all_pass")
    ]


def test_an_intended_score_below_the_all_fail_score_is_an_issue() -> None:
    report = DebugReport(
        runs=[
            DebugRun(answer="good", pattern="all_fail", status="ok", score=0.5),
            DebugRun(answer="wrong", pattern="all_pass", status="ok", score=0.5),
            DebugRun(answer="wrong", pattern="all_fail", status="ok", score=0.5),
        ]
    )
    labels = {"good": AnswerLabels(root_score=1.0), "wrong": AnswerLabels(root_score=0.0)}
    issues = unreachable_intended_issues(report, labels)
    assert [(i.kind, i.answer, i.pattern) for i in issues] == [
        ("intended_below_all_fail", "wrong", "all_fail")
    ]
    assert "intended score 0 is below 0.5" in issues[0].message
