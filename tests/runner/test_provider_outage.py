"""A run whose LLM provider is down stops (exit 3) instead of failing every answer one by one.

The scripted provider fails every call as a connection error; with `--concurrency 1` the LLM
client calls it no more after 10 failures in a row (`toolkit.llm.outage`), and the runner
stops: evaluations not yet started are left for the rerun, none is scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.cli.rerun import rerun_note
from tests.fixtures.cli_flags import flags_named, flags_of, stop_lines
from tests.fixtures.runner.helpers import FIXTURES, result_files, run_args
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.outage import OUTAGE_FIX

DOWN = "scripted:tests.fixtures.runner.llm_policy:provider_down"
ANSWERS = 24
THRESHOLD = 10
"""Failures in a row that open the breaker at `--concurrency 1`: max(10, 2 x 1)."""


def many_answers(work: Path) -> Path:
    """An answers folder holding `ANSWERS` copies of one python_match answer."""
    text = (FIXTURES / "answers" / "alpha" / "python_match" / "answer_1.md").read_text()
    folder = work / "many" / "alpha" / "python_match"
    folder.mkdir(parents=True)
    for index in range(1, ANSWERS + 1):
        (folder / f"answer_{index}.md").write_text(text)
    return work / "many"


def run_while_down(work: Path, *extra: str) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """`judgegen run --json` of `ANSWERS` answers on a provider that is down (with `extra`
    flags): the CLI's outcome, its record and the ledger's rows."""
    args = run_args(work, "--include-unreviewed", "--json", *extra, answers=many_answers(work))
    at = args.index("--backend")
    del args[at : at + 2]
    args += ["--provider", DOWN, "--concurrency", "1", "--jobs", "1"]
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    outcome = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    return outcome, json.loads(outcome.stdout), rows


@pytest.mark.parametrize("mode", [["--no-sandbox"], []], ids=["in_process", "sandboxed"])
def test_a_run_on_a_provider_that_is_down_stops_with_exit_3_naming_the_outage(
    work: Path, mode: list[str]
) -> None:
    outcome, record, rows = run_while_down(work, *mode)
    assert outcome.exit_code == 3, outcome.stderr
    assert record["stopped"].startswith(f"LLMError: LLM provider {DOWN} looks down: {THRESHOLD}")
    assert f"stopped: LLMError: LLM provider {DOWN} looks down" in outcome.stderr
    assert record["evaluated"] < ANSWERS
    assert record["evaluated"] + record["not_started"] == ANSWERS
    assert sum(row["error"] == "connection" for row in rows) == THRESHOLD - 1
    assert all(row["error"] in ("connection", "outage") for row in rows)


def test_only_the_answers_started_before_the_outage_have_results_and_none_is_scored(
    work: Path,
) -> None:
    _, record, _ = run_while_down(work, "--no-sandbox")
    results = result_files(work / "results").values()
    assert 0 < len(results) == record["evaluated"] < ANSWERS
    assert all(r["status"] == "incomplete" and r["final_score"] is None for r in results)
    assert len(record["incomplete"]) == record["evaluated"]


def test_the_outage_stop_says_what_a_rerun_of_run_keeps_and_names_only_its_flags(
    work: Path,
) -> None:
    outcome, _, _ = run_while_down(work, "--no-sandbox")
    assert f"Fix: {OUTAGE_FIX}" in outcome.stderr
    assert rerun_note("run", CacheMode.RW) in outcome.stderr.splitlines()
    assert flags_named(stop_lines(outcome.stderr)) <= flags_of("run")


def test_the_outage_stop_of_a_run_with_overwrite_says_its_rerun_redoes_every_result(
    work: Path,
) -> None:
    outcome, _, _ = run_while_down(work, "--no-sandbox", "--overwrite")
    assert rerun_note("run", CacheMode.RW, overwrite=True) in outcome.stderr.splitlines()
