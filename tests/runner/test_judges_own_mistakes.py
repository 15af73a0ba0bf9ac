"""A judge's own mistake is the judge's error, the same in process and sandboxed: never a
missing page, an outage, or a complete result with a check that gave no verdict."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from generator.review.runs import JudgeRunError, ReviewRuns
from tests.fixtures.runner.helpers import HOSTILE_JUDGES
from tests.runner.test_runner_sees_infra import (
    MODES,
    hostile_input,
    never_answers,
    only_result,
    run,
)
from toolkit import ScriptedBackend
from toolkit.pages import PageStore


@pytest.mark.parametrize("source", ["none", "page_store"])
@pytest.mark.parametrize("mode", MODES)
def test_a_page_read_of_no_url_is_the_judges_error(work: Path, mode: str, source: str) -> None:
    """`ev.pages.get(None)` (an extraction that found no URL) was a page called "None" that
    is missing sandboxed (a complete 0), and in process a run that crashed (no page store) or
    a page-store failure (one)."""
    item = hostile_input(work, "reads_page_of_no_url")
    with PageStore(work / "pages") as store:
        pages = store if source == "page_store" else None
        report = run(work, [item], ScriptedBackend(), mode, pages=pages)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [(e["type"], e["kind"]) for e in result.errors] == [("TypeError", "judge_exception")]
    assert (
        "ev.pages.get(url) takes the page's URL as a string, got None"
        in result.errors[0]["message"]
    )
    assert report.stopped is None


@pytest.mark.parametrize("mode", MODES)
def test_a_verification_the_judge_stopped_waiting_for_is_the_judges_error(
    work: Path, mode: str
) -> None:
    """A leaf whose verification the judge cancelled got no verdict: the result is incomplete
    as the judge's error, and the leaf says why, never a complete score with it failed."""
    item = hostile_input(work, "stops_waiting_for_a_verify")
    report = run(work, [item], ScriptedBackend(verify=never_answers), mode)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["verify_cancelled"]
    assert "'supported'" in result.errors[0]["message"]
    tree = result.eval_breakdown[0]["verification_tree"]
    (leaf,) = [n for n in tree["children"] if n["id"] == "supported"]
    assert leaf["status"] == "error" and "cancelled" in leaf["error"]


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_review_run_of_a_judge_that_stopped_waiting_for_a_verify_is_the_judges_failure(
    sandbox: bool,
) -> None:
    """validate, mutate and generate's acceptance read it as the judge's failure (to repair),
    neither a verdict nor an outage."""

    async def judged() -> dict[str, object]:
        async with ReviewRuns(ScriptedBackend(verify=never_answers), sandbox=sandbox) as runs:
            return await runs.summary(
                HOSTILE_JUDGES / "stops_waiting_for_a_verify.py",
                "Paris, see https://a",
                task_id="stops_waiting_for_a_verify",
                answer_name="answer_1",
            )

    with pytest.raises(JudgeRunError, match="cancelled before its verdict"):
        asyncio.run(judged())


@pytest.mark.parametrize("mode", MODES)
def test_a_verification_still_running_when_the_judge_returned_is_the_judges_error(
    work: Path, mode: str
) -> None:
    """A judge that starts `ev.verify` and returns without awaiting it leaves a leaf with no
    verdict: the result is incomplete as the judge's error, never complete with that leaf
    scored 0 as if the check had failed."""
    item = hostile_input(work, "leaves_a_verify_running")
    report = run(work, [item], ScriptedBackend(verify=never_answers), mode)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert "verify_unfinished" in [e["kind"] for e in result.errors]
    message = next(e["message"] for e in result.errors if e["kind"] == "verify_unfinished")
    assert message.startswith("a verification was still running when the judge returned")


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_review_run_whose_judge_left_its_own_error_is_the_judges_failure_not_an_outage(
    sandbox: bool,
) -> None:
    """An evaluation incomplete only for an error of the judge's own making (a claim of None
    the Evaluator could not build a request from) is the judge's failure to repair in
    validate, mutate and generate's acceptance, never read as an infrastructure failure."""

    async def judged() -> dict[str, object]:
        async with ReviewRuns(ScriptedBackend(), sandbox=sandbox) as runs:
            return await runs.summary(
                HOSTILE_JUDGES / "verifies_a_claim_of_none.py",
                "Paris, see https://a",
                task_id="verifies_a_claim_of_none",
                answer_name="answer_1",
            )

    with pytest.raises(JudgeRunError, match=r"the judge failed: .*VerifyRequest"):
        asyncio.run(judged())
