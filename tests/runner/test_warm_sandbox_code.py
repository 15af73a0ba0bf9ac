"""A sandbox started ahead — by a warm server's zygote, or early in start-up — never judges
with code that changed on disk after it imported it: the jobs of a served run run the code a
cold run would, even for modules only the sandbox loads (the warm server's own snapshot does
not list them)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.cli.warm import key as keys
from generator.cli.warm.client import servers
from generator.cli.warm.code_snapshot import CodeSnapshot
from tests.runner.test_sandbox_channel import LIMITS, Pages, extract, job
from tests.runner.test_warm_server import REPO, Warm, children, until
from tests.runner.test_warm_server import warm as warm  # the fixture
from toolkit.backends import ScriptedBackend
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox.launch import launch_sandbox
from toolkit.sandbox.pool import WorkerPool
from toolkit.util.code_files import CLOCK_SLACK_NS, first_change, loaded_files, stamp

INTERPRETER = os.path.realpath(sys.executable)


def _copy_of_judgegen(into: Path) -> Path:
    """A private copy of judgegen's packages, first on the import path (the tests' fixture
    policies still come from the checkout)."""
    for package in ("toolkit", "generator", "prompts"):
        shutil.copytree(
            REPO / package, into / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return into


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """Change `path` as an editor saving in place does: same inode, its folder untouched."""
    text = path.read_text()
    assert old in text
    with path.open("r+") as handle:
        handle.write(text.replace(old, new, 1))
        handle.truncate()


def _incomplete(stdout: str) -> list[str]:
    """The evaluations a run left incomplete (in a fixed order: they end in any order)."""
    record = json.loads(stdout)
    return sorted(f"{e['agent']}/{e['task_id']}/{e['answer_name']}" for e in record["incomplete"])


def test_a_served_run_judges_with_job_code_edited_after_its_sandbox_started(
    warm: Warm, tmp_path: Path
) -> None:
    code = _copy_of_judgegen(tmp_path / "code")
    warm.env["PYTHONPATH"] = os.pathsep.join([str(code), str(REPO)])
    assert warm(*warm.run_args()).returncode == 0
    warm.wait_for_server()  # its zygote starts a sandbox that imports the job code now
    first = warm(*warm.run_args())
    assert _incomplete(first.stdout) == []
    time.sleep(2)  # the next zygote, forked as the first was taken, has imported the job code
    _edit_in_place(
        code / "toolkit" / "sandbox" / "job.py",
        "    guard = Guard(allow_network=spawn.limits.network)\n",
        "    raise RuntimeError('the job code as edited')\n"
        "    guard = Guard(allow_network=spawn.limits.network)\n",
    )
    served = warm(*warm.run_args())
    cold = subprocess.run(
        warm.command(*warm.run_args()),
        cwd=warm.work,
        env={**warm.env, keys.SWITCH_ENV: "off"},
        capture_output=True,
        text=True,
    )
    assert warm.served() == 2
    assert _incomplete(cold.stdout), cold.stdout  # the edit shows in a cold run
    assert _incomplete(served.stdout) == _incomplete(cold.stdout)
    assert "the job code as edited" in served.stderr


def test_a_server_left_by_an_unsandboxed_run_sees_an_upgrade_of_what_its_zygote_launches_with(
    warm: Warm, tmp_path: Path
) -> None:
    """A `--no-sandbox` run loads the launcher but never launches, so it never imports
    libseccomp's binding; the zygotes of the server it leaves do, starting the sandbox ahead.
    The server imports it before taking its snapshot: a binding upgraded after a zygote
    started is a change like any other, and the command runs cold, with the new one."""
    binding = pytest.importorskip("pyseccomp")
    front = tmp_path / "front"
    front.mkdir()
    shutil.copy(binding.__file__, front / "pyseccomp.py")
    warm.env["PYTHONPATH"] = os.pathsep.join([str(front), str(REPO)])
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    [(_, server)] = servers(warm.folder)
    assert server is not None
    until(lambda: children(server), "the server forked no zygote")
    [zygote] = children(server)
    until(lambda: children(zygote), "the zygote started no sandbox")  # its filters are built
    (front / "pyseccomp.py").write_text("raise ImportError('the binding as upgraded')\n")
    served = warm(*warm.run_args())
    assert warm.served() == 0
    assert f"stale: {front / 'pyseccomp.py'} changed" in warm.log()
    assert "libseccomp is unavailable (the binding as upgraded)" in served.stderr


NO_BWRAP = "bubblewrap (`bwrap`) not found"


def _bwrap() -> str:
    """This machine's bubblewrap (the test is skipped without one)."""
    found = shutil.which("bwrap")
    if found is None:
        pytest.skip("bubblewrap is not installed")
    return found


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("judgegen: warning:")]


@pytest.mark.parametrize("change", ["installed", "removed"])
def test_a_served_run_is_wrapped_as_a_cold_one_once_bubblewrap_is_installed_or_removed(
    warm: Warm, tmp_path: Path, change: str
) -> None:
    """The zygote's sandbox was started ahead, wrapped (or not) as bubblewrap was then: a
    command finding it installed or removed since gets a sandbox started now, as a cold
    run's is, with its guards and warnings."""
    bwrap = _bwrap()
    folder = tmp_path / "bin"
    folder.mkdir()
    installed = folder / "bwrap"
    if change == "removed":
        installed.symlink_to(bwrap)
    warm.env["PATH"] = str(folder)
    assert warm(*warm.run_args()).returncode == 0
    warm.wait_for_server()
    [(_, server)] = servers(warm.folder)
    assert server is not None
    until(lambda: children(server), "the server forked no zygote")
    [zygote] = children(server)
    until(lambda: children(zygote), "the zygote started no sandbox")
    if change == "installed":
        installed.symlink_to(bwrap)
    else:
        installed.unlink()
    served = warm(*warm.run_args())
    cold = subprocess.run(
        warm.command(*warm.run_args()),
        cwd=warm.work,
        env={**warm.env, keys.SWITCH_ENV: "off"},
        capture_output=True,
        text=True,
    )
    assert served.returncode == cold.returncode == 0, served.stderr
    assert warm.served() == 1
    assert (NO_BWRAP in cold.stderr) == (change == "removed")
    assert _warnings(served.stderr) == _warnings(cold.stderr)
    assert "was not used (bubblewrap " in warm.log()


def test_a_launch_tells_once_its_bubblewrap_is_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package manager's upgrade renames a new file over the old: a launch now would run
    the new one, while the one started ahead runs the old."""
    folder = tmp_path / "bin"
    folder.mkdir()
    installed = folder / "bwrap"
    shutil.copy(_bwrap(), installed)
    monkeypatch.setenv("PATH", str(folder))
    launch = launch_sandbox()
    try:
        assert launch.isolation.bwrap == str(installed)
        assert launch.wrapped_otherwise_now() is None
        upgrade = folder / "bwrap.new"
        shutil.copy(installed, upgrade)
        os.replace(upgrade, installed)
        assert launch.wrapped_otherwise_now() == f"bubblewrap changed: {installed}"
    finally:
        launch.kill()


async def test_a_pool_starts_its_own_sandbox_rather_than_one_launched_before_bubblewrap_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox launched early (in a cold run's start-up) is adopted only as a launch now
    would be wrapped."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bwrap").symlink_to(_bwrap())
    monkeypatch.setenv("PATH", str(folder))
    early = launch_sandbox()
    assert early.isolation.bwrap is not None
    (folder / "bwrap").unlink()
    pool = WorkerPool(None, LIMITS, ScriptedBackend(extract=extract), Pages(), launch=early)
    async with pool:
        outcome = await pool.evaluate(job("two_sources"))
        assert pool.server is not None and pool.server.launch is not early
    assert outcome.status == "complete", outcome.errors
    assert pool.isolation.bwrap is None
    assert early.process.poll() is not None  # killed, not left running


def test_a_launch_imports_nothing_once_what_it_needs_is_imported_ahead() -> None:
    """`import_ahead` covers all a launch imports: a warm server's snapshot, taken after it,
    holds the code its zygotes' launches run."""
    probe = (
        "import sys\n"
        "from toolkit.sandbox.launch import import_ahead, launch_sandbox\n"
        "import_ahead()\n"
        "before = set(sys.modules)\n"
        "launch_sandbox().kill()\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_file_edited_in_place_is_a_change(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("A = 1\n")
    files = {str(module): stamp(str(module))}
    assert first_change(files) is None
    _edit_in_place(module, "A = 1", "A = 2")
    assert first_change(files) == f"{module} changed"


def _imported_then_edited(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Write `name`.py in `folder`, let the clock move past its writing, note when a process
    would begin importing, import it, then edit it in place: the time noted."""
    module = folder / f"{name}.py"
    module.write_text("A = 1\n")
    time.sleep(2 * CLOCK_SLACK_NS / 1e9)
    began = time.time_ns()
    _import(folder, name, monkeypatch)
    _edit_in_place(module, "A = 1", "A = 2")
    return began


def _import(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import `name` from `folder`, for this test only."""
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setitem(sys.modules, name, None)  # so the module is taken out afterwards
    del sys.modules[name]
    importlib.import_module(name)


def test_a_module_edited_after_its_process_began_importing_is_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stamped once the imports are done, the edited file would look like the one that was
    loaded: nothing would ever tell the process runs the code from before the edit."""
    began = _imported_then_edited(tmp_path, "edited_while_importing", monkeypatch)
    module = str(tmp_path / "edited_while_importing.py")
    assert first_change(loaded_files(importing_since_ns=began)) == f"{module} changed"


def test_a_module_unchanged_since_its_process_began_importing_is_stamped_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "left_alone.py"
    module.write_text("A = 1\n")
    time.sleep(2 * CLOCK_SLACK_NS / 1e9)
    _import(tmp_path, "left_alone", monkeypatch)
    files = loaded_files(importing_since_ns=time.time_ns())
    assert files[str(module)] == stamp(str(module))


def test_a_warm_server_s_snapshot_counts_a_module_edited_while_it_imported_as_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    began = _imported_then_edited(tmp_path, "edited_while_serving", monkeypatch)
    snapshot = CodeSnapshot.take(importing_since_ns=began)
    assert snapshot.changed() == f"{tmp_path / 'edited_while_serving.py'} changed"


def test_the_loaded_files_include_this_module_and_its_package_folder() -> None:
    files = loaded_files()
    assert files[__file__] == stamp(__file__)
    package = os.path.dirname(os.path.dirname(os.path.abspath(json.__file__)))
    assert os.path.join(package, "json") in files


async def test_a_fork_server_just_started_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code check passes for a fork server whose files did not change (its files are read
    at the same paths inside the sandbox as outside): no run starts its sandbox twice."""
    restarts: list[str] = []
    restarted = WorkerPool._restarted

    async def counting(self: WorkerPool, stale: pool_module.ForkServer) -> pool_module.ForkServer:
        restarts.append(str(first_change(stale.code)))
        return await restarted(self, stale)

    monkeypatch.setattr(WorkerPool, "_restarted", counting)
    async with WorkerPool(None, LIMITS, ScriptedBackend(extract=extract), Pages()) as pool:
        outcome = await pool.evaluate(job("two_sources"))
        assert pool.server is not None
        code = pool.server.code
    assert outcome.status == "complete", outcome.errors
    assert restarts == []
    assert str(Path(pool_module.__file__).with_name("job.py")) in code
    assert INTERPRETER in code  # and the native code it runs
