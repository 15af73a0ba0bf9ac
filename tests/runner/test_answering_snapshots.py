"""A model alias the vendor re-points to a new snapshot is seen: each result records the models
that answered its LLM calls (`usage.answered_by`), and a run whose results were answered by two
snapshots of one alias (old answers replayed from the cache, new calls answered by the new
snapshot) warns, naming them, and its summary lists them (`mixed_snapshots`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from generator.cli import main
from tests.fixtures.runner.helpers import llm_run, result_files
from tests.fixtures.runner.llm_policy import SNAPSHOT_ENV
from tests.llm.conftest import verify_request
from toolkit.llm.abandoned import AbandonedSpend
from toolkit.llm.ledger import ABANDONED, Ledger
from toolkit.llm.models import Usage
from toolkit.runner.metering import Meter, charge_abandoned

POLICY = "scripted:tests.fixtures.runner.llm_policy:answered_by_snapshot"
OLD, NEW = "o4-mini-2025-04-16", "o4-mini-2025-09-30"
LOUVRE = "louvre_hours"


def judged(work: Path, snapshot: str, *extra: str) -> Result:
    """`judgegen run --json` with the scripted model whose alias `o4-mini` points at `snapshot`,
    the response cache and ledger in `work`."""
    args, env = llm_run(work, *extra, provider=POLICY)
    env[SNAPSHOT_ENV] = snapshot
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def answered(results: dict[str, dict[str, Any]], task: str) -> list[dict[str, list[str]]]:
    """`usage.answered_by` of the results of `task` (every agent and answer)."""
    return [r["usage"]["answered_by"] for name, r in results.items() if f"/{task}/" in name]


def test_each_result_records_the_snapshot_that_answered_the_alias(work: Path) -> None:
    judged(work, OLD)
    results = result_files(work / "results")
    calling = [r for r in results.values() if r["usage"]["llm_calls"]]
    assert calling and all(r["version"] == 4 for r in results.values())
    assert all(r["usage"]["answered_by"] == {"o4-mini": [OLD]} for r in calling)


def test_ledger_rows_of_a_run_record_the_snapshot_that_answered(work: Path) -> None:
    judged(work, OLD)
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    assert rows and {(row["model"], row["answered_by"]) for row in rows} == {("o4-mini", OLD)}


def test_a_run_answered_by_one_snapshot_does_not_warn(work: Path) -> None:
    run = judged(work, OLD)
    assert "were answered by" not in run.stderr
    summary = json.loads(run.stdout)["summaries"]["alpha"]
    assert summary["mixed_snapshots"] == {}
    assert list(summary["answered_by"]["o4-mini"]) == [OLD]


def test_cached_answers_of_the_old_snapshot_and_new_calls_of_the_new_one_warn(
    work: Path,
) -> None:
    """The louvre results are redone from the cache (snapshot OLD answered those calls), the
    others are judged now by NEW: one set of metrics, two models."""
    judged(work, OLD, "--task", LOUVRE)
    run = judged(work, NEW, "--overwrite")
    results = result_files(work / "results")
    louvre = [r for name, r in results.items() if f"/{LOUVRE}/" in name]
    assert louvre and all(r["usage"]["cache_hits"] == r["usage"]["llm_calls"] for r in louvre)
    assert all(by == {"o4-mini": [OLD]} for by in answered(results, LOUVRE))
    assert all(by == {"o4-mini": [NEW]} for by in answered(results, "le_guin_novels"))
    record = json.loads(run.stdout)
    assert (record["version"], record["summaries"]["alpha"]["version"]) == (10, 9)
    mixed = record["summaries"]["alpha"]["mixed_snapshots"]
    alpha_new = sum(
        r["usage"]["answered_by"] == {"o4-mini": [NEW]}
        for name, r in results.items()
        if name.startswith("alpha/")
    )
    assert mixed == {"o4-mini": {OLD: 2, NEW: alpha_new}}
    saved = json.loads((work / "results" / "alpha" / "summary.json").read_text())
    assert saved["mixed_snapshots"] == mixed
    assert record["usage"]["answered_by"] == {"o4-mini": [OLD, NEW]}
    warning = next(line for line in run.stderr.splitlines() if "alpha that asked" in line)
    assert f"asked for o4-mini were answered by 2 models: {OLD} (2 result(s)), {NEW}" in warning
    assert "--overwrite --cache-mode refresh" in warning and "--model SNAPSHOT" in warning


def test_results_kept_fresh_count_with_those_written_now(work: Path) -> None:
    """The louvre results, judged by OLD, are up to date and kept: the metrics still mix them
    with the results NEW judges now."""
    judged(work, OLD, "--task", LOUVRE)
    run = judged(work, NEW)
    record = json.loads(run.stdout)
    assert record["reused"] == 4
    assert set(record["summaries"]["beta"]["mixed_snapshots"]["o4-mini"]) == {OLD, NEW}
    assert "warning: the complete results of beta that asked for o4-mini" in run.stderr


def test_calls_a_judge_left_running_count_the_model_that_answered_them() -> None:
    """A call that ended after its judge stopped is charged from its ledger row, which names
    the model that answered; one cancelled had no answer."""
    ledger = Ledger(None)
    ended = ledger.row_for(
        verify_request(), Usage(), hit=False, latency=1.0, error=None, answered_by=NEW
    )
    cancelled = ledger.row_for(verify_request(), Usage(), hit=False, latency=1.0, error=ABANDONED)
    meter = Meter()
    charge_abandoned(meter, AbandonedSpend(rows=(ended, cancelled)), 1.0)
    assert meter.usage.answered_by == {"o4-mini": [NEW]}
