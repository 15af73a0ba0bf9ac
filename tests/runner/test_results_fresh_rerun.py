"""A rerun with nothing to redo is answered from the results folder: the same results and
metrics, no model call, no change to the cache or ledger; anything stale goes to the scheduler."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import DictPages, llm_run, options, result_files, run_args
from toolkit.runner.freshness import fresh_run
from toolkit.runner.inputs import discover_answers
from toolkit.runner.results import SUMMARY_FILE

RESULTS = 11


def invoke(args: list[str], env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(main, args, catch_exceptions=False)


def snapshot(results: Path) -> dict[str, bytes]:
    return {p.relative_to(results).as_posix(): p.read_bytes() for p in results.rglob("*.json")}


def test_a_fresh_rerun_reuses_every_result_and_leaves_every_file_as_it_was(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    first = invoke(args)
    assert first.exit_code == 0, first.output
    before = snapshot(work / "results")
    rerun = invoke(args)
    assert rerun.exit_code == 0, rerun.output
    record = json.loads(rerun.stdout)
    assert (record["evaluated"], record["reused"]) == (0, RESULTS)
    assert record["summaries"] == json.loads(first.stdout)["summaries"]
    assert f"{RESULTS} up to date" in rerun.stderr and "reused" in rerun.stderr
    assert snapshot(work / "results") == before


def test_a_fresh_llm_rerun_asks_the_model_nothing_and_leaves_cache_and_ledger_alone(
    work: Path,
) -> None:
    args, env = llm_run(work)
    assert invoke(args, env).exit_code == 0
    ledger = (work / "ledger.jsonl").read_bytes()
    cache = (work / "llm-cache.sqlite").stat().st_mtime_ns
    rerun = invoke(args, env)
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.stdout)["reused"] == RESULTS
    assert "LLM: 0 calls, 0 cached" in rerun.stderr
    assert (work / "ledger.jsonl").read_bytes() == ledger
    assert (work / "llm-cache.sqlite").stat().st_mtime_ns == cache


def test_a_changed_model_makes_the_llm_results_stale(work: Path) -> None:
    args, env = llm_run(work)
    assert invoke(args, env).exit_code == 0
    rerun = invoke([*args, "--model", "gpt-4.1-mini"], env)
    record = json.loads(rerun.stdout)
    assert record["reused"] == 0 and record["evaluated"] > 0
    louvre = result_files(work / "results")["alpha/louvre_hours/answer_1.json"]
    assert louvre["fingerprint"]["judge_model"] == "gpt-4.1-mini"


def test_one_edited_answer_is_judged_again_and_the_others_reused(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    assert invoke(args).exit_code == 0
    answer = work / "answers" / "alpha" / "louvre_hours" / "answer_1.md"
    answer.write_text(answer.read_text() + "\nOne more line.\n")
    record = json.loads(invoke(args).stdout)
    assert (record["evaluated"], record["reused"]) == (1, RESULTS - 1)


def test_overwrite_redoes_every_result_although_all_are_fresh(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--json")
    first = json.loads(invoke(args).stdout)
    record = json.loads(invoke([*args, "--overwrite"]).stdout)
    assert record["reused"] == 0 and record["evaluated"] == first["evaluated"] > 0


def test_fresh_run_declines_a_run_with_a_stale_result_without_writing_or_reporting(
    work: Path,
) -> None:
    args = run_args(work, "--include-unreviewed", "--no-sandbox")
    assert invoke(args).exit_code == 0
    summary = work / "results" / "alpha" / SUMMARY_FILE
    summary.unlink()
    judge = work / "judges" / "python_match.py"
    judge.write_text(judge.read_text() + "\n# edited\n")
    events: list[str] = []
    from tests.fixtures.runner.scripted import factory

    report = asyncio.run(
        fresh_run(
            discover_answers(work / "answers"),
            options=options(work, backend_spec="tests.fixtures.runner.scripted:factory"),
            backend=factory(),
            pages=DictPages(),
            progress=lambda event, result: events.append(event),
        )
    )
    assert report is None and events == [] and not summary.exists()
