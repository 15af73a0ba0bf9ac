"""A first draft with the mistakes models typically make: every one is caught before publish.

The scripted "model" (hand-authored replies in tests/fixtures/generator/launch_gate/replies)
drafts a judge with a misspelled Evaluator keyword, a missing `await`, a wrong `checks` keyword,
a page verification without its sources and a constant nothing reads. Lint catches four at
once, the debug run the missing sources; acceptance then scores the samples as intended.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.acceptance import AcceptanceBackend, acceptance_stage
from generator.debug import SharedExtractor, debug_stage
from generator.labels import intended_labels
from generator.lint import lint_source
from generator.pipeline import GenerationResult, PipelineOptions, generate
from generator.review_runs import ReviewRuns
from generator.spec import LoadedSpec, load_spec
from tests.generator.scripted_generation import FixturePolicy
from toolkit.backends import LLMBackend
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider
from toolkit.pages.store import PageRecord, PageStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "launch_gate"
PAGES = {
    "https://helios.example.org/mission": (
        "Helios-2 mission. Launch: 14 March 2024 from Kourou. The probe reached its working "
        "orbit 42 days after launch."
    ),
    "https://spacefans.example.com/helios-2": "Fan page: Helios-2 launched in spring 2024.",
}


def page_store(path: Path) -> Path:
    with PageStore(path) as store:
        for url, text in PAGES.items():
            store.put(PageRecord.web(url, text, None))
    return path


def honest_source() -> str:
    reply = (FIXTURE / "replies" / "repair_2.md").read_text()
    return re.search(r"```python\n(.*?)```", reply, re.S).group(1)


def client() -> LLMClient:
    return LLMClient(ScriptedProvider(FixturePolicy(FIXTURE)), model="claude-sonnet-5-5")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenerationResult]:
    repo = tmp_path_factory.mktemp("mistakes")
    shutil.copytree(
        FIXTURE, repo / "tasks" / "launch_gate", ignore=shutil.ignore_patterns("replies")
    )
    options = PipelineOptions(
        model="claude-sonnet-5-5",
        extract_model="o4-mini",
        repo=repo,
        commit=False,
        isolation="in_process",
        pages=page_store(repo / "pages"),
    )
    yield asyncio.run(generate(load_spec(repo / "tasks" / "launch_gate"), client(), None, options))


def details(result: GenerationResult, stage: str, round_number: int) -> str:
    found = [s for s in result.record.stages if (s.stage, s.round) == (stage, round_number)]
    return "\n".join(d for s in found for d in s.details)


def test_each_typical_mistake_is_caught_by_the_stage_named_for_it(generated) -> None:
    caught_by = {
        "misspelled Evaluator keyword (critcal=)": (
            "lint",
            0,
            "`ev.add_leaf(...)` has no keyword `critcal`; did you mean `critical`?",
        ),
        "missing await on ev.verify": ("lint", 0, "JG014 `ev.verify(...)` is never awaited"),
        "wrong checks keyword (day_first=)": (
            "lint",
            0,
            "has no keyword `day_first`; did you mean `dayfirst`?",
        ),
        "constant nothing reads": (
            "lint",
            0,
            "JG018 `OFFICIAL_DOMAIN` is defined but nothing reads it.",
        ),
        "page verify without its sources": ("debug", 1, "source_missing"),
    }
    for mistake, (stage, round_number, evidence) in caught_by.items():
        assert evidence in details(generated, stage, round_number), mistake


def test_the_runtime_rejects_the_misspelled_keyword_too(generated) -> None:
    assert "did you mean `critical`" in details(generated, "debug", 0)


def test_the_page_check_without_sources_is_located_at_its_line(generated) -> None:
    text = details(generated, "debug", 1)
    assert re.search(r"source_missing \(line \d+\) in \d+/12 runs", text)


def test_nothing_is_published_until_every_mistake_is_gone(generated) -> None:
    judge = Path(generated.publish.judge_path).read_text()
    assert judge.endswith(honest_source())
    for mistake in ("critcal", "day_first", "OFFICIAL_DOMAIN"):
        assert mistake not in judge


def test_the_published_judge_scores_the_samples_as_intended_and_kills_every_mutation(
    generated,
) -> None:
    acceptance = generated.record.acceptance
    assert acceptance is not None and acceptance.ok
    assert {a.answer: a.actual for a in acceptance.answers} == {
        "good": 1.0,
        "partial": 0.5,
        "wrong": 0.0,
    }
    assert generated.record.mutation is not None and generated.record.mutation.kill_rate == 1.0


async def test_the_honest_draft_of_the_same_task_has_zero_findings(tmp_path: Path) -> None:
    loaded: LoadedSpec = load_spec(FIXTURE)
    source = honest_source()
    report = lint_source(source, "launch_gate.py")
    assert report.findings == [], report.render()
    llm = client()
    extractor = SharedExtractor(LLMBackend(llm, model="o4-mini"))
    debug = await debug_stage(report.source, loaded, extractor, isolation="in_process")
    assert debug.issues == []
    judge = tmp_path / "launch_gate.py"
    judge.write_text(report.source)
    backend = AcceptanceBackend(extractor, LLMBackend(llm, model="o4-mini"))
    pages = PageStore(page_store(tmp_path / "pages"), readonly=True)
    async with ReviewRuns(backend, pages=pages, sandbox=False) as runs:
        acceptance, _ = await acceptance_stage(judge, loaded, runs, intended_labels(loaded))
    assert acceptance.ok
    assert [f for a in acceptance.answers for f in a.findings] == []
