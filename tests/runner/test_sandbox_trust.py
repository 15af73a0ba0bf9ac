"""What the parent trusts of a sandboxed run: the approved bytes, its own scoring, and no loot.

Real sandbox (bubblewrap, seccomp), real files, the real CLI where the behaviour is the CLI's.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    HOSTILE_JUDGES,
    DictPages,
    copy_fixtures,
    options,
    result_files,
    stored,
)
from tests.fixtures.runner.scripted import extract, make_backend, verify
from toolkit import ScriptedBackend
from toolkit.backends import Verdict, VerifyRequest
from toolkit.runner.approval import Approval, approval_path, approval_problem_for
from toolkit.runner.executors import InProcessExecutor
from toolkit.runner.inputs import AnswerInput, discover_answers, discover_trajectories
from toolkit.runner.scheduler import run_evaluations
from toolkit.runner.trust import score_problem, trusted_outcome
from toolkit.sandbox import isolation as isolation_module
from toolkit.sandbox.protocol import EvalJob, EvalOutcome
from toolkit.util.hashing import sha256_file

CANARY = "sk-ant-canary-71d0e4"
POLICY = "scripted:tests.fixtures.runner.llm_policy:policy"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def hostile_input(work: Path, name: str, text: str = "Paris, see https://a") -> AnswerInput:
    """Put hostile judge `name` among the judges and return an answer for its task."""
    (work / "judges" / f"{name}.py").write_bytes((HOSTILE_JUDGES / f"{name}.py").read_bytes())
    path = work / "answers" / "gamma" / name / "answer_1.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    (item,) = [i for i in discover_answers(work / "answers") if i.task_id == name]
    return item


def test_a_judge_replaced_mid_run_changes_nothing_in_that_run(work: Path) -> None:
    judge = work / "judges" / "louvre_hours.py"
    approved = sha256_file(judge)
    swapped: list[bool] = []

    def swap_then_verify(request: VerifyRequest) -> Verdict:
        if not swapped:
            judge.write_text("TASK_ID = 'louvre_hours'\n\nasync def evaluate(ev):\n    pass\n")
            swapped.append(True)
        return verify(request)

    inputs = [i for i in discover_answers(work / "answers") if i.task_id == "louvre_hours"]
    backend = ScriptedBackend(extract=extract, verify=swap_then_verify)
    opts = options(work, jobs=1)
    report = asyncio.run(run_evaluations(inputs, backend=backend, options=opts, pages=DictPages()))
    assert swapped and sha256_file(judge) != approved
    assert len(report.results) == 4
    for head in report.results:
        result = stored(work, head)
        assert result.status == "complete", result.errors
        assert result.fingerprint.judge_sha256 == approved
        assert result.eval_breakdown[0]["verification_tree"]["children"]
    scores = {f"{r.agent_name}/{r.answer_name}": r.final_score for r in report.results}
    assert scores == {
        "alpha/answer_1": 1.0,
        "alpha/answer_2": 0.5,
        "beta/answer_1": 0.0,
        "beta/answer_2": 1.0,
    }


def test_an_approval_of_another_task_does_not_approve_a_judge(work: Path) -> None:
    digest = sha256_file(work / "judges" / "python_match.py")
    record = Approval(
        task_id="louvre_hours", reviewer="Ada", date=datetime.now(UTC), judge_sha256=digest
    )
    approval_path(work / "reviews", "python_match").write_text(record.model_dump_json())
    problem = approval_problem_for(digest, work / "reviews", "python_match")
    assert problem is not None and "approves task 'louvre_hours', not 'python_match'" in problem


def test_a_judge_that_patches_its_score_is_incomplete_and_the_parent_says_why(
    work: Path,
) -> None:
    item = hostile_input(work, "lies_about_score")
    backend = ScriptedBackend()
    report = asyncio.run(run_evaluations([item], backend=backend, options=options(work)))
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete" and result.final_score is None
    (violation,) = [e for e in result.errors if e["kind"] == "protocol_violation"]
    assert "final score 1.0 disagrees with the tree's score 0.0" in violation["message"]
    assert report.exit_code == 1


def test_a_judge_scoring_a_leaf_above_1_is_incomplete_not_a_success_above_1(
    work: Path,
) -> None:
    """Its tree's own scoring gives 1.5: counted, it would be a success and lift Partial
    Completion above 1 (Mind2Web 2 keeps every score in [0, 1])."""
    item = hostile_input(work, "inflates_leaf")
    report = asyncio.run(run_evaluations([item], backend=ScriptedBackend(), options=options(work)))
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete" and result.final_score is None
    (violation,) = [e for e in result.errors if e["kind"] == "protocol_violation"]
    assert "node /root[1]/bonus reports score 2.0, outside [0, 1]" in violation["message"]


@pytest.mark.parametrize("score", [-1.0, 1.5])
def test_a_leaf_score_outside_0_to_1_is_a_protocol_violation(score: float) -> None:
    leaf = {"id": "a", "desc": "a", "score": score, "status": "passed"}
    root = {"id": "root", "desc": "r", "score": score, "status": "passed", "children": [leaf]}
    summary = {"final_score": score, "eval_breakdown": [{"verification_tree": root}]}
    assert "outside [0, 1]" in (score_problem(summary) or "")


def test_scores_that_follow_from_the_tree_pass_and_a_doctored_parent_does_not() -> None:
    leaf = {"id": "a", "desc": "a", "critical": True, "score": 0.0, "status": "failed"}
    root = {"id": "root", "desc": "r", "score": 0.0, "status": "failed", "children": [leaf]}
    summary = {"final_score": 0.0, "eval_breakdown": [{"verification_tree": root}]}
    assert score_problem(summary) is None
    doctored = {**summary, "eval_breakdown": [{"verification_tree": {**root, "score": 1.0}}]}
    assert "node /root reports score 1.0" in (score_problem(doctored) or "")


@pytest.mark.parametrize(("reported", "tree_score"), [(1.0 - 5e-10, 1.0), (1.0, 1.0 - 5e-10)])
def test_a_final_score_that_disagrees_with_the_tree_on_success_is_a_protocol_violation(
    reported: float, tree_score: float
) -> None:
    """Within 1e-9 of the tree's score a final score agrees, but success is a score of exactly
    1: a judge reporting 1 for a partial tree (or just below 1 for a full pass) would turn
    its result into a success (or a failure) its tree does not give."""
    leaf = {"id": "a", "desc": "a", "score": tree_score, "status": "partial"}
    root = {"id": "root", "desc": "r", "score": tree_score, "status": "partial", "children": [leaf]}
    summary = {"final_score": reported, "eval_breakdown": [{"verification_tree": root}]}

    assert "disagree on success" in (score_problem(summary) or "")


def test_the_info_of_a_judge_that_violated_the_sandbox_is_not_written(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    item = hostile_input(work, "reads_parent_proc")
    report = asyncio.run(run_evaluations([item], backend=ScriptedBackend(), options=options(work)))
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete"
    assert "sandbox_violation" in [e["kind"] for e in result.errors]
    written = json.dumps(result_files(work / "results"))
    assert "loot" not in written and "withheld" in written
    assert result.sandbox_guards


# -- the real CLI with canaries --------------------------------------------------------------


@pytest.fixture
def canaries(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Canary files in the runner's home, working directory and host /tmp."""
    tag = uuid.uuid4().hex
    monkeypatch.chdir(work)
    files = {
        "home": Path.home() / f".judgegen-canary-{tag}",
        "cwd": work / ".env",
        "tmp": Path("/tmp") / f"judgegen-canary-{tag}",
    }
    for name, path in files.items():
        path.write_text(f"{CANARY}-{name}\n")
    try:
        yield files
    finally:
        for path in files.values():
            path.unlink(missing_ok=True)


def test_no_canary_reaches_results_output_cache_or_ledger(
    work: Path, canaries: dict[str, Path]
) -> None:
    hostile_input(work, "escapes", json.dumps({k: str(v) for k, v in canaries.items()}))
    env = {
        "ANTHROPIC_API_KEY": f"{CANARY}-env",
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    args = ["run", "--answers", "answers", "--judges", "judges", "--results", "results"]
    args += ["--reviews", "reviews", "--task", "escapes", "--include-unreviewed"]
    args += ["--provider", POLICY, "--json"]
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert [ref["task_id"] for ref in record["incomplete"]] == ["escapes"]
    stored = [p.read_bytes() for p in (work / "results").rglob("*") if p.is_file()]
    assert stored and (work / "ledger.jsonl").exists()
    for name in ("llm-cache.sqlite", "ledger.jsonl"):
        stored += [p.read_bytes() for p in work.glob(f"{name}*")]
    for blob in [*stored, result.stdout.encode(), result.stderr.encode()]:
        assert CANARY.encode() not in blob


def test_require_sandbox_turns_a_missing_guard_into_exit_3(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    args = ["run", "--answers", str(work / "answers"), "--judges", str(work / "judges")]
    args += ["--results", str(work / "results"), "--reviews", str(work / "reviews")]
    args += ["--backend", "tests.fixtures.runner.scripted:factory", "--task", "python_match"]
    args += ["--include-unreviewed", "--require-sandbox", "--jobs", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3, result.output
    assert "sandbox guards not in effect: filesystem_allowlist" in result.stderr
    assert "--require-sandbox" in result.stderr


def test_require_sandbox_with_no_sandbox_is_a_usage_error(work: Path) -> None:
    args = ["run", "--answers", str(work / "answers"), "--judges", str(work / "judges")]
    result = CliRunner().invoke(main, [*args, "--require-sandbox", "--no-sandbox"])
    assert result.exit_code == 2 and "contradict" in result.output


# -- a complete outcome must carry a score ---------------------------------------------------


class Scoreless:
    """Runs the judges in process, then drops the tree and the score from each summary, as a
    judge that patches `Evaluator.get_summary` could."""

    def __init__(self) -> None:
        self.inner = InProcessExecutor(make_backend(), pages=DictPages())

    async def evaluate(self, job: EvalJob) -> EvalOutcome:
        outcome = await self.inner.evaluate(job)
        summary = {**(outcome.summary or {}), "final_score": None, "eval_breakdown": []}
        return outcome.model_copy(update={"summary": summary})


def louvre_trajectory(work: Path) -> list[AnswerInput]:
    return discover_trajectories(work / "webeval" / "fara-run", tasks={"louvre_hours"})


def test_a_complete_outcome_without_a_final_score_is_a_protocol_violation() -> None:
    outcome = EvalOutcome(status="complete", summary={"final_score": None, "eval_breakdown": []})
    trusted = trusted_outcome(outcome, None)
    assert trusted.status == "incomplete"
    (violation,) = trusted.errors
    assert violation["kind"] == "protocol_violation"
    assert "no final score" in violation["message"]


def test_a_final_score_that_is_not_a_number_is_a_protocol_violation() -> None:
    leaf = {"id": "a", "desc": "a", "critical": True, "score": 1.0, "status": "passed"}
    root = {"id": "root", "desc": "r", "score": 1.0, "status": "passed", "children": [leaf]}
    summary = {"final_score": "1.0", "eval_breakdown": [{"verification_tree": root}]}
    assert "not a number" in (score_problem(summary) or "")
    assert "not a number" in (score_problem({**summary, "final_score": float("nan")}) or "")


def test_a_scoreless_evaluation_is_incomplete_writes_no_score_file_and_is_redone(
    work: Path,
) -> None:
    score_file = work / "webeval/fara-run/traj/louvre_hours/scores/judgegen_louvre_hours.json"
    report = asyncio.run(
        run_evaluations(
            louvre_trajectory(work),
            backend=make_backend(),
            options=options(work),
            executor=Scoreless(),
        )
    )
    (head,) = report.results
    result = stored(work, head)
    assert (result.status, result.final_score) == ("incomplete", None)
    assert [e["kind"] for e in result.errors] == ["protocol_violation"]
    assert not score_file.exists()
    assert report.summaries["fara-run"].incomplete and report.exit_code == 1

    again = asyncio.run(
        run_evaluations(
            louvre_trajectory(work),
            backend=make_backend(),
            options=options(work),
            isolation="in_process",
            pages=DictPages(),
        )
    )
    assert again.evaluated == 1 and stored(work, again.results[0]).final_score == 1.0
    assert json.loads(score_file.read_text())["score"] == 1.0
