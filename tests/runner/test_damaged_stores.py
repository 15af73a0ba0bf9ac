"""A page store that cannot be read, or a usage ledger that cannot be written, stops a run
loudly (exit 3, the file and the fix named), instead of failing every evaluation after it one
by one with a bare SQLite or OS message, after paying for their calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import copy_fixtures, options, run_args
from tests.fixtures.runner.llm_policy import policy
from tests.fixtures.sqlite_faults import damage
from toolkit.backends import LLMBackend
from toolkit.llm.client import LLMClient
from toolkit.llm.ledger import Ledger
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner.builder import Isolation
from toolkit.runner.inputs import discover_answers
from toolkit.runner.scheduler import run_evaluations

FULL_DISK = Path("/dev/full")  # every write to it fails with ENOSPC, as a full disk does


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandbox"])
def test_a_damaged_page_store_stops_the_run_naming_the_file_and_the_fix(
    work: Path, sandbox: bool
) -> None:
    damage(work / "pages" / "pages.sqlite")
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(work, "--include-unreviewed", "--json", "--jobs", "1", *mode)
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert record["not_started"] > 0  # the first evaluation to read a page stopped it
    assert "page store" in record["stopped"] and "pages.sqlite" in record["stopped"]
    assert "judgegen cache-pages" in record["stopped"]
    assert "malformed" in record["stopped"]


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full")
@pytest.mark.parametrize("isolation", ["in_process", "sandbox"])
def test_a_ledger_on_a_full_disk_stops_the_run_naming_the_file(
    tmp_path: Path, isolation: Isolation
) -> None:
    work = copy_fixtures(tmp_path)
    client = LLMClient(ScriptedProvider(policy), ledger=Ledger(FULL_DISK))

    async def go():  # type: ignore[no-untyped-def]
        try:
            return await run_evaluations(
                discover_answers(work / "answers"),
                backend=LLMBackend(client),
                options=options(work, jobs=1),
                isolation=isolation,
            )
        finally:
            await client.aclose()

    report = asyncio.run(go())
    assert report.exit_code == 3 and report.not_started > 0
    assert report.stopped is not None and "usage ledger /dev/full" in report.stopped
    assert "No space left on device" in report.stopped


def test_a_page_store_damaged_after_a_run_stops_the_rerun_keeping_every_result(
    work: Path,
) -> None:
    """Whether a stored result's cited pages still hold cannot be told from a damaged store:
    the rerun stops (exit 3, the file and the fix named) before judging anything, instead of
    calling every such result outdated and overwriting it with an incomplete one."""
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--jobs", "1")
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    before = {p: p.read_bytes() for p in (work / "results").glob("*/*/*.json")}
    damage(work / "pages" / "pages.sqlite")

    done = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)

    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert record["evaluated"] == 0 and record["not_started"] > 0
    assert "pages.sqlite" in record["stopped"] and "judgegen cache-pages" in record["stopped"]
    assert {p: p.read_bytes() for p in (work / "results").glob("*/*/*.json")} == before
    summary = json.loads((work / "results" / "alpha" / "summary.json").read_text())
    reasons = [r["reason"] for r in summary["not_counted"]]
    assert reasons and all(
        r.startswith("outdated: its cited pages could not be checked (") for r in reasons
    )
    assert all("changed" not in r for r in reasons)  # not told they changed
