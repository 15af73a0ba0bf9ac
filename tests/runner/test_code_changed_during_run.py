"""A result never names code other than the code that judged: judgegen hashes its code once
per process (`toolkit_code`), so a toolkit file or judge template changed after that — and
loaded by a fork server started later, or first loaded mid-run — stops the run (exit 3) with
the evaluation incomplete, instead of a result recorded under the hash of the code before."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import DictPages, copy_fixtures, options, stored
from tests.fixtures.runner.scripted import extract, verify
from tests.runner.test_sandbox_channel import LIMITS, Pages, job
from tests.runner.test_sandbox_channel import extract as extract_city
from toolkit.backends import ScriptedBackend, Verdict, VerifyRequest
from toolkit.runner import fingerprint
from toolkit.runner.inputs import discover_answers
from toolkit.runner.metering import Meter, current_meter
from toolkit.runner.scheduler import run_evaluations
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox.pool import WorkerPool
from toolkit.util.code_files import CLOCK_SLACK_NS, stamp


@pytest.fixture
def toolkit_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the toolkit's source that `toolkit_code` hashes instead of the real one."""
    import toolkit

    copy = tmp_path / "code" / "toolkit"
    shutil.copytree(Path(toolkit.__file__).parent, copy, ignore=shutil.ignore_patterns("*.pyc"))
    time.sleep(2 * CLOCK_SLACK_NS / 1e9)  # its files' writing is well before anything hashes
    monkeypatch.setattr(toolkit, "__file__", str(copy / "__init__.py"))
    monkeypatch.setattr(toolkit, "IMPORTING_SINCE_NS", time.time_ns())  # as if loaded from it
    fingerprint.toolkit_code.cache_clear()
    yield copy
    fingerprint.toolkit_code.cache_clear()


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


def test_a_toolkit_file_edited_after_the_hash_is_a_change(toolkit_copy: Path) -> None:
    code = fingerprint.toolkit_code()
    assert code.changed() is None
    _edit(toolkit_copy / "tree.py")
    changed = code.changed()
    assert changed is not None
    assert changed.startswith(f"{toolkit_copy / 'tree.py'} changed during the run")
    assert changed.endswith("rerun")


def test_a_toolkit_file_this_process_loaded_then_edited_before_the_hash_is_a_change(
    toolkit_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process runs the module as it loaded it, the hash covers it as edited: no file on
    disk, and no fork server's stamp of it, can ever pass for the code hashed."""
    import toolkit

    tree = toolkit_copy / "tree.py"
    monkeypatch.setattr(toolkit, "IMPORTING_SINCE_NS", time.time_ns())
    loaded = types.ModuleType("loaded_copy_of_tree")
    loaded.__file__ = str(tree)
    monkeypatch.setitem(sys.modules, loaded.__name__, loaded)
    _edit(tree)
    code = fingerprint.toolkit_code()
    assert f"{tree} changed" in (code.changed() or "")
    assert f"{tree} changed" in (code.changed({str(tree): stamp(str(tree))}) or "")


def test_a_judge_template_edited_after_the_hash_is_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Templates load on a judge's first request, possibly long after the run hashed them."""
    import prompts
    import toolkit

    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPTS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    time.sleep(2 * CLOCK_SLACK_NS / 1e9)
    monkeypatch.setattr(prompts, "PROMPTS_DIR", copy)
    monkeypatch.setattr(toolkit, "IMPORTING_SINCE_NS", time.time_ns())  # as if read from it
    fingerprint.toolkit_code.cache_clear()
    try:
        code = fingerprint.toolkit_code()
        template = copy / "toolkit" / "verify_page.j2"
        assert code.changed() is None
        _edit(template)
        assert f"{template} changed" in (code.changed() or "")
    finally:
        fingerprint.toolkit_code.cache_clear()


async def test_a_fork_server_that_loaded_a_toolkit_file_other_than_the_one_hashed_judges_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The toolkit changed between the hash and the fork server's start: its stamps are the
    file's now, not the hashed file's. No job runs; the evaluation is an infrastructure
    failure the run stops on, and so is every later one."""
    job_code = str(Path(pool_module.__file__).with_name("job.py"))
    real = fingerprint.toolkit_code()
    size, mtime, inode = stamp(job_code) or (0, 0, 0)
    before_the_edit = {**real.files, job_code: (size + 1, mtime - 1, inode)}
    hashed = dataclasses.replace(real, files=before_the_edit)
    monkeypatch.setattr(pool_module, "toolkit_code", lambda: hashed, raising=False)
    meter = Meter()
    token = current_meter.set(meter)
    try:
        async with WorkerPool(None, LIMITS, ScriptedBackend(extract=extract_city), Pages()) as pool:
            first = await pool.evaluate(job("two_sources"))
            second = await pool.evaluate(job("two_sources", "answer_2"))
    finally:
        current_meter.reset(token)
    for outcome in (first, second):
        assert outcome.status == "incomplete"
        assert [(e["type"], e["kind"]) for e in outcome.errors] == [("CodeChanged", "code_changed")]
        assert outcome.errors[0]["message"].startswith(f"{job_code} changed during the run")
        assert outcome.summary is None
    assert [e["kind"] for e in meter.infra] == ["code_changed", "code_changed"]


def test_a_toolkit_file_edited_during_a_run_stops_it_with_exit_3_and_its_result_incomplete(
    toolkit_copy: Path, tmp_path: Path
) -> None:
    """The edit lands while the first evaluation runs: the code that judged it may be either
    (a module loaded mid-run), so its result keeps nothing it judged, and no evaluation
    starts after it."""
    work = copy_fixtures(tmp_path / "work")
    edited = toolkit_copy / "checks" / "__init__.py"

    def edit_then_verify(request: VerifyRequest) -> Verdict:
        if "an edit" not in edited.read_text():
            _edit(edited)
        return verify(request)

    inputs = [i for i in discover_answers(work / "answers") if i.task_id == "louvre_hours"]
    backend = ScriptedBackend(extract=extract, verify=edit_then_verify)
    report = asyncio.run(
        run_evaluations(
            inputs,
            backend=backend,
            options=options(work, jobs=1),
            isolation="in_process",
            pages=DictPages(),
        )
    )
    assert report.exit_code == 3
    assert report.stopped is not None and f"{edited} changed during the run" in report.stopped
    (head,) = report.results
    result = stored(work, head)
    assert result.status == "incomplete" and result.final_score is None
    assert [e["kind"] for e in result.errors] == ["code_changed"]
    assert result.eval_breakdown == []
    assert report.not_started == len(inputs) - 1
