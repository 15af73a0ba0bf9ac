"""The gateway's close on a cluster tells what it found wrong with the ledger as a local
command's close does: a late row it could not write stops the run (exit 3, naming the ledger
file and the fix), and calls still running after its wait, whose rows are lost with its actor,
are counted and reported, not left out of a ledger that looks complete.

The judge starts a verification and returns without it (`LEAVES_A_CALL_RUNNING`); the model
never answers it, so its row is only written when the gateway's close cancels the call.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import copy_fixtures, result_files
from tests.runner.test_abandoned_calls import LEAVES_A_CALL_RUNNING, abandoned_notes
from tests.scale.fake_cluster import FakeSession, fake_sessions
from tests.scale.local_cluster import LocalCluster
from tests.scale.workspace import judgegen
from toolkit.llm.client import LLMClient
from toolkit.scale import run as cluster_run

pytestmark = pytest.mark.timeout(300)

NEVER_ANSWERED = "scripted:tests.fixtures.runner.llm_policy:verifications_never_answered"
IGNORES_A_CANCELLATION = (
    "scripted:tests.fixtures.runner.llm_policy:verifications_ignore_a_cancellation"
)


def run_args(results: str, provider: str, *extra: str) -> list[str]:
    """`judgegen run` of louvre_hours's answers, judged by `LEAVES_A_CALL_RUNNING`."""
    args = ["run", "--answers", "answers", "--judges", "judges", "--results", results]
    args += ["--include-unreviewed", "--task", "louvre_hours", "--provider", provider]
    return [*args, "--no-sandbox", "--timeout", "1", *extra]


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in done.stderr.splitlines() if line.startswith("error:"))


def test_a_late_ledger_row_the_gateway_cannot_write_stops_the_run_as_locally(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """No row is written before the close: the ledger's folder is a file, so the first (the
    cancelled call's `abandoned` row) fails there."""
    work = copy_fixtures(tmp_path)
    (work / "judges" / "louvre_hours.py").write_text(LEAVES_A_CALL_RUNNING)
    (work / "taken").write_text("a file where the ledger's folder belongs\n")
    env = {"JUDGEGEN_CACHE_PATH": "llm-cache.sqlite", "JUDGEGEN_LEDGER_PATH": "taken/ledger.jsonl"}
    local = judgegen(work, *run_args("results-local", NEVER_ANSWERED), env=env)
    ray = judgegen(
        work, *run_args("results-ray", NEVER_ANSWERED, "--ray", cluster.address), env=env
    )
    assert (ray.returncode, local.returncode) == (3, 3), ray.stderr
    assert error_line(ray) == error_line(local)
    assert "usage ledger taken/ledger.jsonl cannot be written" in error_line(ray)
    assert "Fix: " in error_line(ray) and "JUDGEGEN_LEDGER_PATH" in error_line(ray)


def test_calls_still_running_after_the_gateways_close_wait_are_reported_as_not_in_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On in-process actors (`fake_cluster`): the model ignores the close's cancellation, so
    the calls' rows would be lost with the gateway's actor."""
    work = copy_fixtures(tmp_path)
    (work / "judges" / "louvre_hours.py").write_text(LEAVES_A_CALL_RUNNING)
    monkeypatch.chdir(work)  # the gateway runs in the driver's directory
    monkeypatch.setattr(LLMClient, "close_wait_s", 0.1)
    monkeypatch.setattr(cluster_run, "cluster_session", fake_sessions(FakeSession(str(work))))
    args = run_args("results", IGNORES_A_CANCELLATION, "--json", "--ray", "127.0.0.1:1")
    env = {"JUDGEGEN_CACHE_PATH": "llm-cache.sqlite", "JUDGEGEN_LEDGER_PATH": "ledger.jsonl"}
    done = CliRunner(env=env).invoke(main, args)
    assert done.stdout, done.output
    llm, usage = json.loads(done.stdout)["llm"], json.loads(done.stdout)["usage"]
    unrecorded = llm["unrecorded_calls"]
    assert unrecorded > 0 and llm["calls"] + unrecorded == usage["llm_calls"]
    assert f"; {unrecorded} more with no ledger row (cost unknown)" in done.stderr
    warning = f"warning: {unrecorded} LLM call(s) were still running when the LLM client closed"
    assert warning in done.stderr
    assert "their cost is unknown to the ledger" in done.stderr
    notes = [n for r in result_files(work / "results").values() for n in abandoned_notes(r)]
    assert notes and all("may get no row" in note for note in notes)  # as it came to pass
