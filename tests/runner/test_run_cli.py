"""`judgegen run` and `judgegen report` from the command line, including a SIGKILLed run."""

from __future__ import annotations

import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.cli.rerun import rerun_note
from tests.fixtures.cli_flags import flags_named, flags_of, stop_lines
from tests.fixtures.runner.helpers import (
    build_page_store,
    copy_fixtures,
    result_files,
    run_args,
    without_timing,
)
from toolkit.llm.budget import BUDGET_FIX
from toolkit.llm.cache_mode import CacheMode
from toolkit.runner.results_lock import LOCK_FILE

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "alpha/le_guin_novels/answer_1.json",
    "alpha/le_guin_novels/answer_2.json",
    "alpha/louvre_hours/answer_1.json",
    "alpha/louvre_hours/answer_2.json",
    "alpha/python_match/answer_1.json",
    "alpha/python_match/answer_2.json",
    "beta/le_guin_novels/answer_1.json",
    "beta/louvre_hours/answer_1.json",
    "beta/louvre_hours/answer_2.json",
    "beta/python_match/answer_1.json",
    "beta/python_match/answer_2.json",
}


def invoke(args: list[str]) -> object:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_run_prints_metrics_on_stdout_and_progress_on_stderr(work: Path) -> None:
    result = invoke(run_args(work, "--include-unreviewed", "--no-sandbox"))
    assert result.exit_code == 0, result.output
    assert "Partial Completion  0.6944 ± 0.3056" in result.stdout
    assert "Pass@2              0.3333" in result.stdout
    assert "[11/11]" in result.stderr and "[11/11]" not in result.stdout
    assert set(result_files(work / "results")) == EXPECTED
    assert (work / "results/alpha/summary.json").is_file()


def test_run_skips_unreviewed_judges_lists_them_and_exits_1(work: Path) -> None:
    judges, reviews = str(work / "judges"), str(work / "reviews")
    approve = invoke(
        ["approve", "louvre_hours", "--reviewer", "Ada", "--judges", judges, "--reviews", reviews]
    )
    assert approve.exit_code == 0
    result = invoke(run_args(work, "--no-sandbox", "--json"))
    assert result.exit_code == 1, result.output
    assert "error: 2 judge(s) not run for approval reasons: le_guin_novels, python_match" in (
        result.stderr
    )
    report = json.loads(result.stdout)
    assert report["exit_code"] == 1 and "approval" in report["failure"]
    assert sorted(s["task_id"] for s in report["skipped_judges"]) == [
        "le_guin_novels",
        "python_match",
    ]
    assert "skipped judge python_match: not reviewed" in result.stderr
    judged = {k for k in result_files(work / "results") if "louvre_hours" in k}
    assert judged == {k for k in EXPECTED if "louvre_hours" in k}
    assert report["summaries"]["alpha"]["skipped_judges"][0]["task_id"] == "le_guin_novels"


def test_run_exits_1_when_evaluations_are_incomplete(work: Path) -> None:
    backend = "tests.fixtures.runner.scripted:failing_factory"
    result = invoke(run_args(work, "--include-unreviewed", "--no-sandbox", backend=backend))
    assert result.exit_code == 1
    assert "incomplete" in result.stderr
    assert "Incomplete (excluded from metrics; rerun to retry): 6" in result.stdout


def test_run_exits_3_when_the_budget_stops_it(work: Path) -> None:
    backend = "tests.fixtures.runner.scripted:broke_factory"
    result = invoke(
        run_args(work, "--include-unreviewed", "--no-sandbox", "--jobs", "1", backend=backend)
    )
    assert result.exit_code == 3
    assert "stopped: BudgetExceeded" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--judges", "."],
        ["run", "--answers", ".", "--trajectories", ".", "--judges", "."],
    ],
)
def test_run_needs_exactly_one_input_kind(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2


def test_run_rejects_a_backend_that_cannot_be_loaded(work: Path) -> None:
    result = CliRunner().invoke(main, run_args(work, backend="no_such_module:factory"))
    assert result.exit_code == 2
    assert "--backend" in result.output


def test_trajectories_cli_writes_score_files(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    args[1:3] = ["--trajectories", str(work / "webeval/fara-run")]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summaries"]["fara-run"]
    assert summary["counts"] == {"complete": 3, "excluded": 1, "incomplete": 0}
    score = work / "webeval/fara-run/traj/python_match/scores/judgegen_python_match.json"
    assert json.loads(score.read_text())["score"] == 0.5


def test_the_run_counts_the_results_it_decided_without_a_judge(work: Path) -> None:
    """An aborted trajectory (excluded) and an empty final answer (scored 0) get results
    without running a judge: the counts must cover them, so a first run reports as many
    results as its rerun finds up to date, and as the summary counts."""
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    args[1:3] = ["--trajectories", str(work / "webeval/fara-run")]

    first = invoke(args)

    record = json.loads(first.stdout)
    assert (record["evaluated"], record["decided"], record["reused"]) == (2, 2, 0)
    assert "2 evaluated, 2 decided without a judge, 0 up to date" in first.stderr
    counts = record["summaries"]["fara-run"]["counts"]
    assert record["evaluated"] + record["decided"] == sum(counts.values()) == 4
    assert json.loads(invoke(args).stdout)["reused"] == 4


def test_sandboxed_run_gives_the_same_results_as_in_process(
    work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other = tmp_path_factory.mktemp("inproc")
    copy_fixtures(other)
    build_page_store(other / "pages")
    sandboxed = invoke(run_args(work, "--include-unreviewed", "--jobs", "2"))
    assert sandboxed.exit_code == 0, sandboxed.output
    in_process = invoke(run_args(other, "--include-unreviewed", "--no-sandbox"))
    assert in_process.exit_code == 0
    a, b = result_files(work / "results"), result_files(other / "results")
    assert {k: without_timing(v) for k, v in a.items()} == {
        k: without_timing(v) for k, v in b.items()
    }
    judged = [r for r in a.values() if r["status"] == "complete" and r["usage"]["backend_calls"]]
    assert judged and all("filesystem_allowlist" in r["sandbox_guards"] for r in judged)
    assert all(r["sandbox_guards"] == [] for r in b.values())
    assert all(r["judge_cpu_s"] > 0 for r in judged)
    assert all(r["judge_cpu_s"] is None for r in b.values())


def test_report_recomputes_the_table_from_result_files(work: Path) -> None:
    invoke(run_args(work, "--include-unreviewed", "--no-sandbox"))
    (work / "results/beta/summary.json").unlink()
    table = invoke(["report", str(work / "results/beta")])
    assert table.exit_code == 0
    # runs 7/18 and 1/3: le_guin_novels has no answer_2, which scores 0 (Mind2Web 2)
    assert "Partial Completion  0.3611 ± 0.0278" in table.stdout
    assert "le_guin_novels/answer_2: no result: scored 0" in table.stdout
    data = json.loads(invoke(["report", str(work / "results/beta"), "--json"]).stdout)
    assert data["pass_at_k"]["value"] == pytest.approx(1 / 3)


def test_report_without_results_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2


@pytest.mark.parametrize("mode", ["--no-sandbox", "--jobs=2"], ids=["in_process", "sandboxed"])
def test_run_killed_with_sigkill_then_rerun_leaves_every_result_once(work: Path, mode: str) -> None:
    """The run is killed once it has written 3 results and its model holds every request
    after them (`held_after_results`): evaluations are in flight, and the other results cannot
    be written before the kill, however slow this process is to send it."""
    cmd = [sys.executable, "-c", "from generator.cli import main; main()"]
    held_after = "tests.fixtures.runner.gated:held_after_results"
    args = run_args(work, "--include-unreviewed", "--jobs", "2", mode, backend=held_after)
    temp = work / "tmp"  # the runs' temp dir: where a sandbox keeps its host folder
    temp.mkdir()
    results, held, gate = work / "results", work / "held", work / "gate"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    env |= {"JUDGEGEN_TEST_RESULTS": str(results), "JUDGEGEN_TEST_HOLD_AFTER": "3"}
    env |= {"JUDGEGEN_TEST_HELD": str(held), "JUDGEGEN_TEST_GATE": str(gate)}
    process = subprocess.Popen(
        cmd + args,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not held.exists():
        assert process.poll() is None, "the run ended before its model held a request"
        assert time.monotonic() < deadline, "the run's model never held a request"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    written = set(result_files(results))
    assert 3 <= len(written) < len(EXPECTED)
    gate.touch()  # the same model, answering every request of the rerun
    rerun = subprocess.run(cmd + args, cwd=REPO, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(written)} up to date" in rerun.stderr
    files = sorted(
        p.relative_to(results).as_posix()
        for p in results.rglob("*")
        if p.is_file() and p.name != LOCK_FILE
    )
    assert files == sorted(EXPECTED | {"alpha/summary.json", "beta/summary.json"})
    for name in files:
        json.loads((results / name).read_text())
    assert list(temp.iterdir()) == []  # the killed run's sandbox folder was swept


def llm_env(work: Path) -> dict[str, str]:
    return {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }


def llm_args(work: Path, *extra: str) -> list[str]:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", *extra)
    at = args.index("--backend")
    del args[at : at + 2]
    return [*args, "--provider", "scripted:tests.fixtures.runner.llm_policy:policy"]


def test_llm_backend_run_records_tokens_and_cost_per_result(work: Path) -> None:
    result = CliRunner(env=llm_env(work)).invoke(main, llm_args(work), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "LLM: " in result.stderr and " calls, " in result.stderr
    louvre = result_files(work / "results")["alpha/louvre_hours/answer_1.json"]
    assert louvre["final_score"] == 1.0
    usage = louvre["usage"]
    assert usage["llm_calls"] >= 3 and usage["input_tokens"] > 0 and usage["cost_usd"] > 0
    assert louvre["fingerprint"]["judge_model"] == "o4-mini"


def test_the_json_record_and_the_results_count_the_calls_a_timed_out_judge_left_running(
    work: Path,
) -> None:
    """A judge that times out with a call out abandons it, but the call was sent (and may be
    billed): the record's `llm` totals count it, as the ledger and the `LLM:` line do, and so
    does `usage`, the sum of the results. The model never answers: each result waits for its
    call up to the judge's --timeout, then says its cost is not known."""
    args = llm_args(work, "--task", "louvre_hours", "--timeout", "0.5", "--json")
    at = args.index("scripted:tests.fixtures.runner.llm_policy:policy")
    args[at] = "scripted:tests.fixtures.runner.llm_policy:never_answers"
    result = CliRunner(env=llm_env(work)).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["version"] == 10 and record["incomplete"]
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    assert rows and all(row["error"] == "abandoned" for row in rows)
    assert (record["llm"]["calls"], record["llm"]["errors"]) == (len(rows), len(rows))
    assert record["usage"]["llm_calls"] == len(rows)
    assert record["usage"]["cost_usd"] == record["llm"]["cost_usd"] == 0
    assert record["usage"]["unknown_cost_calls"] == len(rows)
    notes = [n for r in result_files(work / "results").values() for n in r["notes"]]
    assert notes and all("after it ended" in n and "cost is not known" in n for n in notes)
    assert f"{len(rows)} failed" in result.stderr


def test_the_json_record_of_a_custom_backend_has_no_llm_totals(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    record = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)
    assert record["llm"] is None


def test_budget_cap_stops_an_llm_run_with_exit_code_3(work: Path) -> None:
    args = llm_args(work, "--budget-usd", "0.0001", "--jobs", "1")
    result = CliRunner(env=llm_env(work)).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 3, result.output
    assert "stopped: BudgetExceeded" in result.stderr
    assert f"Fix: {BUDGET_FIX}" in result.stderr
    assert rerun_note("run", CacheMode.RW) in result.stderr.splitlines()
    assert flags_named(stop_lines(result.stderr)) <= flags_of("run")
    rerun = CliRunner(env=llm_env(work)).invoke(main, llm_args(work), catch_exceptions=False)
    assert rerun.exit_code == 0
    assert len(result_files(work / "results")) == len(EXPECTED)


def test_task_option_limits_the_run_to_named_tasks(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--task", "python_match")
    assert invoke(args).exit_code == 0
    assert {k.split("/")[1] for k in result_files(work / "results")} == {"python_match"}


def test_sandboxed_rerun_with_nothing_to_redo_runs_no_judge_process(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke(run_args(work, "--include-unreviewed", "--no-sandbox")).exit_code == 0
    from toolkit.sandbox import pool

    async def no_job(*args: object, **kwargs: object) -> None:
        raise AssertionError("a judge process was started for a run with nothing to do")

    monkeypatch.setattr(pool.ForkServer, "spawn", no_job)
    rerun = invoke(run_args(work, "--include-unreviewed"))
    assert rerun.exit_code == 0 and "11 up to date" in rerun.stderr


def test_pages_folder_without_a_store_is_a_usage_error(work: Path) -> None:
    empty = work / "no_store"
    empty.mkdir()
    args = run_args(work, "--include-unreviewed", "--no-sandbox")
    args[args.index("--pages") + 1] = str(empty)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "cache-pages" in result.output


def test_a_run_leaves_the_garbage_collector_as_it_found_it(work: Path) -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    result = invoke(run_args(work, "--include-unreviewed", "--no-sandbox"))
    assert result.exit_code == 0, result.output
    assert gc.isenabled() and gc.get_freeze_count() == 0
    rerun = invoke(run_args(work, "--include-unreviewed", "--no-sandbox"))  # all fresh
    assert rerun.exit_code == 0 and gc.isenabled() and gc.get_freeze_count() == 0


def test_a_run_started_with_the_collector_off_leaves_it_off(work: Path) -> None:
    gc.disable()
    try:
        result = invoke(run_args(work, "--include-unreviewed", "--no-sandbox"))
        assert result.exit_code == 0, result.output
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_page_store_a_newer_judgegen_wrote_is_a_usage_error_naming_the_fix(
    work: Path,
) -> None:
    """Not a traceback (exit 1, which reads as evaluations incomplete): the input is wrong."""
    db = sqlite3.connect(work / "pages" / "pages.sqlite")
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()

    result = CliRunner().invoke(main, run_args(work, "--no-sandbox"))

    assert result.exit_code == 2, result.output
    assert "a newer judgegen wrote it (page store schema 99" in result.output
    assert "pip install -U judgegen" in result.output
