"""`judgegen generate` closes its LLM client as `run` does: its `LLM:` line is printed once the
event loop has ended, counting the rows written as the client closed, and a ledger row that
could not be written after the close stops it (exit 3, naming the ledger)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from tests.generator.scripted_generation import ROOT
from toolkit.llm.client import LLMClient
from toolkit.sandbox.protocol import SandboxLimits

TASK = "rust_2024_edition"
POLICIES = "scripted:tests.generator.scripted_generation"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the rust example task; debug runs time out after half a second, and closing
    a client waits 0.1 s for the calls it cancels."""
    shutil.copytree(ROOT / "tasks" / TASK, tmp_path / "tasks" / TASK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "generator.stages.run.DEFAULT_LIMITS", SandboxLimits(timeout_s=0.5, cpu_s=60)
    )
    monkeypatch.setattr(LLMClient, "close_wait_s", 0.1)
    return tmp_path


def generated_until_timeout(policy: str, ledger: Path) -> Result:
    """`judgegen generate` of the example task, its extractions answered by `policy` only once
    the debug stage's judges have timed out; no repair, no acceptance, the cache on."""
    args = ["generate", TASK, "--provider", f"{POLICIES}:{policy}", "--no-commit"]
    args += ["--no-acceptance", "--max-repairs", "0", "--cache-path", "llm-cache.sqlite"]
    return CliRunner(env={"JUDGEGEN_LEDGER_PATH": str(ledger)}).invoke(main, args)


def test_a_late_ledger_row_that_cannot_be_written_after_the_client_closed_stops_generate(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The draft's row is written; once the client has closed the ledger's folder becomes a
    file, so the rows of the extractions that end as the loop ends cannot be written."""
    folder = work / "usage"
    close = LLMClient.aclose

    async def close_then_lose_the_folder(client: LLMClient) -> None:
        await close(client)
        shutil.rmtree(folder)
        folder.write_text("a file where the ledger's folder belongs\n")

    monkeypatch.setattr(LLMClient, "aclose", close_then_lose_the_folder)
    done = generated_until_timeout("extractions_ignore_a_cancellation", folder / "ledger.jsonl")
    assert done.exit_code == 3, done.output
    assert f"usage ledger {folder / 'ledger.jsonl'} cannot be written" in done.stderr


def test_the_llm_line_of_generate_counts_the_rows_written_as_the_client_closed(
    work: Path,
) -> None:
    """Each extraction a timed-out debug run left out gets its row (`abandoned`) at the close."""
    ledger = work / "usage" / "ledger.jsonl"
    done = generated_until_timeout("extractions_never_answered", ledger)
    rows = ledger.read_text().splitlines()
    abandoned = sum('"error":"abandoned"' in row for row in rows)
    assert abandoned, rows
    line = next(line for line in done.stderr.splitlines() if line.startswith("LLM: "))
    assert line.startswith(f"LLM: {len(rows)} calls, ")
    assert line.endswith(f"; {abandoned} failed")
