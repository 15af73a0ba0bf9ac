"""A warm server whose code is no longer what a fresh process would load never serves, for
code that is not a module's own file too: a native library it mapped (libseccomp, libsqlite3,
one preloaded) that was upgraded since, and an optional import that found nothing when it
started but would now find a module (a binding installed since)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from generator.cli.warm.code_snapshot import CodeSnapshot
from tests.runner.test_warm_server import REPO, Warm, verdicts
from tests.runner.test_warm_server import warm as warm  # the fixture
from toolkit.util.code_files import LINKER_CACHE, REPLACED, mapped_libraries, stamp


def _a_mapped_library(named: str) -> str:
    """The file of a shared object this process has mapped, whose name starts `named`."""
    import zlib  # noqa: F401  (maps libz)

    found = [path for path in mapped_libraries() if os.path.basename(path).startswith(named)]
    assert found, f"no {named}* is mapped into this process"
    return found[0]


def _upgrade(library: Path) -> None:
    """Replace `library` as a package manager upgrades one: a new file renamed over it."""
    fresh = library.with_name(library.name + ".new")
    shutil.copyfile(library, fresh)
    with fresh.open("ab") as extra:
        extra.write(b"\0" * 16)  # the new release: other bytes
    os.replace(fresh, library)


def test_a_served_run_is_refused_once_a_library_the_server_mapped_is_upgraded(
    warm: Warm, tmp_path: Path
) -> None:
    """The library is preloaded into every process (LD_PRELOAD, part of the key), so the
    server maps it as it maps libseccomp or libsqlite3."""
    library = tmp_path / "lib" / "libpreloaded.so.1"
    library.parent.mkdir()
    shutil.copyfile(_a_mapped_library("libz.so"), library)
    warm.env["LD_PRELOAD"] = str(library)
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    _upgrade(library)
    refused = warm(*warm.run_args("--no-sandbox"))
    assert refused.returncode == 0, refused.stderr
    assert warm.served() == 0
    assert f"stale: {library} changed" in warm.log()


def test_a_served_run_is_refused_once_an_import_that_found_nothing_would_find_a_module(
    warm: Warm, tmp_path: Path
) -> None:
    """`copy` looks for Jython's `org.python.core` and does without it: a package `org`
    appearing on the import path is what a fresh process would now import, as a seccomp
    binding installed after the server started would be."""
    front = tmp_path / "front"
    front.mkdir()
    warm.env["PYTHONPATH"] = os.pathsep.join([str(front), str(REPO)])
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    assert "org" in warm.log().split("watched in case they appear: ")[1].split(")")[0]
    (front / "org").mkdir()
    (front / "org" / "__init__.py").write_text("")  # `org.python.core` is still not found
    refused = warm(*warm.run_args("--no-sandbox"))
    assert refused.returncode == 0, refused.stderr
    assert warm.served() == 0
    assert f"stale: org, which an import looked for and did not find, is now in {front}" in (
        warm.log()
    )


def test_a_served_run_is_refused_once_a_library_appears_in_a_folder_of_the_library_path(
    warm: Warm, tmp_path: Path
) -> None:
    """The linker looks in LD_LIBRARY_PATH's folders before its cache: a library installed
    in one after the server started (libseccomp for a binding that found none, a newer
    libsqlite3 or, here, libz in front of the system's) is what a fresh process would load."""
    libraries = tmp_path / "libraries"
    libraries.mkdir()
    warm.env["LD_LIBRARY_PATH"] = str(libraries)
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    shutil.copyfile(_a_mapped_library("libz.so"), libraries / "libz.so.1")
    refused = warm(*warm.run_args("--no-sandbox"))
    assert refused.returncode == 0, refused.stderr
    assert warm.served() == 0
    assert f"stale: {libraries} changed" in warm.log()


def test_a_client_a_stale_server_refuses_says_so_on_its_stderr_and_runs_the_command_itself(
    warm: Warm, tmp_path: Path
) -> None:
    libraries = tmp_path / "libraries"
    libraries.mkdir()
    warm.env["LD_LIBRARY_PATH"] = str(libraries)
    cold = warm(*warm.run_args("--no-sandbox"))
    warm.wait_for_server()
    (libraries / "libwarm_probe.so.1").write_bytes(b"\x7fELF")
    refused = warm(*warm.run_args("--no-sandbox"))
    assert refused.returncode == cold.returncode == 0, refused.stderr
    note = f"judgegen: the warm server was not used (stale: {libraries} changed); the command runs here"
    assert refused.stderr.splitlines()[0] == note
    assert verdicts(refused.stdout) == verdicts(cold.stdout)


@pytest.mark.parametrize("entry", ["absolute", "relative"])
def test_a_snapshot_sees_a_library_appear_in_a_folder_of_the_library_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """A relative entry is the folder it named where the snapshot was taken (the server then
    leaves that folder)."""
    libraries = tmp_path / "libraries"
    libraries.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libraries) if entry == "absolute" else "libraries")
    snapshot = CodeSnapshot.take()
    monkeypatch.chdir("/")
    assert snapshot.changed() is None
    (libraries / "libwarm_probe.so.1").write_bytes(b"\x7fELF")
    assert snapshot.changed() == f"{libraries} changed"


def test_a_snapshot_sees_a_module_an_import_did_not_find_appear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError):
        import warm_probe_optional  # noqa: F401
    snapshot = CodeSnapshot.take({"warm_probe_optional"})
    assert snapshot.changed() is None
    (tmp_path / "warm_probe_optional.py").write_text("")
    assert snapshot.changed() == (
        f"warm_probe_optional, which an import looked for and did not find, is now in {tmp_path}"
    )


def test_a_snapshot_sees_a_binding_that_failed_to_load_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found but failing, as pyseccomp without libseccomp raises RuntimeError: not loaded,
    yet a fix to it would let a fresh process load it."""
    binding = tmp_path / "warm_probe_binding.py"
    binding.write_text("raise RuntimeError('Unable to find its library')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError):
        import warm_probe_binding  # noqa: F401
    snapshot = CodeSnapshot.take({"warm_probe_binding"})
    assert snapshot.changed() is None
    binding.write_text("LOADED = True  # the fixed release\n")
    assert snapshot.changed() == f"{binding} changed"


def test_a_snapshot_sees_a_site_customization_appear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`site` looks for sitecustomize before any import can be watched: it is watched anyway."""
    monkeypatch.syspath_prepend(str(tmp_path))
    snapshot = CodeSnapshot.take()
    (tmp_path / "sitecustomize.py").write_text("")
    changed = snapshot.changed()
    assert changed is not None and changed.startswith("sitecustomize")


def test_a_snapshot_sees_a_new_pth_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `.pth` file can add an importer (an editable install's) without changing the path."""
    monkeypatch.syspath_prepend(str(tmp_path))
    snapshot = CodeSnapshot.take()
    (tmp_path / "__editable__.probe.pth").write_text("import sys\n")
    assert snapshot.changed() == (
        f"the .pth files on the import path changed: {[str(tmp_path / '__editable__.probe.pth')]}"
    )


def test_mapped_libraries_are_the_files_mapped_executable(tmp_path: Path) -> None:
    library, gone = tmp_path / "libkept.so", tmp_path / "libgone.so.1"
    library.write_bytes(b"\x7fELF")
    maps = tmp_path / "maps"
    maps.write_text(
        f"7f00-7f01 r--p 00000000 fe:00 11 {library}\n"
        f"7f01-7f02 r-xp 00001000 fe:00 11 {library}\n"
        f"7f02-7f03 r-xp 00000000 fe:00 12 {gone} (deleted)\n"
        "7f03-7f04 r-xp 00000000 fe:00 13 /tmp/ffiAbC123 (deleted)\n"
        "7f04-7f05 r-xp 00000000 00:01 14 /memfd:jit (deleted)\n"
        "7f05-7f06 rwxp 00000000 00:00 0 \n"
        "7f06-7f07 r-xp 00000000 00:00 0                          [vdso]\n"
    )
    assert mapped_libraries(str(maps)) == {
        LINKER_CACHE: stamp(LINKER_CACHE),
        str(library): stamp(str(library)),
        str(gone): REPLACED,  # upgraded or removed before it was stamped: stale at once
    }


def test_this_process_maps_its_interpreter() -> None:
    assert os.path.realpath(sys.executable) in mapped_libraries()
