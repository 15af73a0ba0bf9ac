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


def test_the_same_source_at_two_paths_is_compiled_for_each_path(tmp_path: Path) -> None:
    source = (HOSTILE_JUDGES / "normal.py").read_text(encoding="utf-8")
    pool = WorkerPool(None, LIMITS, ScriptedBackend())
    names = []
    for folder in ("task_a", "task_b"):
        path = tmp_path / folder / "judge.py"
        bound = EvalJob(judge_path=str(path), judge_source=source, answer="Paris").bound()
        code = code_from_text(pool._job_start(bound).judge_code, bound.judge_sha256)
        assert code is not None
        names.append(code.co_filename)  # what its tracebacks will name
    assert names == [str(tmp_path / "task_a" / "judge.py"), str(tmp_path / "task_b" / "judge.py")]
