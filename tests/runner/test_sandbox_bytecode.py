"""The parent writes the cached bytecode the fork server could not (`toolkit.sandbox.bytecode`):
for the project's modules it loaded, where an import would, once."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def module(root: Path, name: str, text: str = "VALUE = 1\n", age_s: float = 60.0) -> str:
    """`root/pkg/name` holding `text`, last written `age_s` seconds ago."""
    path = root / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    written = time.time_ns() - int(age_s * 1e9)
    os.utime(path, ns=(written, written))
    return str(path)


def imported(root: Path, expression: str = "pkg.mod.VALUE") -> str:
    """What a fresh interpreter (writing no bytecode of its own) prints for `expression` after
    `import pkg.mod` in `root`."""
    loads = subprocess.run(
        [sys.executable, "-B", "-c", f"import pkg.mod; print({expression})"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return loads.stdout.strip()


def test_a_module_without_cached_bytecode_gets_what_an_import_would_use(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py", "VALUE = 1\n")
    assert write_missing_bytecode([source], tmp_path) == [source]
    assert Path(cache_path(source)).parent.name == "__pycache__"
    stat = os.stat(source)  # the same size and time, other code: only the cache says 1
    Path(source).write_text("VALUE = 2\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert imported(tmp_path) == "1"


def test_a_current_cache_is_left_alone(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py")
    write_missing_bytecode([source], tmp_path)
    before = Path(cache_path(source)).stat().st_mtime_ns
    assert write_missing_bytecode([source], tmp_path) == []
    assert Path(cache_path(source)).stat().st_mtime_ns == before


def test_a_cache_older_than_its_source_is_written_again(tmp_path: Path) -> None:
    source = module(tmp_path, "mod.py", age_s=60)
    write_missing_bytecode([source], tmp_path)
    module(tmp_path, "mod.py", "VALUE = 22\n", age_s=30)
    assert write_missing_bytecode([source], tmp_path) == [source]
    assert imported(tmp_path) == "22"


def test_a_source_written_in_the_last_seconds_is_left_to_its_import(tmp_path: Path) -> None:
    """Its cache would be checked by the second of its modification time: an edit of the
    same size later in that second would run the code cached before it."""
    second = int(time.time())
    source = module(tmp_path, "mod.py", "VALUE = 1\n")
    os.utime(source, (second, second))
    write_missing_bytecode([source], tmp_path)
    Path(source).write_text("VALUE = 2\n")
    edited = second * 10**9 + 500_000_000
    os.utime(source, ns=(edited, edited))
    assert imported(tmp_path) == "2"


def test_a_source_edited_while_it_compiles_is_not_cached_as_the_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache may only name the modification time and size of the text it was compiled
    from, whatever happens to the file meanwhile."""
    source = module(tmp_path, "mod.py", "VALUE = 1\n")
    real_compile = builtins.compile

    def compile_then_edit(*args: Any, **kwargs: Any) -> Any:
        code = real_compile(*args, **kwargs)
        module(tmp_path, "mod.py", "VALUE = 22\n", age_s=30)
        return code

    with monkeypatch.context() as patched:
        patched.setattr(builtins, "compile", compile_then_edit)
        write_missing_bytecode([source], tmp_path)
    assert imported(tmp_path) == "22"


def test_the_cache_holds_the_code_a_plain_interpreter_compiles_even_when_written_under_O(
    tmp_path: Path,
) -> None:
    """The cache's name is a plain interpreter's (the fork server's): code compiled with
    `-O` (asserts and `if __debug__:` blocks dropped) must not be written there."""
    source = module(tmp_path, "mod.py", "VALUE = __debug__\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(package_root())
    script = (
        "import sys; from pathlib import Path; "
        "from toolkit.sandbox.bytecode import write_missing_bytecode as write; "
        "print(write([sys.argv[1]], Path(sys.argv[2])))"
    )
    subprocess.run([sys.executable, "-O", "-c", script, source, str(tmp_path)], env=env, check=True)
    assert imported(tmp_path) == "True"


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
    monkeypatch.setattr(bytecode, "_compile", lambda path, cached: compiled.append(path))
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
