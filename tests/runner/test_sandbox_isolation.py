"""What a sandboxed judge cannot do: read keys, reach the network, start processes."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox import isolation as isolation_module
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox.isolation import Isolation, probe_isolation, scrubbed_environment
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits

JUDGES = Path(__file__).resolve().parent.parent / "fixtures" / "hostile_judges"
CANARY = "sk-ant-canary-9f3b1c"
LIMITS = SandboxLimits(timeout_s=3, cpu_s=3, memory_mb=512)


def namespaces_work() -> bool:
    """Whether this OS lets an unprivileged process create user, network and mount namespaces."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    command = [unshare, "-r", "-n", "--mount", "--", sys.executable, "-c", "pass"]
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


NEEDS_NAMESPACES = pytest.mark.skipif(
    not namespaces_work(), reason="this OS refuses unprivileged user namespaces (unshare -rn)"
)


def job(name: str) -> EvalJob:
    return EvalJob(judge_path=str(JUDGES / f"{name}.py"), answer="Paris, see https://a")


async def sandboxed(name: str, limits: SandboxLimits = LIMITS) -> EvalOutcome:
    return await run_in_sandbox(job(name), ScriptedBackend(), limits=limits)


def kinds(outcome: EvalOutcome) -> list[str]:
    return [error["kind"] for error in outcome.errors]


def test_scrubbed_environment_drops_keys_tokens_and_proxies() -> None:
    base = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": CANARY,
        "OPENAI_BASE_URL": "http://x",
        "GITHUB_TOKEN": "t",
        "HTTPS_PROXY": "http://proxy",
        "DB_PASSWORD": "p",
        "HOME": "/root",
    }
    env = scrubbed_environment(base, "/tmp/worker-home")
    assert env["PATH"] == "/usr/bin" and env["LANG"] == "C.UTF-8"
    assert env["HOME"] == "/tmp/worker-home"
    assert not {"ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "GITHUB_TOKEN", "HTTPS_PROXY"} & set(env)
    assert "DB_PASSWORD" not in env
    assert CANARY not in repr(env)


def test_scrubbed_environment_lets_the_worker_import_the_toolkit() -> None:
    env = scrubbed_environment({}, "/tmp/h")
    import toolkit

    assert str(Path(toolkit.__file__).resolve().parent.parent) in env["PYTHONPATH"].split(":")


@NEEDS_NAMESPACES
async def test_probe_isolation_finds_unshare_network_and_pid_namespaces() -> None:
    isolation = await probe_isolation()
    assert isolation.warning is None
    assert isolation.network_isolated and isolation.pid_isolated
    assert "-n" in isolation.prefix


async def test_probe_isolation_keeps_network_when_limits_allow_it() -> None:
    isolation = await probe_isolation(network=True)
    assert "-n" not in isolation.prefix and not isolation.network_isolated


async def test_probe_isolation_warns_when_unshare_is_missing(monkeypatch) -> None:
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    isolation = await probe_isolation()
    assert isolation.prefix == () and "unshare" in (isolation.warning or "")


async def test_api_key_is_absent_in_the_judge_even_when_the_parent_has_it(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    outcome = await sandboxed("reads_secret")
    assert outcome.status == "incomplete"
    assert outcome.errors[0]["kind"] == "judge_exception"
    assert "ANTHROPIC_API_KEY" in outcome.errors[0]["message"]
    assert CANARY not in outcome.model_dump_json()


async def test_judge_cannot_see_the_parents_process_environment(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    outcome = await sandboxed("reads_secret")
    loot = outcome.summary["eval_breakdown"][0]["info"][0]["loot"]
    assert loot["proc"], "the judge should see at least its own /proc entry"
    assert not any(CANARY in environ for environ in loot["proc"])


async def test_opening_a_socket_is_an_incomplete_outcome_with_a_sandbox_error() -> None:
    outcome = await sandboxed("opens_socket")
    assert outcome.status == "incomplete"
    assert kinds(outcome) == ["sandbox_violation"]
    assert "network access is not allowed" in outcome.errors[0]["message"]


async def test_binding_a_socket_is_refused_by_default() -> None:
    outcome = await sandboxed("binds_loopback")
    assert outcome.status == "incomplete" and "sandbox_violation" in kinds(outcome)


async def test_network_true_lets_a_judge_open_a_socket() -> None:
    outcome = await sandboxed("binds_loopback", LIMITS.model_copy(update={"network": True}))
    assert outcome.status == "complete", outcome.errors


async def test_starting_a_process_is_an_incomplete_outcome_with_a_sandbox_error() -> None:
    outcome = await sandboxed("spawns_process")
    assert outcome.status == "incomplete"
    assert kinds(outcome) == ["sandbox_violation"]
    assert "starting a process is not allowed" in outcome.errors[0]["message"]


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64", reason="seccomp filter is x86_64"
)
async def test_seccomp_blocks_a_fork_that_bypasses_the_audit_hook() -> None:
    outcome = await sandboxed("forks_raw")
    assert outcome.status == "incomplete"
    assert "Operation not permitted" in outcome.errors[0]["message"]
    assert "escaped" not in outcome.stdout_tail


async def test_judge_state_does_not_leak_into_the_next_evaluation() -> None:
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        tampered = await pool.evaluate(job("tampers"))
        honest = await pool.evaluate(job("fails_check"))
    assert tampered.summary["final_score"] == 1.0
    assert honest.status == "complete" and honest.summary["final_score"] == 0.0


async def test_without_unshare_a_warning_is_printed_and_guards_still_hold(
    monkeypatch, capsys
) -> None:
    async def no_isolation(network: bool = False) -> Isolation:
        return Isolation(warning="unshare -rn failed (test)")

    monkeypatch.setattr(pool_module, "probe_isolation", no_isolation)
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        blocked = await pool.evaluate(job("opens_socket"))
        normal = await pool.evaluate(job("fails_check"))
    assert "judgegen: warning: unshare -rn failed (test)" in capsys.readouterr().err
    assert blocked.status == "incomplete" and kinds(blocked) == ["sandbox_violation"]
    assert normal.status == "complete"


@NEEDS_NAMESPACES
async def test_judge_can_write_its_temp_dir_but_not_the_repo() -> None:
    outcome = await sandboxed("writes_outside")
    assert outcome.status == "incomplete"
    assert "Read-only file system" in outcome.errors[0]["message"]
    tree = outcome.summary["eval_breakdown"][0]["verification_tree"]
    assert tree["children"][0]["status"] == "passed"
    assert not (JUDGES / "pwned.txt").exists()


async def test_reading_another_process_proc_entry_is_a_sandbox_violation() -> None:
    outcome = await sandboxed("reads_parent_proc")
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_violation"]
    assert "/proc entry" in outcome.errors[0]["message"]


@NEEDS_NAMESPACES
async def test_without_a_pid_namespace_the_fallback_keeps_network_and_fs_isolation(
    monkeypatch,
) -> None:
    real = isolation_module._command_works

    async def no_pid_namespace(prefix: list[str]) -> tuple[bool, str]:
        if "--pid" in prefix:
            return False, "unshare: cannot mount proc (test)"
        return await real(prefix)

    monkeypatch.setattr(isolation_module, "_command_works", no_pid_namespace)
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        written = await pool.evaluate(job("writes_outside"))
        proc = await pool.evaluate(job("reads_parent_proc"))
    assert pool.isolation.network_isolated and not pool.isolation.pid_isolated
    assert "no PID namespace" in (pool.isolation.warning or "")
    assert "Read-only file system" in written.errors[0]["message"]
    assert not (JUDGES / "pwned.txt").exists()
    assert proc.status == "incomplete" and kinds(proc) == ["sandbox_violation"]


@NEEDS_NAMESPACES
async def test_scratch_space_is_bounded() -> None:
    outcome = await sandboxed("fills_disk", LIMITS.model_copy(update={"max_file_mb": 1}))
    assert outcome.status == "incomplete"
    assert "No space left on device" in outcome.errors[0]["message"]


async def test_files_a_judge_leaves_are_gone_before_the_next_evaluation() -> None:
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        first = await pool.evaluate(job("leaves_marker"))
        second = await pool.evaluate(job("leaves_marker"))
    assert first.summary["final_score"] == 1.0
    assert second.status == "complete" and second.summary["final_score"] == 1.0


@NEEDS_NAMESPACES
def test_credential_files_under_home_are_hidden_in_the_worker_namespace(tmp_path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_test").write_text(CANARY)
    (home / ".netrc").write_text(f"machine x password {CANARY}")
    (home / "notes.txt").write_text("kept")
    script = (
        "import os, sys\n"
        "from toolkit.sandbox.confinement import hide_credentials\n"
        "home = sys.argv[1]\n"
        "print(sorted(os.path.basename(p) for p in hide_credentials(home)))\n"
        "print(os.listdir(os.path.join(home, '.ssh')))\n"
        "print(repr(open(os.path.join(home, '.netrc')).read()))\n"
        "print(open(os.path.join(home, 'notes.txt')).read())\n"
    )
    command = ["unshare", "-r", "--mount", "--", sys.executable, "-c", script, str(home)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["['.netrc', '.ssh']", "[]", "''", "kept"]
    assert (home / ".ssh" / "id_test").read_text() == CANARY
