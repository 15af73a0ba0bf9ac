"""The review commands close their LLM client as `run` does: their `LLM:` line is printed
once the event loop has ended, counting the rows written as the client closed, and a ledger
row that could not be written after the close stops them (exit 3, naming the ledger)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from tests.fixtures.review.helpers import TASK, workspace
from toolkit.llm.client import LLMClient

IGNORES_A_CANCELLATION = "scripted:tests.fixtures.runner.llm_policy:calls_ignore_a_cancellation"
"""A model whose calls go on past the LLM client's close, and end as the command's event loop
ends (`asyncio.run` cancels them again): their rows are written after the close."""

NEVER_ANSWERS = "scripted:tests.fixtures.runner.llm_policy:never_answers"
"""A model whose calls end only when cancelled: the client's close cancels the calls the timed
out judge left running, and writes their rows (error `abandoned`)."""

COMMANDS = {"tree": [], "validate": ["--pages", "pages"]}
"""Each review command checked, with the flags it needs on the fixture task."""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workspace(tmp_path))
    monkeypatch.setattr(LLMClient, "close_wait_s", 0.1)
    return tmp_path


def judged_until_timeout(command: str, provider: str, ledger: Path) -> Result:
    """`judgegen COMMAND` on the fixture task with `provider`, whose calls outlive the judge
    (timed out after 1 s), the response cache on and the ledger at `ledger`."""
    args = [command, TASK, *COMMANDS[command], "--provider", provider, "--no-sandbox"]
    args += ["--timeout", "1", "--cache-path", "llm-cache.sqlite"]
    return CliRunner(env={"JUDGEGEN_LEDGER_PATH": str(ledger)}).invoke(main, args)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_late_ledger_row_that_cannot_be_written_after_the_client_closed_stops_the_command(
    work: Path, command: str
) -> None:
    """No row is written before the close (the judge's first call is never answered), and the
    ledger's folder is a file: the row of the call that ends as the loop ends is the first to
    fail, after the close."""
    (work / "taken").write_text("a file where the ledger's folder belongs\n")
    ledger = work / "taken" / "ledger.jsonl"
    done = judged_until_timeout(command, IGNORES_A_CANCELLATION, ledger)
    assert done.exit_code == 3, done.output
    assert f"usage ledger {ledger} cannot be written" in done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_llm_line_counts_the_rows_written_as_the_client_closed(
    work: Path, command: str
) -> None:
    """Each timed-out judge leaves one call running, whose row the client's close writes."""
    ledger = work / "usage" / "ledger.jsonl"
    done = judged_until_timeout(command, NEVER_ANSWERS, ledger)
    rows = ledger.read_text().splitlines()
    assert rows and all('"error":"abandoned"' in row for row in rows)
    line = next(line for line in done.stderr.splitlines() if line.startswith("LLM: "))
    assert line.startswith(f"LLM: {len(rows)} calls, ")
    assert line.endswith(f"; {len(rows)} failed")
