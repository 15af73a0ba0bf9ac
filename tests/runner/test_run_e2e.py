"""End to end: fixture judges over two agents' answers and a webeval run, with scripted verdicts."""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.runner.helpers import (
    DictPages,
    copy_fixtures,
    options,
    result_files,
    run_answers,
    run_trajectories,
    stored,
    without_timing,
)
from tests.fixtures.runner.scripted import FlakyBackend, make_backend
from toolkit import BudgetExceeded, ScriptedBackend
from toolkit.runner.inputs import discover_answers
from toolkit.runner.results import ResultHead
from toolkit.runner.scheduler import RunOptions, run_evaluations
from toolkit.sandbox.protocol import SandboxLimits

# Both backends stand for the same configured one, as a `--backend` spec names it.
SPEC = "tests.fixtures.runner.scripted:factory"
EXPECTED_SCORES = {
    "alpha/louvre_hours/answer_1.json": 1.0,
    "alpha/louvre_hours/answer_2.json": 0.5,
    "alpha/le_guin_novels/answer_1.json": 1.0,
    "alpha/le_guin_novels/answer_2.json": 2 / 3,
    "alpha/python_match/answer_1.json": 1.0,
    "alpha/python_match/answer_2.json": 0.0,
    "beta/louvre_hours/answer_1.json": 0.0,
    "beta/louvre_hours/answer_2.json": 1.0,
    "beta/le_guin_novels/answer_1.json": 2 / 3,
    "beta/python_match/answer_1.json": 0.5,
    "beta/python_match/answer_2.json": 0.0,
}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def test_answer_folders_produce_expected_result_files(work: Path) -> None:
    run_answers(work, make_backend())
    files = result_files(work / "results")
    assert set(files) == set(EXPECTED_SCORES)
    for name, expected in EXPECTED_SCORES.items():
        assert files[name]["status"] == "complete", name
        assert files[name]["final_score"] == pytest.approx(expected), name


def test_result_is_a_superset_of_mind2web2_result(work: Path) -> None:
    run_answers(work, make_backend())
    result = result_files(work / "results")["alpha/louvre_hours/answer_2.json"]
    for key in ("agent_name", "answer_name", "final_score", "judge_model", "extract_model"):
        assert key in result
    tree = result["eval_breakdown"][0]["verification_tree"]
    assert [c["id"] for c in tree["children"]] == [
        "hours_stated",
        "hours_correct",
        "hours_cited",
        "official_source",
    ]
    assert [c["status"] for c in tree["children"]] == ["passed", "passed", "passed", "failed"]
    assert result["tree_statistics"] == {"depth": 1, "total_nodes": 5, "leaf_nodes": 4}
    assert result["task_id"] == "louvre_hours" and result["errors"] == []
    assert result["usage"]["backend_calls"] == 3
    fingerprint = result["fingerprint"]
    assert fingerprint["judge_sha256"].startswith("sha256:")
    assert fingerprint["templates_sha256"].startswith("sha256:")
    assert fingerprint["answer_sha256"].startswith("sha256:")
    assert fingerprint["judge_model"] == "scripted-judge"


def test_sequential_gate_skips_the_rest_without_backend_calls(work: Path) -> None:
    run_answers(work, make_backend())
    result = result_files(work / "results")["beta/louvre_hours/answer_1.json"]
    tree = result["eval_breakdown"][0]["verification_tree"]
    statuses = {c["id"]: c["status"] for c in tree["children"]}
    assert statuses == {
        "hours_stated": "passed",
        "hours_correct": "failed",
        "hours_cited": "skipped",
        "official_source": "skipped",
    }
    assert result["usage"]["backend_calls"] == 2


def test_summary_metrics_match_hand_computation(work: Path) -> None:
    report = run_answers(work, make_backend())
    alpha = json.loads((work / "results/alpha/summary.json").read_text())
    # alpha run 1: 1, 1, 1; run 2: 0.5, 2/3, 0.
    pc = [1.0, (0.5 + 2 / 3 + 0.0) / 3]
    assert alpha["partial_completion"]["mean"] == pytest.approx(statistics.fmean(pc))
    assert alpha["partial_completion"]["std"] == pytest.approx(statistics.pstdev(pc))
    assert alpha["success_rate"]["mean"] == pytest.approx(0.5)
    assert alpha["success_rate"]["std"] == pytest.approx(0.5)
    assert alpha["pass_at_k"] == {"k": 2, "value": 1.0}
    beta = report.summaries["beta"]
    # beta run 1: 0, 2/3, 0.5; run 2: louvre 1, python 0 (empty answer), and le_guin has no
    # answer_2: a missing pair, which scores 0 as in Mind2Web 2 (and is listed).
    pc = [(0.0 + 2 / 3 + 0.5) / 3, (1.0 + 0.0 + 0.0) / 3]
    assert beta.partial_completion.mean == pytest.approx(statistics.fmean(pc))
    assert beta.partial_completion.std == pytest.approx(statistics.pstdev(pc))
    assert beta.success_rate.per_run == pytest.approx({"answer_1": 0.0, "answer_2": 1 / 3})
    assert [(m.task_id, m.answer_name) for m in beta.missing] == [("le_guin_novels", "answer_2")]
    assert beta.pass_at_k.k == 2
    assert beta.pass_at_k.value == pytest.approx(1 / 3)
    assert beta.per_task["le_guin_novels"].best == pytest.approx(2 / 3)
    assert beta.per_task["python_match"].average == pytest.approx(0.25)
    assert beta.counts.complete == 5


def test_webeval_trajectories_produce_exactly_the_expected_score_files(work: Path) -> None:
    run_trajectories(work, make_backend())
    traj = work / "webeval/fara-run/traj"
    score_files = sorted(p.relative_to(traj).as_posix() for p in traj.glob("*/scores/*.json"))
    assert score_files == [
        "le_guin_novels/scores/judgegen_le_guin_novels.json",
        "louvre_hours/scores/judgegen_louvre_hours.json",
        "python_match/scores/judgegen_python_match.json",
    ]
    scores = {p.parent.parent.name: json.loads(p.read_text()) for p in traj.glob("*/scores/*.json")}
    assert {task: s["score"] for task, s in scores.items()} == {
        "le_guin_novels": 0.0,
        "louvre_hours": 1.0,
        "python_match": 0.5,
    }
    full = json.loads(scores["louvre_hours"]["gpt_response_text"])
    assert full["final_score"] == 1.0 and full["status"] == "complete"
    assert full["eval_breakdown"][0]["verification_tree"]["id"] == "root"


def test_aborted_trajectory_is_excluded_and_over_budget_counts_as_zero(work: Path) -> None:
    report = run_trajectories(work, make_backend())
    summary = report.summaries["fara-run"]
    assert summary.counts.model_dump() == {"complete": 3, "incomplete": 0, "excluded": 1}
    assert [e.task_id for e in summary.excluded] == ["eiffel_height"]
    assert summary.partial_completion.mean == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    over_budget = result_files(work / "results")["fara-run/le_guin_novels/final_answer.json"]
    assert over_budget["usage"]["backend_calls"] == 0


def test_an_over_budget_trajectory_as_webeval_writes_it_scores_0_without_the_judge(
    work: Path,
) -> None:
    """webeval's over-budget trajectory holds `final_answer: "<no_answer>"`, not ""."""
    record_path = work / "webeval/fara-run/traj/louvre_hours/louvre_hours_final_answer.json"
    record = json.loads(record_path.read_text())
    record.update(final_answer="<no_answer>", is_aborted=False)
    record_path.write_text(json.dumps(record))
    run_trajectories(work, make_backend())
    result = result_files(work / "results")["fara-run/louvre_hours/final_answer.json"]
    assert result["status"] == "complete" and result["final_score"] == 0.0
    assert result["usage"]["backend_calls"] == 0
    score = record_path.parent / "scores/judgegen_louvre_hours.json"
    assert json.loads(score.read_text())["score"] == 0.0


def test_rerun_with_unchanged_inputs_makes_zero_backend_calls(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend)
    first = result_files(work / "results")
    calls = len(backend.calls)
    report = run_answers(work, backend)
    assert len(backend.calls) == calls
    assert report.evaluated == 0 and report.reused == len(EXPECTED_SCORES)
    assert result_files(work / "results") == first


def test_changing_a_judge_makes_only_its_results_stale(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend)
    before = result_files(work / "results")
    judge = work / "judges/python_match.py"
    judge.write_text(judge.read_text() + "\n# reviewed: tightened wording\n")
    backend.calls.clear()
    report = run_answers(work, backend)
    assert report.evaluated == 3  # alpha 1, alpha 2, beta 1 (beta 2 is empty: no judge run)
    assert {c.task_id for c in backend.calls} == {"python_match"}
    after = result_files(work / "results")
    for name in before:
        changed = before[name]["fingerprint"] != after[name]["fingerprint"]
        assert changed == name.split("/")[1].startswith("python_match"), name


def test_transient_faults_give_incomplete_results_that_reruns_complete_identically(
    work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    clean = copy_fixtures(tmp_path_factory.mktemp("clean"))
    run_answers(clean, make_backend(), backend_spec=SPEC)
    expected = result_files(clean / "results")
    flaky = FlakyBackend(make_backend(), rate=0.25, seed=7)
    first = run_answers(work, flaky, backend_spec=SPEC)
    assert flaky.failures > 0 and first.incomplete
    assert first.exit_code == 1
    for head in first.incomplete:
        assert head.final_score is None and head.first_error
        assert stored(work, head).errors
    for _ in range(4):
        report = run_answers(work, flaky, backend_spec=SPEC)
        if not report.incomplete:
            break
    assert not report.incomplete
    got = result_files(work / "results")
    assert {k: judgement(v) for k, v in got.items()} == {
        k: judgement(v) for k, v in expected.items()
    }
    retried = {f"{h.agent_name}/{h.task_id}/{h.answer_name}.json" for h in first.incomplete}
    assert {k for k, v in got.items() if v["earlier_attempts"]} == retried


def judgement(result: dict[str, Any]) -> dict[str, Any]:
    """A result without timing and without what it carries of earlier attempts."""
    kept = without_timing(result)
    for key in ("earlier_attempts", "usage_all_attempts"):
        kept.pop(key)
    kept["notes"] = [note for note in kept["notes"] if not note.startswith("redone after")]
    return kept


def test_a_run_keeps_each_results_head_in_memory_and_the_whole_result_in_its_file(
    work: Path,
) -> None:
    """A long run's memory must not grow with every tree: the report holds heads, which
    say what the files say."""
    report = run_answers(work, make_backend())
    assert report.results and all(type(head) is ResultHead for head in report.results)
    for head in report.results:
        assert head == ResultHead.of(stored(work, head))
    rerun = run_answers(work, make_backend())  # every result reused from its file
    assert rerun.reused == len(report.results)
    assert sorted(rerun.results, key=str) == sorted(report.results, key=str)


def test_judge_exception_gives_incomplete_result_with_partial_tree(work: Path) -> None:
    judge = work / "judges/louvre_hours.py"
    judge.write_text(
        judge.read_text().replace(
            "    ev.add_custom_node(\n        result=checks.url_in_domain",
            '    raise RuntimeError("judge bug")\n    ev.add_custom_node(\n'
            "        result=checks.url_in_domain",
        )
    )
    report = run_answers(work, make_backend())
    louvre = [r for r in report.results if r.task_id == "louvre_hours"]
    assert louvre and all(r.status == "incomplete" for r in louvre)
    first = stored(work, louvre[0])
    assert first.errors[-1]["type"] == "RuntimeError" and "judge bug" in first.errors[-1]["message"]
    assert first.final_score is None
    assert first.eval_breakdown[0]["verification_tree"]["children"]
    assert report.summaries["alpha"].counts.incomplete == 2
    assert report.exit_code == 1


def test_judge_timeout_is_an_incomplete_result(work: Path) -> None:
    slow = make_backend(latency_s=5.0)
    inputs = [i for i in discover_answers(work / "answers") if i.task_id == "louvre_hours"][:1]
    report = asyncio.run(
        run_evaluations(
            inputs,
            backend=slow,
            options=options(work),
            isolation="in_process",
            limits=SandboxLimits(timeout_s=0.2),
        )
    )
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete"
    assert result.errors[-1]["kind"] == "timeout"


def test_budget_exhaustion_stops_the_run_with_exit_code_3(work: Path) -> None:
    def broke(request: object) -> bool:
        raise BudgetExceeded("budget of $0.01 spent")

    backend = ScriptedBackend(extract=make_backend()._extract, verify=broke)
    report = run_answers(work, backend, jobs=1)
    assert report.stopped and "budget" in report.stopped
    assert report.exit_code == 3
    assert report.not_started > 0
    assert report.evaluated + report.not_started + 1 == len(EXPECTED_SCORES)


def test_overwrite_redoes_every_result(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend)
    calls = len(backend.calls)
    report = run_answers(work, backend, overwrite=True)
    assert report.reused == 0
    assert len(backend.calls) == 2 * calls


def test_corrupt_result_file_is_redone(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend)
    target = work / "results/alpha/louvre_hours/answer_1.json"
    target.write_text('{"truncated": ')
    report = run_answers(work, backend)
    assert report.evaluated == 1
    assert json.loads(target.read_text())["final_score"] == 1.0


def test_in_process_executor_is_usable_directly(work: Path) -> None:
    from toolkit.runner.executors import InProcessExecutor
    from toolkit.sandbox.protocol import EvalJob

    executor = InProcessExecutor(make_backend(), pages=DictPages())
    answer = (work / "answers/alpha/python_match/answer_1.md").read_text()
    outcome = asyncio.run(
        executor.evaluate(EvalJob(judge_path=str(work / "judges/python_match.py"), answer=answer))
    )
    assert outcome.status == "complete" and outcome.summary["final_score"] == 1.0


def test_run_options_defaults_point_at_repo_folders() -> None:
    defaults = RunOptions()
    assert defaults.judges_dir == Path("generated_judges")
    assert defaults.reviews_dir == Path("reviews")


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandboxed"])
def test_judge_calling_the_maps_tool_scores_as_when_run_directly(
    tmp_path: Path, sandbox: bool
) -> None:
    from tests.fixtures.m2w2 import scenario
    from toolkit.runner.inputs import AnswerInput
    from toolkit.tools.maps import maps_tools

    task = scenario.TASKS["portland_bookstores"]
    answer, data = task.answers["complete"]
    expected = asyncio.run(scenario.run(task, task.native_judge, "complete", "all_pass"))
    judges = tmp_path / "judges"
    judges.mkdir()
    (judges / "portland_bookstores.py").write_bytes(task.native_judge.read_bytes())
    backend = ScriptedBackend(
        extract=scenario.extractions(data), verify=scenario.verdicts("all_pass")
    )
    item = AnswerInput(
        kind="answer",
        agent_name="agent",
        task_id="portland_bookstores",
        answer_name="complete",
        path=tmp_path / "answer.md",
        answer_sha256="sha256:x",
        text=answer,
    )
    tools = maps_tools(scenario.FakeMaps())
    opts = options(tmp_path, judges_dir=judges)

    async def go() -> object:
        return await run_evaluations(
            [item],
            backend=backend,
            options=opts,
            isolation="sandbox" if sandbox else "in_process",
            pages=scenario.DictPages(),
            tools=tools,
        )

    (head,) = asyncio.run(go()).results
    result = stored(tmp_path, head)
    assert result.status == "complete", result.errors
    assert result.final_score == expected.summary["final_score"]
    assert result.eval_breakdown[0]["verification_tree"] == expected.tree


def test_jobs_bounds_the_evaluations_in_flight(work: Path) -> None:
    from toolkit.runner.executors import InProcessExecutor
    from toolkit.sandbox.protocol import EvalJob, EvalOutcome

    inner = InProcessExecutor(make_backend(latency_s=0.01), pages=DictPages())
    in_flight, peak = 0, 0

    class Counting:
        async def evaluate(self, job: EvalJob) -> EvalOutcome:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await inner.evaluate(job)
            finally:
                in_flight -= 1

    report = asyncio.run(
        run_evaluations(
            discover_answers(work / "answers"),
            backend=make_backend(),
            options=options(work, jobs=3),
            executor=Counting(),
        )
    )
    assert peak == 3 and report.evaluated == 10


def test_editing_an_answer_redoes_only_that_answer(work: Path) -> None:
    backend = make_backend()
    run_answers(work, backend)
    answer = work / "answers/beta/louvre_hours/answer_1.md"
    answer.write_text(answer.read_text().replace("9:00 to 18:00", "9:00 to 21:00"))
    backend.calls.clear()
    report = run_answers(work, backend)
    assert report.evaluated == 1 and report.reused == len(EXPECTED_SCORES) - 1
    redone = result_files(work / "results")["beta/louvre_hours/answer_1.json"]
    assert redone["final_score"] == 1.0


def test_a_trajectory_aborted_on_retry_loses_its_old_score_file(work: Path) -> None:
    run_trajectories(work, make_backend())
    folder = work / "webeval/fara-run/traj/louvre_hours"
    score = folder / "scores/judgegen_louvre_hours.json"
    assert score.is_file()
    record_path = folder / "louvre_hours_final_answer.json"
    record = json.loads(record_path.read_text())
    record.update(final_answer="", is_aborted=True)
    record_path.write_text(json.dumps(record))
    run_trajectories(work, make_backend())
    assert not score.exists()
    result = result_files(work / "results")["fara-run/louvre_hours/final_answer.json"]
    assert result["status"] == "excluded" and "aborted" in result["reason"]
