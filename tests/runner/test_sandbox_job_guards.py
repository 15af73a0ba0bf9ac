"""--require-sandbox and a job's own guards (rlimits, its seccomp filter, the audit hook): a
job lacking one refuses before its judge's code loads, and the run stops; without the flag
the judge runs as before.

Real sandbox (bubblewrap). The fork server keeps every guard of its own; its jobs lack their
seccomp filter because it is built empty, as on a machine without libseccomp.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import (
    HOSTILE_JUDGES,
    copy_fixtures,
    fixture_job,
    options,
    stored,
)
from toolkit.backends import ScriptedBackend
from toolkit.runner.inputs import AnswerInput, discover_answers
from toolkit.runner.scheduler import run_evaluations
from toolkit.sandbox import seccomp
from toolkit.sandbox.confinement import not_run_message
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalOutcome, SandboxLimits

LIMITS = SandboxLimits(timeout_s=10, cpu_s=5, memory_mb=512)
JUDGE = "announces_loading"
LOADED = "announces_loading: judge code loaded"  # what the judge prints as its code loads
REFUSED = not_run_message(["seccomp_job"])


@pytest.fixture
def no_job_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs start without their seccomp filter: `seccomp_job` is not in effect."""
    monkeypatch.setattr(seccomp, "job_filter", lambda allow_network: b"")


async def evaluate(backend: ScriptedBackend, *, require_sandbox: bool) -> EvalOutcome:
    async with WorkerPool(1, LIMITS, backend, require_sandbox=require_sandbox) as pool:
        return await pool.evaluate(fixture_job(JUDGE, "Paris"))


def kinds(outcome: EvalOutcome) -> list[str]:
    return [error["kind"] for error in outcome.errors]


@pytest.mark.usefixtures("no_job_filter")
async def test_require_sandbox_loads_no_judge_code_in_a_job_without_its_seccomp_filter() -> None:
    backend = ScriptedBackend()
    outcome = await evaluate(backend, require_sandbox=True)
    assert backend.calls == []
    assert LOADED not in outcome.stdout_tail
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_required"]
    assert outcome.errors[0]["message"] == REFUSED
    assert "audit_hook" in outcome.guards  # the job started and measured its guards
    assert "seccomp_job" not in outcome.guards


@pytest.mark.usefixtures("no_job_filter")
async def test_without_require_sandbox_a_job_without_its_seccomp_filter_runs_its_judge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    backend = ScriptedBackend()
    outcome = await evaluate(backend, require_sandbox=False)
    assert len(backend.calls) == 1
    assert LOADED in outcome.stdout_tail
    assert outcome.status == "complete", outcome.errors
    assert "seccomp_job" not in outcome.guards
    assert "sandbox guards not in effect: seccomp_job" in capsys.readouterr().err


@pytest.mark.usefixtures("no_job_filter")
async def test_the_parent_fails_a_job_that_ran_its_judge_without_a_guard_it_requires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(WorkerPool, "_required_guards", lambda self: [])  # no job refuses
    backend = ScriptedBackend()
    outcome = await evaluate(backend, require_sandbox=True)
    assert len(backend.calls) == 1  # the judge ran: only the parent's own check is left
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_required"]
    assert "these guards were not in effect: seccomp_job" in outcome.errors[0]["message"]


def answers_for_the_judge(work: Path) -> list[AnswerInput]:
    """Put the judge among the fixture judges, with an answer from two agents."""
    (work / "judges" / f"{JUDGE}.py").write_bytes((HOSTILE_JUDGES / f"{JUDGE}.py").read_bytes())
    for agent in ("alpha", "beta"):
        path = work / "answers" / agent / JUDGE / "answer_1.md"
        path.parent.mkdir(parents=True)
        path.write_text("Paris")
    return [i for i in discover_answers(work / "answers") if i.task_id == JUDGE]


@pytest.mark.usefixtures("no_job_filter")
def test_require_sandbox_stops_the_run_at_a_job_without_its_seccomp_filter_before_any_llm_call(
    tmp_path: Path,
) -> None:
    work = copy_fixtures(tmp_path)
    items = answers_for_the_judge(work)
    backend = ScriptedBackend()
    opts = options(work, jobs=1, require_sandbox=True)
    report = asyncio.run(run_evaluations(items, backend=backend, options=opts))
    assert backend.calls == []
    assert report.stopped == f"SandboxError: {REFUSED}"
    assert report.not_started == 1
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete"
    assert [e["kind"] for e in result.errors] == ["sandbox_required"]
