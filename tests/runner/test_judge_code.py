"""The parent compiles a sandboxed judge once per run and sends the code to every job."""

from __future__ import annotations

import base64
import marshal
from pathlib import Path

from tests.fixtures.runner.helpers import HOSTILE_JUDGES, fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.runner.loader import (
    code_from_text,
    code_to_text,
    compile_judge,
    load_judge_source,
)
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalJob, SandboxLimits
from toolkit.util.hashing import sha256_bytes, sha256_text

LIMITS = SandboxLimits(timeout_s=30)


def job(name: str, answer_name: str = "answer_1") -> EvalJob:
    return fixture_job(name, "Paris", answer_name=answer_name).bound()


def test_code_sent_as_text_loads_the_same_judge() -> None:
    path = HOSTILE_JUDGES / "normal.py"
    source = path.read_bytes()
    digest = sha256_bytes(source)
    code = code_from_text(code_to_text(compile_judge(source.decode(), path), digest), digest)
    judge = load_judge_source(source, path, code)
    assert judge.style == "native" and judge.task_id == "normal"
    assert judge.module.evaluate.__code__.co_filename == str(path)


def test_code_compiled_from_another_source_is_ignored() -> None:
    code = compile_judge("TASK_ID = 'x'\n", "x.py")
    text = code_to_text(code, sha256_text("TASK_ID = 'x'\n"))
    assert code_from_text(text, sha256_text("TASK_ID = 'y'\n")) is None
    assert code_from_text(None, sha256_text("TASK_ID = 'x'\n")) is None


def test_code_from_another_bytecode_version_is_ignored() -> None:
    code = compile_judge("TASK_ID = 'x'\n", "x.py")
    digest = sha256_text("TASK_ID = 'x'\n")
    foreign = b"\x00\x00\r\n" + digest.encode() + b"\n" + marshal.dumps(code)
    assert code_from_text(base64.b64encode(foreign).decode(), digest) is None


async def test_the_parent_compiles_each_judge_once_for_all_its_jobs(monkeypatch) -> None:
    compiled: list[str] = []

    def counting(text: str, path: str | Path):
        compiled.append(str(path))
        return compile_judge(text, path)

    monkeypatch.setattr(pool_module, "compile_judge", counting)
    backend = ScriptedBackend(extract=lambda r: {"city": "Paris"}, verify=lambda r: True)
    async with WorkerPool(None, LIMITS, backend) as pool:
        outcomes = [await pool.evaluate(job("normal", f"answer_{i}")) for i in range(3)]
    assert [o.status for o in outcomes] == ["complete"] * 3
    assert compiled == [str(HOSTILE_JUDGES / "normal.py")]


async def test_a_job_runs_the_code_the_parent_sent(monkeypatch) -> None:
    def marked(text: str, path: str | Path):
        return compile_judge(text.replace('id="named"', 'id="from_the_parent"'), path)

    monkeypatch.setattr(pool_module, "compile_judge", marked)
    backend = ScriptedBackend(extract=lambda r: {"city": "Paris"}, verify=lambda r: True)
    outcome = await run_in_sandbox(job("normal"), backend, limits=LIMITS)
    tree = outcome.summary["eval_breakdown"][0]["verification_tree"]
    ids = {child["id"] for group in tree["children"] for child in group.get("children", [])}
    assert "from_the_parent" in ids
