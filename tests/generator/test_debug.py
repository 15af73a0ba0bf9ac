"""The debug stage finds what makes a judge unfit to publish, and never "repairs" infra failures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from generator.stages.debug import (
    PATTERNS,
    SharedExtractor,
    clean_trace,
    debug_stage,
    stub_verdict,
)
from generator.stages.spec import LoadedSpec, SampleAnswer, TaskSpec
from toolkit.errors import CACHE_ACCESS_FIX, CacheError, InfraError, PageStoreError

HEADER = """from pydantic import BaseModel

from toolkit import Evaluator

TASK_ID = "demo"
TASK_DESCRIPTION = "Name a colour."


class Colour(BaseModel):
    name: str | None = None
    url: str | None = None


"""
GOOD = (
    HEADER
    + """async def evaluate(ev: Evaluator) -> None:
    colour = await ev.extract(prompt="The colour", template_class=Colour, extraction_name="c")
    ev.add_custom_node(result=bool(colour.name), id="named", desc="A colour is named")
    leaf = ev.add_leaf(id="supported", desc="The page supports it")
    await ev.verify(claim=f"The colour is {colour.name}", node=leaf, sources=colour.url)
"""
)


def loaded(*answers: str) -> LoadedSpec:
    spec = TaskSpec(id="demo", description="Name a colour.", rubric_guidance="A colour.")
    samples = [SampleAnswer(name=f"answer_{i}", path="-", text=t) for i, t in enumerate(answers, 1)]
    return LoadedSpec(spec=spec, task_dir="-", answers=samples)


class FakeExtraction:
    """Extraction backend that returns a fixed colour and counts its calls."""

    def __init__(self, result: dict[str, Any] | Exception) -> None:
        self.result = result
        self.calls = 0

    async def extract(self, request: Any) -> dict[str, Any]:
        self.calls += 1
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


async def run(source: str, *answers: str, extraction: Any = None) -> Any:
    return await debug_stage(source, loaded(*answers), extraction, isolation="in_process")


async def test_a_sound_judge_runs_every_answer_under_every_pattern() -> None:
    report = await run(
        GOOD,
        "red",
        "blue",
        extraction=SharedExtractor(
            FakeExtraction({"name": "red", "url": "https://example.org/red"})
        ),
    )
    assert report.ok
    assert [(r.answer, r.pattern) for r in report.runs] == [
        (a, p) for a in ("answer_1", "answer_2") for p in PATTERNS
    ]
    assert report.scores()["answer_1"] == {
        "all_pass": 1.0,
        "all_fail": 0.0,
        "mix_seed_1": 0.0,
        "mix_seed_2": 1.0,
    }
    assert [n["id"] for n in report.skeleton_tree["children"]] == ["named", "supported"]


async def test_extraction_is_asked_once_per_distinct_request() -> None:
    fake = FakeExtraction({"name": "red", "url": "https://example.org/red"})
    await run(GOOD, "red", "blue", extraction=SharedExtractor(fake))
    assert fake.calls == 2


async def test_exception_reports_trace_and_judge_lines() -> None:
    source = GOOD.replace("    leaf = ev.add_leaf", '    {}["missing"]\n    leaf = ev.add_leaf')
    report = await run(source, "red")
    issue = report.issues[0]
    assert issue.kind == "exception" and "KeyError" in issue.message
    assert issue.lines == [source.splitlines().index('    {}["missing"]') + 1]
    problem = report.problem(source)
    assert problem.stage == "debug" and any('{}["missing"]' in line for line in problem.lines)
    assert 'File "demo.py"' in problem.details and "judgegen-debug-" not in problem.details


async def test_timeout_is_reported() -> None:
    source = GOOD.replace(
        "    leaf = ev.add_leaf",
        "    import asyncio\n    await asyncio.sleep(5)\n    leaf = ev.add_leaf",
    )
    report = await debug_stage(
        source,
        loaded("red"),
        None,
        isolation="in_process",
        limits=_limits(0.2),
        patterns=("all_pass",),
    )
    assert report.issues[0].kind == "timeout"


async def test_empty_tree_is_reported() -> None:
    report = await run(
        HEADER + "async def evaluate(ev: Evaluator) -> None:\n    return None\n", "red"
    )
    assert {i.kind for i in report.issues} == {"empty_tree"}


async def test_leaf_never_verified_on_all_pass_is_reported() -> None:
    source = GOOD.replace("    await ev.verify(", "    if False:\n        await ev.verify(")
    report = await run(source, "red")
    assert [i.kind for i in report.issues] == ["unverified_leaf"]
    assert "supported" in report.issues[0].message


async def test_node_ids_that_change_between_identical_runs_are_reported() -> None:
    source = (
        HEADER
        + """async def evaluate(ev: Evaluator) -> None:
    import time

    ev.add_custom_node(result=True, id=f"node_{time.perf_counter_ns()}", desc="Clock-based id")
"""
    )
    report = await run(source, "red")
    assert [i.kind for i in report.issues] == ["unstable_ids"]


async def test_unserializable_summary_is_reported() -> None:
    source = GOOD.replace(
        "    leaf = ev.add_leaf", "    ev.add_custom_info({'tags': {1, 2}})\n    leaf = ev.add_leaf"
    )
    report = await run(source, "red")
    assert "unserializable_summary" in {i.kind for i in report.issues}


RED = SharedExtractor(FakeExtraction({"name": "red", "url": "https://example.org/red"}))


async def test_a_score_no_verdict_can_move_is_reported() -> None:
    verify = (
        '    await ev.verify(claim=f"The colour is {colour.name}", node=None, sources=colour.url)'
    )
    source = GOOD.replace(
        '    leaf = ev.add_leaf(id="supported", desc="The page supports it")\n'
        '    await ev.verify(claim=f"The colour is {colour.name}", node=leaf, sources=colour.url)\n',
        verify
        + '\n    ev.add_custom_node(result=True, id="supported", desc="The page supports it")\n',
    )
    report = await run(source, "red https://example.org/red", extraction=RED)
    assert report.scores()["answer_1"]["all_fail"] == report.scores()["answer_1"]["all_pass"] == 1
    assert [(i.kind, i.pattern) for i in report.issues] == [("verdicts_ignored", "all_fail")]
    assert report.issues[0].lines == [source.splitlines().index(verify) + 1]
    assert "whether every verification passes or fails" in report.issues[0].message


async def test_a_verdict_the_judge_overwrites_is_reported() -> None:
    source = GOOD.replace(
        "sources=colour.url)\n",
        "sources=colour.url)\n"
        '    leaf.score, leaf.status = 1.0, "passed"\n'
        '    other = ev.add_leaf(id="named_on_page", desc="The page names it")\n'
        '    await ev.verify(claim=f"{colour.name} is named", node=other, sources=colour.url)\n',
    )
    report = await run(source, "red https://example.org/red", extraction=RED)
    kinds = {(i.kind, i.pattern) for i in report.issues}
    assert kinds == {("verdict_overridden", "all_fail"), ("verdict_overridden", "mix_seed_1")}
    assert "'supported'" in report.issues[0].message


async def test_a_verification_the_stub_never_decided_does_not_count_as_ignored() -> None:
    no_link = SharedExtractor(FakeExtraction({"name": "red", "url": None}))
    source = GOOD.replace("sources=colour.url)", "sources=[colour.url])").replace(
        "The page supports it", "It is confirmed"
    )
    report = await run(source, "red", extraction=no_link)
    assert report.scores()["answer_1"]["all_fail"] == report.scores()["answer_1"]["all_pass"]
    assert report.ok


WITH_DAY = GOOD.replace(
    "    url: str | None = None\n", "    url: str | None = None\n    day: str | None = None\n"
) + (
    '    ev.add_custom_node(result=colour.day == "Monday", id="day", desc="Monday", critical=False)\n'
)
RED_MONDAY = SharedExtractor(
    FakeExtraction({"name": "red", "url": "https://example.org/red", "day": "Monday"})
)


async def test_a_sound_judge_gives_an_answer_that_says_nothing_no_credit() -> None:
    report = await run(WITH_DAY, "red https://example.org/red", extraction=RED_MONDAY)
    assert report.ok


async def test_a_check_that_passes_on_a_missing_value_is_reported() -> None:
    source = WITH_DAY.replace(
        'result=colour.day == "Monday"', 'result=colour.day in (None, "Monday")'
    )
    report = await run(source, "red https://example.org/red", extraction=RED_MONDAY)
    assert [(i.kind, i.answer) for i in report.issues] == [("credit_for_nothing", "(empty answer)")]
    assert "non-critical leaves pass: day" in report.issues[0].message
    assert [r.answer for r in report.runs] == ["answer_1"] * len(PATTERNS)  # not a sample run


async def test_a_page_check_reached_only_when_a_link_is_missing_is_reported() -> None:
    source = GOOD.replace(
        'result=bool(colour.name), id="named", desc="A colour is named"',
        'result=bool(colour.name or not colour.url), id="named", desc="A colour is named"',
    )
    report = await run(source, "red https://example.org/red", extraction=RED)
    kinds = {(i.kind, i.answer) for i in report.issues}  # the claim reads "None" there, too
    assert kinds == {("source_missing", "(empty answer)"), ("claim_placeholder", "(empty answer)")}
    assert all(i.message.startswith("on an answer that says nothing") for i in report.issues)


async def test_a_verification_whose_verdict_is_outweighed_among_others_is_reported() -> None:
    outweighed = (
        '    shade = await ev.verify(claim="The page names a shade", node=None, sources=colour.url)'
    )
    source = GOOD + (
        outweighed + "\n"
        '    ev.add_custom_node(result=shade or bool(colour.url), id="shade", desc="A shade")\n'
    )
    report = await run(source, "red https://example.org/red", extraction=RED)
    assert [(i.kind, i.lines) for i in report.issues] == [
        ("verdicts_ignored", [source.splitlines().index(outweighed) + 1])
    ]
    assert "failing only the claims verified at line" in report.issues[0].message


async def test_infrastructure_failure_is_raised_not_repaired() -> None:
    extraction = SharedExtractor(FakeExtraction(InfraError("provider down", kind="llm")))
    with pytest.raises(InfraError, match="provider down"):
        await run(GOOD, "red", extraction=extraction)


async def test_an_outage_the_draft_swallows_is_raised_not_repaired() -> None:
    """A draft that wraps extraction in `except Exception` would otherwise turn an outage into
    debug findings (an empty extraction, leaves never verified) sent back for repair."""
    swallowing = GOOD.replace(
        '    colour = await ev.extract(prompt="The colour", template_class=Colour, '
        'extraction_name="c")\n',
        "    try:\n"
        '        colour = await ev.extract(prompt="The colour", template_class=Colour, '
        'extraction_name="c")\n'
        "    except Exception:\n"
        "        colour = Colour()\n",
    )
    assert swallowing != GOOD
    extraction = SharedExtractor(FakeExtraction(ConnectionError("provider unreachable")))

    with pytest.raises(InfraError, match="provider unreachable"):
        await run(swallowing, "red", extraction=extraction)


@pytest.mark.parametrize(
    "failure",
    [
        CacheError("c.sqlite", "disk I/O error", CACHE_ACCESS_FIX),
        PageStoreError("pages/pages.sqlite", "database disk image is malformed"),
    ],
    ids=["cache", "page_store"],
)
async def test_a_failing_cache_or_page_store_is_raised_not_repaired(
    failure: CacheError | PageStoreError,
) -> None:
    extraction = SharedExtractor(FakeExtraction(failure))
    with pytest.raises(InfraError, match=str(failure.cause)):
        await run(GOOD, "red", extraction=extraction)


async def test_sandboxed_run_finds_the_same_exception() -> None:
    source = GOOD.replace("    leaf = ev.add_leaf", '    {}["missing"]\n    leaf = ev.add_leaf')
    report = await debug_stage(source, loaded("red"), None, patterns=("all_pass",))
    assert report.issues[0].kind == "exception" and "KeyError" in report.issues[0].message
    assert report.issues[0].lines


async def test_a_draft_importing_a_helper_of_the_users_is_a_problem_to_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "helpers96.py").write_text("COLOUR = 'red'\n")
    monkeypatch.chdir(tmp_path)
    source = GOOD.replace(
        "from toolkit import Evaluator\n", "from toolkit import Evaluator\nimport helpers96\n"
    )

    report = await run(source, "red")

    problem = report.problem(source)
    assert problem is not None and problem.stage == "debug"
    assert "JudgeImportError: the judge demo.py imports a module of the user's" in problem.summary
    assert "A judge is one module: move what it uses into the judge" in problem.summary
    assert "judgegen-debug-" not in problem.signature  # the same problem each round
    assert "helpers96" not in sys.modules


def test_seeded_mixes_are_deterministic_and_differ() -> None:
    claims = [f"claim {i}" for i in range(40)]
    one = [stub_verdict("mix_seed_1", c) for c in claims]
    assert one == [stub_verdict("mix_seed_1", c) for c in claims]
    assert one != [stub_verdict("mix_seed_2", c) for c in claims]
    assert any(one) and not all(one)


def test_clean_trace_keeps_only_judge_frames() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/x/toolkit/runner/loader.py", line 9, in run\n'
        "    await self.module.evaluate(evaluator)\n"
        '  File "/tmp/judgegen-debug-abc/demo.py", line 4, in evaluate\n'
        "    boom()\n"
        "NameError: name 'boom' is not defined\n"
    )
    assert clean_trace(trace, "demo.py") == (
        "Traceback (most recent call last):\n"
        '  File "demo.py", line 4, in evaluate\n'
        "    boom()\n"
        "NameError: name 'boom' is not defined"
    )


def _limits(timeout_s: float) -> Any:
    from toolkit.sandbox.protocol import SandboxLimits

    return SandboxLimits(timeout_s=timeout_s)
