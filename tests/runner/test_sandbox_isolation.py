"""What a sandboxed judge cannot do: read keys or host files, reach the network, start processes.

These run the real sandbox (bubblewrap, the seccomp filters, the audit hook) on real files.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import HOSTILE_JUDGES, fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox import isolation as isolation_module
from toolkit.sandbox.confinement import JOB_GUARDS, WORKER_GUARDS
from toolkit.sandbox.isolation import probe_isolation, runtime_paths, scrubbed_environment
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits

CANARY = "sk-ant-canary-9f3b1c"
LIMITS = SandboxLimits(timeout_s=10, cpu_s=5, memory_mb=512)
ALL_GUARDS = {*WORKER_GUARDS, *JOB_GUARDS}


def job(name: str) -> EvalJob:
    return fixture_job(name, "Paris, see https://a")


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
    env = scrubbed_environment(base, "/scratch")
    assert env["PATH"] == "/usr/bin" and env["LANG"] == "C.UTF-8"
    assert env["HOME"] == "/scratch"
    assert not {"ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "GITHUB_TOKEN", "HTTPS_PROXY"} & set(env)
    assert "DB_PASSWORD" not in env
    assert CANARY not in repr(env)


def test_scrubbed_environment_lets_the_worker_import_the_toolkit() -> None:
    env = scrubbed_environment({}, "/tmp/h")
    import toolkit

    assert str(Path(toolkit.__file__).resolve().parent.parent) in env["PYTHONPATH"].split(":")


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


async def test_judge_state_does_not_leak_into_the_next_evaluation() -> None:
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        tampered = await pool.evaluate(job("tampers"))
        honest = await pool.evaluate(job("fails_check"))
    assert tampered.summary["final_score"] == 1.0
    assert honest.status == "complete" and honest.summary["final_score"] == 0.0


async def test_reading_another_process_proc_entry_is_a_sandbox_violation() -> None:
    outcome = await sandboxed("reads_parent_proc")
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_violation"]
    assert "/proc entry" in outcome.errors[0]["message"]


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


async def test_seccomp_blocks_a_fork_that_bypasses_the_audit_hook() -> None:
    outcome = await sandboxed("forks_raw")
    assert outcome.status == "incomplete"
    assert "Operation not permitted" in outcome.errors[0]["message"]
    assert "escaped" not in outcome.stdout_tail


async def test_a_judge_cannot_write_next_to_itself_or_anywhere_but_its_scratch() -> None:
    outcome = await sandboxed("writes_outside")
    assert outcome.status == "incomplete"
    assert outcome.errors[0]["type"] in {"FileNotFoundError", "OSError", "PermissionError"}
    tree = outcome.summary["eval_breakdown"][0]["verification_tree"]
    assert tree["children"][0]["status"] == "passed"
    assert not (HOSTILE_JUDGES / "pwned.txt").exists()


async def test_bubblewrap_is_found_and_works_here() -> None:
    isolation = await probe_isolation()
    assert isolation.bwrap and isolation.warning is None
    assert isolation.expected_guards == ALL_GUARDS


async def test_every_guard_is_measured_in_effect_for_an_evaluation() -> None:
    outcome = await sandboxed("normal")
    assert outcome.status == "complete", outcome.errors
    assert set(outcome.guards) == ALL_GUARDS


def test_the_allow_list_holds_the_runtime_and_project_packages_not_home_or_cwd() -> None:
    import pydantic

    paths = runtime_paths()
    assert any(Path(pydantic.__file__).is_relative_to(p) for p in paths)
    assert any(Path(os.__file__).is_relative_to(p) for p in paths)
    for hidden in (Path.home(), Path.cwd()):
        assert str(hidden) not in paths


async def test_without_bubblewrap_the_run_says_which_guards_are_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    async with WorkerPool(1, LIMITS, ScriptedBackend()) as pool:
        outcome = await pool.evaluate(job("normal"))
        blocked = await pool.evaluate(job("opens_socket"))
    err = capsys.readouterr().err
    assert "bubblewrap (`bwrap`) not found" in err
    assert "sandbox guards not in effect: filesystem_allowlist" in err
    assert outcome.status == "complete" and "filesystem_allowlist" not in outcome.guards
    assert {"seccomp_job", "rlimits", "audit_hook"} <= set(outcome.guards)
    assert blocked.status == "incomplete" and "sandbox_violation" in kinds(blocked)


async def test_require_sandbox_fails_an_evaluation_missing_a_guard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    async with WorkerPool(1, LIMITS, ScriptedBackend(), require_sandbox=True) as pool:
        outcome = await pool.evaluate(job("normal"))
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_required"]
    assert "pid_namespace" in outcome.errors[0]["message"]


async def test_require_sandbox_runs_no_judge_code_without_the_workers_guards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation_module.shutil, "which", lambda name: None)
    backend = ScriptedBackend()
    async with WorkerPool(1, LIMITS, backend, require_sandbox=True) as pool:
        outcome = await pool.evaluate(job("normal"))
    assert backend.calls == []  # the judge never ran: it would have extracted first
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_required"]
    assert "the judge was not run" in outcome.errors[0]["message"]


# -- the hostile judge with canaries ----------------------------------------------------------


@pytest.fixture
def canaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Canary files in the runner's home, working directory and host /tmp; a canary key."""
    tag = uuid.uuid4().hex
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"{CANARY}-env-{tag}")
    files = {
        "home": Path.home() / f".judgegen-canary-{tag}",
        "cwd": workdir / ".env",
        "tmp": Path("/tmp") / f"judgegen-canary-{tag}",
    }
    for name, path in files.items():
        path.write_text(f"{CANARY}-{name}-{tag}\n")
    try:
        yield files
    finally:
        for path in files.values():
            path.unlink(missing_ok=True)


async def test_no_escape_probe_reaches_a_canary(canaries: dict[str, Path]) -> None:
    answer = json.dumps({name: str(path) for name, path in canaries.items()})
    escapes = fixture_job("escapes", answer)
    seen: list[str] = []

    def verify(request: object) -> bool:
        seen.append(str(request))
        return True

    outcome = await run_in_sandbox(escapes, ScriptedBackend(verify=verify), limits=LIMITS)
    found = outcome.summary["eval_breakdown"][0]["info"][0]["probes"]
    escaped = {name: text for name, text in found.items() if CANARY in text}
    syscalls = {name: text for name, text in found.items() if text.startswith("rc=")}
    print(f"escape probes tried: {len(found)}, contained: {len(found) - len(escaped)}")
    assert len(found) == 18
    assert escaped == {}
    assert all(not text.startswith("rc=0") for text in syscalls.values()), syscalls
    assert found["umount2_pythonapi_then_home"].startswith("refused")
    assert "sandbox_violation" in kinds(outcome)
    assert CANARY not in outcome.model_dump_json() and CANARY not in " ".join(seen)
