"""How the fork server's interpreter starts (`toolkit.sandbox.start`): without `site`, with the
parent's site-packages appended after the standard library, host hooks never run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox.isolation import package_root, scrubbed_environment, site_directories
from toolkit.sandbox.launch import server_command
from toolkit.sandbox.protocol import EvalJob, SandboxLimits
from toolkit.sandbox.start import split_args

LIMITS = SandboxLimits(timeout_s=30)


def test_the_server_command_skips_site_and_names_every_site_directory() -> None:
    command = server_command()
    assert command[:4] == [sys.executable, "-S", "-m", "toolkit.sandbox.start"]
    assert command[-1] == "--"
    assert split_args(command[4:])[0] == site_directories()
    assert site_directories(), "pydantic and the other dependencies live there"


def test_split_args_separates_site_directories_from_the_workers_arguments() -> None:
    args = ["--site", "/a", "--site", "/b", "--", "--fd", "4", "--site", "x"]
    assert split_args(args) == (["/a", "/b"], ["--fd", "4", "--site", "x"])


def test_split_args_refuses_anything_but_site_flags_before_the_separator() -> None:
    with pytest.raises(SystemExit, match="usage"):
        split_args(["--fd", "4", "--", "x"])


async def test_a_sandboxed_judge_runs_without_site_hooks_and_with_garbage_collection() -> None:
    outcome = await run_in_sandbox(job("reports_interpreter"), ScriptedBackend(), limits=LIMITS)
    assert outcome.status == "complete", outcome.errors
    nodes = outcome.summary["eval_breakdown"][0]["verification_tree"]["children"]
    assert {node["id"]: node["score"] for node in nodes} == {"no_site": 1.0, "gc_on": 1.0}


def test_the_fork_server_entry_point_runs_the_worker_with_the_path_completed(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [*server_command(), "--help"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: python -m toolkit.sandbox.worker" in done.stdout


def test_the_worker_environment_keeps_pydantic_plugins_off() -> None:
    assert scrubbed_environment({}, "/scratch")["PYDANTIC_DISABLE_PLUGINS"] == "__all__"


def _env(home: Path) -> dict[str, str]:
    return {**scrubbed_environment({}, str(home)), "PYTHONPATH": str(package_root())}


def job(name: str) -> EvalJob:
    return fixture_job(name, "an answer")


def test_path_entries_a_pth_file_added_inside_site_packages_are_kept(monkeypatch) -> None:
    site_dir = site_directories()[-1]
    nested = next(
        (str(p) for p in sorted(Path(site_dir).iterdir()) if p.is_dir() and "." not in p.name),
        None,
    )
    assert nested is not None
    monkeypatch.setattr(sys, "path", [*sys.path, nested, "/outside/site-packages"])
    found = site_directories()
    assert nested in found and found.index(nested) > found.index(site_dir)
    assert "/outside/site-packages" not in found
