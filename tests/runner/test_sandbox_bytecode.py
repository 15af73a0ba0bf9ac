"""The parent writes the cached bytecode the fork server could not (`toolkit.sandbox.bytecode`):
for the project's modules it loaded, where an import would, once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox import bytecode, pool
from toolkit.sandbox.bytecode import cache_path, write_missing_bytecode
from toolkit.sandbox.isolation import package_root


@pytest.fixture(autouse=True)
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """As an interpreter started without -B or PYTHONDONTWRITEBYTECODE (CI may set it)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def module(root: Path, name: str, text: str = "VALUE = 1\n") -> str:
    path = root / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_module_without_cached_bytecode_gets_what_an_import_would_use(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py", "VALUE = 1\n")
    assert write_missing_bytecode([source], tmp_path) == [source]
    assert Path(cache_path(source)).parent.name == "__pycache__"
    stat = os.stat(source)  # the same size and time, other code: only the cache says 1
    Path(source).write_text("VALUE = 2\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    loads = subprocess.run(
        [sys.executable, "-B", "-c", "import pkg.mod; print(pkg.mod.VALUE)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert loads.stdout.strip() == "1"


def test_a_current_cache_is_left_alone(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py")
    write_missing_bytecode([source], tmp_path)
    before = Path(cache_path(source)).stat().st_mtime_ns
    assert write_missing_bytecode([source], tmp_path) == []
    assert Path(cache_path(source)).stat().st_mtime_ns == before


def test_a_cache_older_than_its_source_is_written_again(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py")
    write_missing_bytecode([source], tmp_path)
    Path(source).write_text("VALUE = 22\n")
    assert write_missing_bytecode([source], tmp_path) == [source]


def test_files_outside_the_project_and_other_files_are_not_touched(tmp_path: Path) -> None:
    inside, outside = tmp_path / "project", tmp_path / "elsewhere"
    foreign = module(outside, "mod.py")
    folder = str(Path(module(inside, "mod.py")).parent)
    assert write_missing_bytecode([foreign, folder], inside) == []
    assert not Path(cache_path(foreign)).exists()


def test_a_module_that_does_not_compile_is_left_to_its_import(tmp_path: Path) -> None:
    broken = module(tmp_path, "broken.py", "def (:\n")
    fine = module(tmp_path, "fine.py")
    assert write_missing_bytecode([broken, fine], tmp_path) == [fine]
    assert not Path(cache_path(broken)).exists()


def test_a_folder_this_user_may_not_write_is_not_compiled_in_vain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Simulated: this suite may run as root, whom no folder's mode stops.)"""
    source = module(tmp_path, "mod.py")
    compiled: list[str] = []
    monkeypatch.setattr(bytecode.os, "access", lambda path, mode: False)
    monkeypatch.setattr(bytecode.py_compile, "compile", lambda path, **_: compiled.append(path))
    assert write_missing_bytecode([source], tmp_path) == []
    assert compiled == []


def test_nothing_is_written_by_an_interpreter_told_to_write_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    source = module(tmp_path, "mod.py")
    assert write_missing_bytecode([source], tmp_path) == []
    assert not Path(cache_path(source)).exists()


async def test_a_pool_offers_the_fork_server_s_loaded_modules_once_it_has_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offered: list[tuple[list[str], Path]] = []
    monkeypatch.setattr(
        pool, "write_missing_bytecode", lambda files, root: offered.append((list(files), root))
    )
    outcome = await run_in_sandbox(
        fixture_job("reports_interpreter", "an answer"), ScriptedBackend()
    )
    assert outcome.status == "complete", outcome.errors
    [(files, root)] = offered
    assert root == package_root()
    assert str(package_root() / "toolkit" / "sandbox" / "job.py") in files
