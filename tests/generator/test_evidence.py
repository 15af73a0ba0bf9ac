"""Runtime evidence checks read one run's tree and verification log and name the judge line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator.review.labels import intended_labels
from generator.review.runs import ReviewRuns
from generator.stages.acceptance import AcceptanceBackend, acceptance_stage
from generator.stages.debug import SharedExtractor, debug_stage
from generator.stages.evidence import (
    all_pass_below_one,
    citing_answers,
    claim_placeholders,
    pages_never_read,
    source_missing,
    sources_not_cited,
    verdicts_overridden,
)
from generator.stages.spec import LoadedSpec, SampleAnswer, TaskSpec, load_spec
from toolkit.backends import LLMBackend, Verdict, VerifyRequest
from toolkit.llm.client import LLMClient
from toolkit.llm.replay import ReplayProvider
from toolkit.pages.m2w2 import import_m2w2
from toolkit.pages.store import PageStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "recordings").iterdir() if p.is_dir())


def summary(leaves: list[dict[str, Any]], verifications: list[dict[str, Any]], score: float):
    tree = {"id": "root", "desc": "r", "critical": False, "strategy": "parallel", "children": []}
    tree["children"] = [
        {"critical": False, "strategy": "parallel", "children": [], **leaf} for leaf in leaves
    ]
    return {
        "final_score": score,
        "eval_breakdown": [{"verification_tree": tree}],
        "verifications": verifications,
    }


def test_page_leaf_verified_without_sources_is_reported_at_its_line() -> None:
    run = summary(
        [{"id": "official", "desc": "The official page announces it", "status": "passed"}],
        [{"node_id": "official", "claim": "c", "sources": [], "passed": True, "line": 31}],
        1.0,
    )
    [finding] = source_missing(run)
    assert (finding.kind, finding.node_id, finding.line) == ("source_missing", "official", 31)


def test_plain_check_leaf_without_sources_is_fine() -> None:
    run = summary(
        [{"id": "date", "desc": "The date is right", "status": "passed"}],
        [{"node_id": "date", "claim": "c", "sources": [], "passed": True}],
        1.0,
    )
    assert source_missing(run) == []


CITED = "Launched in March. Official page: https://helios.example.org/mission"


def page_check(sources: list[str], info: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    run = summary(
        [{"id": "official", "desc": "The official page confirms it", "status": "passed"}],
        [{"node_id": "official", "claim": "c", "sources": sources, "passed": True, "line": 12}],
        1.0,
    )
    run["eval_breakdown"][0]["info"] = info or []
    return run


def test_a_page_leaf_verified_only_on_a_page_the_answer_does_not_cite_is_reported() -> None:
    [finding] = sources_not_cited(page_check(["https://helios.example.org/launch"]), CITED)
    assert (finding.kind, finding.node_id, finding.line) == ("source_not_cited", "official", 12)
    assert "https://helios.example.org/launch" in finding.message


def test_a_cited_page_in_another_spelling_is_the_cited_page() -> None:
    assert sources_not_cited(page_check(["http://www.helios.example.org/mission/"]), CITED) == []


def test_a_reference_page_beside_the_cited_one_is_fine() -> None:
    sources = ["https://helios.example.org/launches", "https://helios.example.org/mission"]
    assert sources_not_cited(page_check(sources), CITED) == []


def test_a_page_an_extraction_returned_is_not_the_judges_own() -> None:
    info = [{"launch": {"page_url": "https://helios.example.org/launch"}}]
    run = page_check(["https://helios.example.org/launch"], info)
    assert sources_not_cited(run, CITED) == []


def test_claims_with_none_empty_list_or_placeholder_are_reported() -> None:
    entries = [
        {"node_id": "a", "claim": "The version is None.", "passed": True, "line": 3},
        {"node_id": "b", "claim": "The items are [].", "passed": True},
        {"node_id": "c", "claim": "The date is {release.date}.", "passed": False},
        {"node_id": "d", "claim": "The version is 1.85.0.", "passed": True},
        {"node_id": "e", "claim": "None", "passed": None},
    ]
    found = claim_placeholders(summary([], entries, 1.0))
    assert [f.node_id for f in found] == ["a", "b", "c"]


def test_a_leaf_verified_twice_ending_as_either_verdict_is_not_overridden() -> None:
    # verifications are logged as they start; two on one leaf may finish in either order
    run = summary(
        [{"id": "hours", "desc": "The hours are right", "status": "failed"}],
        [
            {"node_id": "hours", "claim": "a", "passed": False, "line": 8},
            {"node_id": "hours", "claim": "b", "passed": True, "line": 9},
        ],
        0.0,
    )
    assert verdicts_overridden(run) == []


def test_all_pass_below_one_without_failed_leaves_is_structural() -> None:
    run = summary(
        [
            {"id": "ok", "desc": "d", "status": "passed"},
            {"id": "empty_group", "desc": "d", "status": "initialized"},
        ],
        [],
        0.5,
    )
    [finding] = all_pass_below_one(run)
    assert "empty_group" in finding.message
    failed = summary([{"id": "x", "desc": "d", "status": "failed"}], [], 0.0)
    assert all_pass_below_one(failed) == []


JUDGE = """from pydantic import BaseModel

from toolkit import Evaluator

TASK_ID = "demo"
TASK_DESCRIPTION = "Name a colour and cite a page."


class Colour(BaseModel):
    name: str | None = None
    url: str | None = None


async def evaluate(ev: Evaluator) -> None:
    colour = await ev.extract(prompt="The colour", template_class=Colour, extraction_name="c")
    ev.add_custom_node(result=bool(colour.name), id="named", desc="A colour is named")
    leaf = ev.add_leaf(id="cited", desc="The cited page supports the colour")
    await ev.verify(claim=f"The colour is {colour.name}", node=leaf)
"""


class Extraction:
    async def extract(self, request: Any) -> dict[str, Any]:
        return {"name": "red", "url": "https://example.org/red"}


async def test_debug_stage_reports_a_page_check_without_sources_with_its_line() -> None:
    spec = TaskSpec(id="demo", description="Name a colour.", rubric_guidance="A colour.")
    loaded = LoadedSpec(
        spec=spec, task_dir="-", answers=[SampleAnswer(name="good", path="-", text="Red.")]
    )
    report = await debug_stage(JUDGE, loaded, Extraction(), isolation="in_process")
    kinds = {issue.kind for issue in report.issues}
    assert kinds == {"source_missing"}
    assert {line for issue in report.issues for line in issue.lines} == {18}
    problem = report.problem(JUDGE)
    assert problem is not None and "in 4 of 4 runs" in problem.summary


def entry(line: int, sources: list[str], passed: bool | None = True) -> dict[str, Any]:
    return {"node_id": "n", "claim": "c", "sources": sources, "passed": passed, "line": line}


def test_answers_citing_pages_on_which_no_claim_was_checked_against_a_page_are_flagged() -> None:
    logs = {"good": [entry(68, [])], "wrong": [entry(68, [], passed=None)]}
    finding = pages_never_read(logs)
    assert finding is not None
    assert (finding.kind, finding.line) == ("pages_never_read", 68)
    assert "good, wrong" in finding.message and "`sources=`" in finding.message


def test_one_verification_with_sources_on_any_citing_answer_is_enough() -> None:
    page = "https://blog.rust-lang.org/2025/02/20/Rust-1.85.0.html"
    logs = {"good": [entry(68, [page])], "wrong": [entry(68, [], passed=None)]}
    assert pages_never_read(logs) is None


def test_answers_that_cite_no_url_need_no_page_check() -> None:
    answers = [("good", "Red, as everyone knows."), ("cited", "Red: https://example.org/red")]
    assert citing_answers(answers) == ["cited"]
    assert pages_never_read({}) is None


PLAIN_JUDGE = JUDGE.replace("The cited page supports the colour", "The colour is right")


async def test_debug_stage_does_not_ask_for_pages_when_no_answer_cites_one() -> None:
    spec = TaskSpec(id="demo", description="Name a colour.", rubric_guidance="A colour.")
    answer = SampleAnswer(name="good", path="-", text="Red.")
    loaded = LoadedSpec(spec=spec, task_dir="-", answers=[answer])
    report = await debug_stage(PLAIN_JUDGE, loaded, Extraction(), isolation="in_process")
    assert report.issues == []


async def test_debug_stage_flags_a_judge_that_reads_no_page_cited_by_the_answers() -> None:
    spec = TaskSpec(id="demo", description="Name a colour.", rubric_guidance="A colour.")
    answer = SampleAnswer(name="good", path="-", text="Red: https://example.org/red")
    loaded = LoadedSpec(spec=spec, task_dir="-", answers=[answer])
    report = await debug_stage(PLAIN_JUDGE, loaded, Extraction(), isolation="in_process")
    assert {issue.kind for issue in report.issues} == {"pages_never_read"}
    assert {line for issue in report.issues for line in issue.lines} == {18}


# The audit's case: the published Rust judge with the verify's `sources=` removed and its leaf
# described in words the wording check does not know ("release notes").
AUDITED_DESC = "The release notes confirm this release stabilized the 2024 edition"


def doctored_rust_judge() -> str:
    source = (ROOT / "generated_judges" / "rust_2024_edition.py").read_text()
    doctored = source.replace("        sources=release.announcement_url,\n", "").replace(
        "The linked announcement says this release stabilized the 2024 edition", AUDITED_DESC
    )
    assert "sources=" not in doctored and AUDITED_DESC in doctored
    return doctored


def verify_line(source: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if "await ev.verify(" in line)


def replayed_extraction(task_id: str) -> SharedExtractor:
    client = LLMClient(ReplayProvider.from_path(ROOT / "recordings" / task_id), model="o4-mini")
    return SharedExtractor(LLMBackend(client, model="o4-mini"))


class ScriptedVerifier:
    """Every claim is supported: the verdicts never decide whether a page was read."""

    model = "scripted"

    async def verify(self, request: VerifyRequest) -> Verdict:
        return Verdict(passed=True, reasoning="scripted")


async def accept(source: str, task_id: str, tmp_path: Path):
    loaded = load_spec(ROOT / "tasks" / task_id)
    with PageStore(tmp_path / "pages") as store:
        import_m2w2(ROOT / "examples" / "pages" / "samples" / task_id, store)
    judge = tmp_path / f"{task_id}.py"
    judge.write_text(source)
    backend = AcceptanceBackend(replayed_extraction(task_id), ScriptedVerifier())
    pages = PageStore(tmp_path / "pages", readonly=True)
    async with ReviewRuns(backend, pages=pages, sandbox=False) as runs:
        report, _ = await acceptance_stage(judge, loaded, runs, intended_labels(loaded))
    return report


async def test_the_audits_doctored_judge_is_flagged_by_the_debug_stage() -> None:
    source = doctored_rust_judge()
    loaded = load_spec(ROOT / "tasks" / "rust_2024_edition")
    extraction = replayed_extraction("rust_2024_edition")
    report = await debug_stage(source, loaded, extraction, isolation="in_process")
    assert {issue.kind for issue in report.issues} == {"pages_never_read"}
    assert {line for issue in report.issues for line in issue.lines} == {verify_line(source)}
    problem = report.problem(source)
    assert problem is not None and "in 12 of 12 runs" in problem.summary


async def test_the_audits_doctored_judge_is_flagged_by_acceptance_though_it_scores_as_intended(
    tmp_path: Path,
) -> None:
    report = await accept(doctored_rust_judge(), "rust_2024_edition", tmp_path)
    assert [a.status for a in report.answers] == ["match", "match", "match"]
    assert [[f.kind for f in a.findings] for a in report.answers] == [["pages_never_read"]] * 3
    assert not report.ok
    problem = report.problem(doctored_rust_judge())
    assert problem is not None and "pages_never_read" in problem.signature


@pytest.mark.parametrize("task_id", EXAMPLES)
async def test_a_published_judge_reads_a_cited_page_in_its_debug_runs(task_id: str) -> None:
    source = (ROOT / "generated_judges" / f"{task_id}.py").read_text()
    loaded = load_spec(ROOT / "tasks" / task_id)
    report = await debug_stage(source, loaded, replayed_extraction(task_id), isolation="in_process")
    assert report.issues == []


@pytest.mark.parametrize("task_id", EXAMPLES)
async def test_a_published_judge_reads_a_cited_page_in_acceptance(
    task_id: str, tmp_path: Path
) -> None:
    source = (ROOT / "generated_judges" / f"{task_id}.py").read_text()
    report = await accept(source, task_id, tmp_path)
    assert [f for a in report.answers for f in a.findings] == []
