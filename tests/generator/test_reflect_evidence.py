"""The reflection's evidence names every mutation the kill rate counts as not killed: those that
survived, those the judge failed on (error) and those whose score dropped only while a cited
page was missing (inconclusive), each labelled with its outcome and bounded in size; every
rewrite keeping the meaning whose score was not kept, with the fix; and the cited pages each
accepted answer was judged without."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.review.mutate import MutationReport, MutationRow, MutationStage, RewriteRow
from generator.stages.acceptance import AcceptanceReport, AnswerAcceptance
from generator.stages.pipeline import generate
from generator.stages.reflect import MAX_EVIDENCE_CHARS, MAX_MUTATION_ROWS, evidence_text
from generator.stages.run import PipelineOptions
from generator.stages.spec import load_spec
from tests.generator.scripted_generation import BRITTLE_MUTANTS, FixturePolicy
from tests.generator.test_examples import checkout
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL

ROOT = Path(__file__).resolve().parents[2]
TASK = "rust_2024_edition"
BUILT = "https://x.example/built"


def row(name: str, outcome: str, error: str | None = None) -> MutationRow:
    return MutationRow(
        name=name,
        description=f"{name} change",
        score={"error": None, "survived": 1.0}.get(outcome, 0.0),
        outcome=outcome,
        error=error,
        missing_pages=[BUILT] if outcome == "inconclusive" else [],
    )


def stage_of(rows: list[MutationRow]) -> MutationStage:
    report = MutationReport(task_id=TASK, answer="good", original_score=1.0, mutations=rows)
    return MutationStage(reports=[report])


def evidence_lines(mutation: MutationStage) -> list[str]:
    return evidence_text(load_spec(ROOT / "tasks" / TASK), None, mutation).splitlines()


def test_errored_and_inconclusive_mutations_are_shown_labelled_beside_the_survivors() -> None:
    mutation = stage_of(
        [
            row("m_killed", "killed"),
            row("m_survived", "survived"),
            row("m_error", "error", error="ValueError: the judge raised: no URL"),
            row("m_inconclusive", "inconclusive"),
        ]
    )
    lines = evidence_lines(mutation)
    assert "survived: good: m_survived (m_survived change) still scored 1" in lines
    assert (
        "error: good: m_error (m_error change) the judge failed: ValueError: the judge raised: "
        "no URL" in lines
    )
    assert (
        "inconclusive: good: m_inconclusive (m_inconclusive change) scored 0 while cited pages "
        f"were missing from the page store: {BUILT}" in lines
    )
    assert not any("m_killed" in line for line in lines)


def test_the_mutation_rows_shown_are_bounded_in_number_and_length() -> None:
    many = [row(f"m{i}", "error", error="E" * 5000) for i in range(MAX_MUTATION_ROWS + 7)]
    lines = evidence_lines(stage_of(many))
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == MAX_MUTATION_ROWS
    assert all(len(line) <= MAX_EVIDENCE_CHARS + 2 for line in errors)
    assert "(7 more error mutations not shown)" in lines


def test_a_rewrite_whose_score_changed_is_shown_with_the_fix_and_a_kept_one_is_not() -> None:
    rewrites = [
        RewriteRow(name="reformat_date", description="d -> iso", score=0.5, outcome="changed"),
        RewriteRow(name="reformat_number", description="1,200 -> 1200", score=1, outcome="kept"),
    ]
    report = MutationReport(task_id=TASK, answer="good", original_score=1.0, rewrites=rewrites)
    lines = evidence_lines(MutationStage(reports=[report]))
    assert "rewrite changed: good: reformat_date (d -> iso) scored 0.5 instead of 1" in lines
    assert (
        "a rewrite keeps the answer's meaning, so its score must not change: compare values by "
        "meaning with toolkit.checks (same_date, parse_number, ...), not by their written form; "
        "never copy an expected value from a sample answer" in lines
    )
    assert not any("reformat_number" in line for line in lines)


def test_an_accepted_answer_judged_without_a_cited_page_says_which() -> None:
    answer = AnswerAcceptance(
        answer="good", intended=1.0, actual=0.0, status="mismatch", missing_pages=[BUILT]
    )
    acceptance = AcceptanceReport(answers=[answer])
    text = evidence_text(load_spec(ROOT / "tasks" / TASK), acceptance, None)
    assert f"judged without cited pages missing from the page store: {BUILT}" in text.splitlines()


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout of the example task with its pages in a store at `pages`."""
    checkout(tmp_path, TASK)
    monkeypatch.chdir(tmp_path)
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert CliRunner().invoke(main, pages).exit_code == 0
    return tmp_path


async def test_the_reflection_prompt_names_the_mutations_the_judge_failed_on(
    example: Path,
) -> None:
    """`brittle_mutants`: the draft raises on two of the three mutations of the good answer."""
    policy = FixturePolicy(example / "tasks" / TASK, BRITTLE_MUTANTS / TASK / "replies")
    asked: list[LLMRequest] = []

    def recording(request: LLMRequest) -> object:
        asked.append(request)
        return policy(request)

    provider = ScriptedProvider(recording)
    clients = [
        LLMClient(provider, model=m) for m in (DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL)
    ]
    options = PipelineOptions(
        model=DEFAULT_GENERATION_MODEL,
        extract_model=DEFAULT_JUDGE_MODEL,
        repo=example,
        commit=False,
        pages=example / "pages",
        isolation="in_process",
    )
    await generate(load_spec(example / "tasks" / TASK), clients[0], clients[1], options)
    reflect = [r for r in asked if r.metadata.purpose == "reflect"]
    assert len(reflect) == 1
    prompt = reflect[0].prompt_text()
    error_lines = [line for line in prompt.splitlines() if line.startswith("error: good: ")]
    assert [line.split(" (")[0] for line in error_lines] == [
        "error: good: drop_cited_url",
        "error: good: replace_name",
    ]
    assert all("the judge failed: ValueError" in line for line in error_lines)
    assert "survived: " not in prompt
