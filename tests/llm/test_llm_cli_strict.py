"""Through the real CLI: schema-breaking output never becomes a (cached) score, and an unusable
cache file stops the command with exit 3 and one line saying how to fix it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli.rerun import rerun_note
from tests.fixtures.runner.helpers import build_page_store, copy_fixtures, result_files

REPO = Path(__file__).resolve().parents[2]
GOOD = "scripted:tests.fixtures.runner.llm_policy:policy"
BAD = "scripted:tests.llm.policies:unexpected_extraction"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    copy_fixtures(tmp_path)
    build_page_store(tmp_path / "pages")
    return tmp_path


def judgegen(work: Path, provider: str, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["run", "--include-unreviewed", "--no-sandbox", "--task", "louvre_hours"]
    for name in ("answers", "judges", "results", "reviews", "pages"):
        args += [f"--{name}", str(work / name)]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }
    command = [sys.executable, "-c", "from generator.cli import main; main()"]
    return subprocess.run(
        [*command, *args, "--provider", provider, *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def extraction_answers(cache: Path) -> list[object]:
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT response FROM entries WHERE purpose = 'extract'").fetchall()
    return [json.loads(row[0])["parsed"] for row in rows]


def test_schema_breaking_extraction_is_incomplete_and_never_cached(work: Path) -> None:
    result = judgegen(work, BAD)
    assert result.returncode == 1, result.stderr
    results = result_files(work / "results")
    assert results and all(r["status"] == "incomplete" for r in results.values())
    errors = [e for r in results.values() for e in r["errors"]]
    assert errors and all("invalid_output" in json.dumps(e) for e in errors)
    assert extraction_answers(work / "llm-cache.sqlite") == []


def test_overwrite_does_not_serve_a_schema_breaking_answer_cached_earlier(work: Path) -> None:
    first = judgegen(work, GOOD)
    assert first.returncode == 0, first.stderr
    scores = {k: r["final_score"] for k, r in result_files(work / "results").items()}
    cache = work / "llm-cache.sqlite"
    with sqlite3.connect(cache) as db:  # what the lenient checker stored (format 1: unchecked)
        bad = json.dumps({"text": '{"unexpected": 1}', "parsed": {"unexpected": 1}})
        db.execute("UPDATE entries SET response = ?, checked = 0 WHERE purpose = 'extract'", (bad,))
    rerun = judgegen(work, GOOD, "--overwrite")
    assert rerun.returncode == 0, rerun.stderr
    assert {k: r["final_score"] for k, r in result_files(work / "results").items()} == scores
    assert {"unexpected": 1} not in extraction_answers(cache)
    assert rerun.stderr.count(f"response cache {cache} has unusable entries") == 1


def test_garbled_cache_rows_are_misses_with_one_warning_naming_the_file(work: Path) -> None:
    assert judgegen(work, GOOD).returncode == 0
    cache = work / "llm-cache.sqlite"
    with sqlite3.connect(cache) as db:
        db.execute("UPDATE entries SET response = 'garbled{'")
    rerun = judgegen(work, GOOD, "--overwrite")
    assert rerun.returncode == 0, rerun.stderr
    assert all(r["status"] == "complete" for r in result_files(work / "results").values())
    assert rerun.stderr.count(str(cache)) == 1


@pytest.mark.parametrize("damage", ["not_sqlite", "truncated"])
def test_an_unusable_cache_file_stops_the_run_with_exit_3_and_the_fix(
    work: Path, damage: str
) -> None:
    cache = work / "llm-cache.sqlite"
    if damage == "not_sqlite":
        cache.write_text("judgegen cache? no: a text file\n" * 200)
    else:
        assert judgegen(work, GOOD).returncode == 0
        data = cache.read_bytes()
        cache.write_bytes(data[: len(data) // 2])
    result = judgegen(work, GOOD, "--overwrite")
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in result.stderr
    assert str(cache) in lines[0] and "Fix: move it aside or delete it" in lines[0]
    assert lines[1] == rerun_note("run", None, overwrite=True)  # nothing said of that cache


@pytest.mark.parametrize("provider", [GOOD, BAD], ids=["answered", "failed"])
def test_results_usage_adds_up_to_the_llm_line(work: Path, provider: str) -> None:
    for _ in range(2):  # the second run is served from the cache (or fails again)
        result = judgegen(work, provider, "--overwrite")
        line = next(t for t in result.stderr.splitlines() if t.startswith("LLM: "))
        calls, cached = (int(part.split()[0]) for part in line[5:].split(", ")[:2])
        usage = [r["usage"] for r in result_files(work / "results").values()]
        assert sum(u["llm_calls"] for u in usage) == calls
        assert sum(u["cache_hits"] for u in usage) == cached
        ledger_cost = float(line.split("$")[1].split(";")[0])
        assert round(sum(u["cost_usd"] for u in usage), 2) == ledger_cost
