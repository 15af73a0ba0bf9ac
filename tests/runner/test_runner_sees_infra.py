"""What the runner sees itself decides completeness and stops, not what a judge reports.

An infrastructure failure raised to a judge (LLM, page store) makes its evaluation incomplete
even when the judge catches it or rewrites its outcome; only failures the runner saw stop a
run; the sandbox guards recorded are the ones measured before judge code ran. Real sandbox
(bubblewrap, seccomp) where the behaviour is the sandbox's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from generator.review.runs import ReviewRuns
from tests.fixtures.runner.helpers import (
    HOSTILE_JUDGES,
    copy_fixtures,
    options,
    run_args,
    stored,
)
from tests.fixtures.runner.scripted import extract
from toolkit import ScriptedBackend
from toolkit.backends import Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.runner.inputs import AnswerInput, discover_answers
from toolkit.runner.options import RunOptions
from toolkit.runner.report import RunReport
from toolkit.runner.results import EvaluationResult
from toolkit.runner.scheduler import run_evaluations
from toolkit.sandbox import isolation as isolation_module
from toolkit.sandbox.protocol import SandboxLimits

MODES = ["sandbox", "in_process"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def hostile_input(work: Path, name: str) -> AnswerInput:
    """Put hostile judge `name` among the judges and return an answer for its task."""
    (work / "judges" / f"{name}.py").write_bytes((HOSTILE_JUDGES / f"{name}.py").read_bytes())
    path = work / "answers" / "gamma" / name / "answer_1.md"
    path.parent.mkdir(parents=True)
    path.write_text("Paris, see https://a")
    (item,) = [i for i in discover_answers(work / "answers") if i.task_id == name]
    return item


def overloaded(request: VerifyRequest) -> Verdict:
    raise InfraError("provider 529 overloaded", kind="llm")


async def never_answers(request: VerifyRequest) -> Verdict:
    await asyncio.Event().wait()
    raise AssertionError("never answered")


class FailingStore:
    """A page source whose store cannot be read (an infrastructure failure)."""

    def get(self, url: str) -> str | None:
        raise InfraError("page store is locked", kind="page_store")


def unreachable(request: VerifyRequest) -> Verdict:
    """A `--backend` whose own service is down: it raises what its HTTP client raised."""
    raise ConnectionError("judging service unreachable")


class UnreachablePages:
    """A library caller's page source whose server is down (no `InfraError` of judgegen's)."""

    def get(self, url: str) -> str | None:
        raise ConnectionResetError("page server reset the connection")


async def maps_down(**args: object) -> object:
    """A maps provider whose service is down: it raises what its HTTP client raised."""
    raise ConnectionError("maps service unreachable")


def run(
    work: Path, items: list[AnswerInput], backend: ScriptedBackend, mode: str, **kw: object
) -> RunReport:
    opts: RunOptions = options(work, jobs=1)
    return asyncio.run(
        run_evaluations(items, backend=backend, options=opts, isolation=mode, **kw)  # type: ignore[arg-type]
    )


def only_result(work: Path, report: RunReport) -> EvaluationResult:
    (head,) = report.results
    return stored(work, head)


@pytest.mark.parametrize("mode", MODES)
def test_an_llm_failure_the_judge_swallowed_leaves_the_evaluation_incomplete(
    work: Path, mode: str
) -> None:
    item = hostile_input(work, "swallows_infra_error")
    report = run(work, [item], ScriptedBackend(verify=overloaded), mode)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert any(
        e["kind"] == "llm" and "provider 529 overloaded" in e["message"] for e in result.errors
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_judge_that_catches_its_deadlines_cancellation_has_still_timed_out(
    work: Path, mode: str
) -> None:
    """The deadline cancels the call the judge is waiting on; a judge catching that with a
    bare `except:` and returning leaves a check that never finished, not a failed one."""
    item = hostile_input(work, "catches_cancellation")
    backend = ScriptedBackend(verify=never_answers)
    report = run(work, [item], backend, mode, limits=SandboxLimits(timeout_s=0.5))
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["timeout"]


@pytest.mark.parametrize("mode", MODES)
def test_a_page_store_failure_the_judge_swallowed_leaves_the_evaluation_incomplete_and_stops(
    work: Path, mode: str
) -> None:
    item = hostile_input(work, "swallows_infra_error")
    backend = ScriptedBackend(verify=lambda request: True)
    report = run(work, [item], backend, mode, pages=FailingStore())
    result = only_result(work, report)
    assert result.status == "incomplete"
    assert [e["kind"] for e in result.errors] == ["page_store"]
    assert report.stopped and "page store is locked" in report.stopped


@pytest.mark.parametrize("mode", MODES)
def test_any_exception_of_the_backend_the_judge_swallowed_leaves_the_evaluation_incomplete(
    work: Path, mode: str
) -> None:
    item = hostile_input(work, "swallows_infra_error")
    report = run(work, [item], ScriptedBackend(verify=unreachable), mode)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["backend"]
    assert "judging service unreachable" in result.errors[0]["message"]
    assert report.stopped is None


@pytest.mark.parametrize("mode", MODES)
def test_any_exception_of_the_page_source_the_judge_swallowed_leaves_the_evaluation_incomplete(
    work: Path, mode: str
) -> None:
    item = hostile_input(work, "swallows_infra_error")
    backend = ScriptedBackend(verify=lambda request: True)
    report = run(work, [item], backend, mode, pages=UnreachablePages())
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["backend"]
    assert "page server reset the connection" in result.errors[0]["message"]


@pytest.mark.parametrize("mode", MODES)
def test_any_exception_of_a_tool_provider_the_judge_swallowed_is_a_tool_failure(
    work: Path, mode: str
) -> None:
    """A tool's outage is the evaluation's failure, named as the tool's in both modes: not
    the judge's exception, nor a backend's."""
    item = hostile_input(work, "swallows_tool_failure")
    tools = {"maps.calculate_distance": maps_down}
    report = run(work, [item], ScriptedBackend(), mode, tools=tools)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["tool"]
    assert "maps service unreachable" in result.errors[0]["message"]
    assert report.stopped is None


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_failure_the_judge_let_escape_is_the_tools_failure_alone(
    work: Path, mode: str
) -> None:
    """Uncaught, a tool's outage ends the judge; that is still the tool's failure, reported
    once and alike in both modes, not also as the judge's exception."""
    item = hostile_input(work, "lets_tool_failure_escape")
    tools = {"maps.calculate_distance": maps_down}
    report = run(work, [item], ScriptedBackend(), mode, tools=tools)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["tool"]
    assert "maps service unreachable" in result.errors[0]["message"]


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_failure_the_runner_saw_leaves_the_evaluation_incomplete_whatever_the_judge_kept(
    work: Path, mode: str
) -> None:
    """The judge's own record of failed tool calls is the judge's: one calling the channel
    around it still cannot turn a maps outage into a complete result with a failed check."""
    item = hostile_input(work, "hides_tool_failure")
    tools = {"maps.calculate_distance": maps_down}
    report = run(work, [item], ScriptedBackend(), mode, tools=tools)
    result = only_result(work, report)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["tool"]
    assert "maps service unreachable" in result.errors[0]["message"]


@pytest.mark.parametrize("sandbox", [True, False])
@pytest.mark.parametrize(
    ("verify", "message"),
    [(overloaded, "provider 529 overloaded"), (unreachable, "judging service unreachable")],
)
def test_a_review_run_of_a_judge_that_swallowed_a_backend_failure_raises_it(
    sandbox: bool, verify: Callable[[VerifyRequest], Verdict], message: str
) -> None:
    """validate, mutate and generate's acceptance read a review run's summary as the judge's
    verdict: an outage the judge caught must stop them, not pass for a disagreement or a
    killed mutation, nor for the judge's own failure."""

    async def judged() -> dict[str, object]:
        async with ReviewRuns(ScriptedBackend(verify=verify), sandbox=sandbox) as runs:
            return await runs.summary(
                HOSTILE_JUDGES / "swallows_infra_error.py",
                "Paris, see https://a",
                task_id="swallows_infra_error",
                answer_name="answer_1",
            )

    with pytest.raises(InfraError, match=message):
        asyncio.run(judged())


@pytest.mark.parametrize("mode", MODES)
def test_a_judge_raising_the_budget_error_itself_does_not_stop_the_run(
    work: Path, mode: str
) -> None:
    hostile = hostile_input(work, "raises_budget")
    others = [i for i in discover_answers(work / "answers") if i.task_id == "python_match"]
    backend = ScriptedBackend(extract=extract, verify=lambda request: True)
    report = run(work, [hostile, *others], backend, mode)
    assert report.stopped is None and report.not_started == 0
    assert len(report.results) == 1 + len(others)
    faked = next(h for h in report.results if h.task_id == "raises_budget")
    assert stored(work, faked).status == "incomplete"


def test_a_budget_error_from_the_backend_stops_the_run_though_the_judge_swallowed_it(
    work: Path,
) -> None:
    from toolkit.errors import BudgetExceeded

    def spent(request: VerifyRequest) -> Verdict:
        raise BudgetExceeded("budget of $0.01 spent")

    item = hostile_input(work, "swallows_infra_error")
    others = [i for i in discover_answers(work / "answers") if i.task_id == "python_match"]
    report = run(work, [item, *others], ScriptedBackend(extract=extract, verify=spent), "sandbox")
    assert report.stopped and "budget of $0.01 spent" in report.stopped
    assert report.not_started == len([i for i in others if not i.empty])


def claims_every_guard_without_bubblewrap(
    work: Path, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[Result, EvaluationResult]:
    """`judgegen run` of the judge that claims every guard, with no bubblewrap installed; the
    CLI's outcome and the result it wrote."""
    hostile_input(work, "claims_every_guard")
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    flags = ("--jobs", "1", "--task", "claims_every_guard", "--include-unreviewed", *extra)
    outcome = CliRunner().invoke(main, run_args(work, *flags, pages=False))
    (path,) = (work / "results" / "gamma" / "claims_every_guard").glob("*.json")
    return outcome, EvaluationResult.model_validate_json(path.read_text())


def test_guards_a_judge_claims_are_not_recorded(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, result = claims_every_guard_without_bubblewrap(work, monkeypatch)
    assert "sandbox guards not in effect: filesystem_allowlist" in outcome.stderr
    assert "filesystem_allowlist" not in result.sandbox_guards  # measured, not as claimed
    assert {"rlimits", "seccomp_job", "audit_hook"} <= set(result.sandbox_guards)


def test_require_sandbox_without_bubblewrap_stops_before_any_judge_runs(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, result = claims_every_guard_without_bubblewrap(work, monkeypatch, "--require-sandbox")
    assert outcome.exit_code == 3, outcome.output
    assert "the judge was not run" in outcome.stderr
    assert result.status == "incomplete"
    assert [e["kind"] for e in result.errors] == ["sandbox_required"]
    assert "filesystem_allowlist" not in result.sandbox_guards
    assert "audit_hook" not in result.sandbox_guards  # no job process was started


def test_a_judge_killed_by_a_real_time_signal_is_its_crash_named_by_number(work: Path) -> None:
    item = hostile_input(work, "dies_of_rt_signal")
    report = run(work, [item], ScriptedBackend(), "sandbox")
    result = only_result(work, report)
    assert result.status == "incomplete"
    (error,) = result.errors
    assert error["kind"] == "crash" and "signal 40" in error["message"]


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("auth", "LLM call failed (auth, HTTP 401): invalid x-api-key"),
        ("config", "no Anthropic credentials: set ANTHROPIC_API_KEY"),
    ],
)
def test_an_llm_auth_or_config_failure_stops_the_run(work: Path, kind: str, message: str) -> None:
    """A rejected key or a missing credential fails every later call the same way: the run
    stops (exit 3) instead of marking each remaining evaluation incomplete."""
    from toolkit.errors import LLMError

    def rejected(request: VerifyRequest) -> Verdict:
        raise LLMError(message, kind=kind)

    item = hostile_input(work, "swallows_infra_error")
    others = [i for i in discover_answers(work / "answers") if i.task_id == "python_match"]
    backend = ScriptedBackend(extract=extract, verify=rejected)
    report = run(work, [item, *others], backend, "in_process")
    assert report.stopped and message in report.stopped
    assert report.not_started == len([i for i in others if not i.empty])


@pytest.mark.parametrize("kind", ["browser", "offline"])
def test_a_cited_page_our_capture_failed_leaves_the_trajectory_incomplete_without_a_score_file(
    work: Path, kind: str
) -> None:
    """A capture that failed on our side is not the page's failure: the evaluation citing it
    is incomplete (exit 1, the URL and `cache-pages` named), never scored 0 for webeval."""
    from tests.fixtures.runner.helpers import PAGES
    from toolkit.pages import PageRecord, PageStore

    url = "https://www.louvre.fr/en/visit/hours-admission"
    with PageStore(work / "pages") as store:
        store.put(PageRecord.failure(url, kind, "Chromium crashed"))
        for other, text in PAGES.items():
            if other != url:
                store.put(PageRecord.web(other, text, None))
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--task", "louvre_hours")
    args[1:3] = ["--trajectories", str(work / "webeval" / "fara-run")]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 1, done.stderr
    assert f"capturing {url} failed on our side" in done.stderr
    assert "judgegen cache-pages" in done.stderr
    traj = work / "webeval" / "fara-run" / "traj" / "louvre_hours"
    assert not (traj / "scores").exists() or not list((traj / "scores").iterdir())
    path = work / "results" / "fara-run" / "louvre_hours" / "final_answer.json"
    result = EvaluationResult.model_validate_json(path.read_text())
    assert result.status == "incomplete" and result.final_score is None


def test_a_cookie_banner_an_older_judgegen_stored_as_the_cited_page_leaves_it_incomplete(
    work: Path,
) -> None:
    """Stored before captures answered consent dialogs (record version 2), the banner is not
    the page: the evaluation citing it is incomplete, the fix named, never scored."""
    from tests.fixtures.runner.helpers import PAGES
    from toolkit.pages import PageRecord, PageStore

    url = "https://www.louvre.fr/en/visit/hours-admission"
    banner = "Visit Exhibitions\nWe use cookies to improve your visit. Reject all Accept all"
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(url, banner, None, version=2))
        for other, text in PAGES.items():
            if other != url:
                store.put(PageRecord.web(other, text, None))
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--task", "louvre_hours")
    args[1:3] = ["--trajectories", str(work / "webeval" / "fara-run")]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 1, done.stderr
    assert f"capturing {url} failed on our side" in done.stderr
    path = work / "results" / "fara-run" / "louvre_hours" / "final_answer.json"
    result = EvaluationResult.model_validate_json(path.read_text())
    assert result.status == "incomplete" and result.final_score is None
    said = path.read_text()  # the whole reason, and the fix
    assert "cookie-consent dialog" in said and "cache-pages --recheck --refresh" in said
