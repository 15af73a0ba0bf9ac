"""A `judgegen run` served by the warm server a previous run left behind behaves as the same
command run cold — output, exit code, results, signals — and a server whose code is no
longer what a fresh process would import never serves."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from generator.cli.warm import key as keys
from generator.cli.warm.client import (
    JOB_STOPS,
    RELAYED,
    Client,
    ahead,
    paths,
    servers,
    stop_servers,
)
from generator.cli.warm.code_snapshot import CodeSnapshot
from generator.cli.warm.wire import End, Hello, Reply, Request
from tests.fixtures.runner.llm_policy import BEATS_ENV, THREAD_MARKS_ENV

REPO = Path(__file__).resolve().parents[2]
LAUNCH = "from generator.cli import entry; entry()"
PROVIDER = "scripted:tests.fixtures.runner.llm_policy:policy"
SLOW = "scripted:tests.fixtures.runner.llm_policy:slow_policy"
BEATING = "scripted:tests.fixtures.runner.llm_policy:beats_until_released"
THREADED = "scripted:tests.fixtures.runner.llm_policy:leaves_a_thread_working"


class Warm:
    """`judgegen` processes sharing one folder of warm servers."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.folder = work / "servers"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            keys.SWITCH_ENV: "on",
            keys.RUNTIME_ENV: str(self.folder),
            keys.IDLE_ENV: "60",
        }

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", LAUNCH, *args]

    def run_args(self, *extra: str) -> list[str]:
        return [
            *("run", "--answers", "answers", "--judges", "judges", "--pages", "pages"),
            *("--provider", PROVIDER, "--cache-mode", "off", "--include-unreviewed", "--json"),
            "--overwrite",
            *extra,
        ]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args), cwd=self.work, env=self.env, capture_output=True, text=True
        )

    def wait_for_server(self) -> None:
        """Until a server answers on this environment's socket (it imports first)."""
        deadline = time.monotonic() + 60
        while not list(self.folder.glob("*.sock")):
            assert time.monotonic() < deadline, self.log()
            time.sleep(0.05)

    def log(self) -> str:
        return "".join(log.read_text() for log in self.folder.glob("*.log"))

    def served(self) -> int:
        """How many commands the servers have run so far."""
        return self.log().count("serving ['run']")

    def served_pid(self) -> int:
        """The process (and process group) of the command the servers ran last."""
        until(lambda: self.served() > 0, "no command was served")
        return int(re.findall(r"serving \['run'\] in .* as (\d+)", self.log())[-1])

    def start_beating(self, beats: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
        """A cold run that leaves a server behind for commands whose policy beats into
        `beats` (the variable is part of the key, so the cold run has it too); the file that
        lets them answer."""
        self.env[BEATS_ENV] = str(beats)
        cold = self(*self.run_args("--no-sandbox"))
        assert cold.returncode == 0, cold.stderr
        self.wait_for_server()
        return cold, beats.with_name(beats.name + ".released")

    def beating(self) -> subprocess.Popen[str]:
        """A served `judgegen run` that beats until released (`start_beating`), in a process
        group of its own whose parent (this process) is in another group of the session: a
        group that is not orphaned, whatever this test process's is, so the kernel delivers
        the stop signals the tests send (it discards them in an orphaned group, as a suite run
        in the background of a shell that has exited is)."""
        return subprocess.Popen(
            self.command(*self.run_args("--no-sandbox", "--provider", BEATING)),
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            process_group=0,
            preexec_fn=as_from_a_terminal,
        )


def as_from_a_terminal() -> None:
    """In a client about to start: the signals the tests send at their default actions, as
    a shell at a terminal starts a command. A suite run in the background of a shell without
    job control ignores SIGINT and SIGQUIT, and a client started so leaves them ignored in its
    command (as a cold command would ignore them): the tests would signal nothing."""
    for signum in (*RELAYED, *JOB_STOPS):
        signal.signal(signum, signal.SIG_DFL)


@pytest.fixture
def warm(work: Path) -> Iterator[Warm]:
    servers_of = Warm(work)
    yield servers_of
    if servers_of.folder.exists():
        stop_servers(servers_of.folder)
        deadline = time.monotonic() + 20
        while servers(servers_of.folder) and time.monotonic() < deadline:
            time.sleep(0.05)
        until(lambda: not _terminate(started_for(servers_of.folder)), "a server lives on", 20)


def started_for(folder: Path) -> set[int]:
    """The processes started for the servers in `folder` (their command line names it): a
    server still importing — one a refused run left as the stale one exited — holds no lock
    yet, so `stop_servers` does not find it; and its zygote."""
    found = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if str(folder).encode() in cmdline.read_bytes():
                found.add(int(cmdline.parent.name))
    return found


def _terminate(pids: set[int]) -> set[int]:
    """Send SIGTERM to each of `pids` still running (a server stops; one still importing
    ends); the ones that were."""
    there = set()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            there.add(pid)
    return there


def until(condition: Callable[[], object], failing: str, seconds: float = 30.0) -> None:
    """Poll `condition` every 20 ms; fail with `failing` if it does not hold within `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(failing)
        time.sleep(0.02)


def state(pid: int) -> str:
    """A process's state letter ('T': stopped, 'Z': ended, not yet reaped; '' once gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def children(pid: int) -> set[int]:
    """The live (not ended) children of process `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def stopped_by(pid: int) -> int:
    """The signal that stopped child `pid`, as its shell would see it (waits for the stop)."""
    found: list[int] = []

    def reported() -> bool:
        waited, status = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)
        if waited and os.WIFSTOPPED(status):
            found.append(os.WSTOPSIG(status))
        return bool(waited)

    until(reported, f"{pid} neither stopped nor ended")
    assert found, f"{pid} ended instead of stopping"
    return found[0]


WHERE = frozenset({"judges_dir", "pages_dir"})
"""Fields of a summary saying where its run read from (absolute), not what it judged."""


def verdicts(stdout: str) -> Any:
    """What a run's JSON record says it judged, without what it took (seconds) or where its
    folders are."""

    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: timeless(v) for k, v in value.items() if not k.endswith("_s") and k not in WHERE
            }
        return [timeless(v) for v in value] if isinstance(value, list) else value

    record = json.loads(stdout)
    fields = ("exit_code", "evaluated", "incomplete", "missing_pages", "summaries")
    return timeless({field: record[field] for field in fields})


def test_a_run_leaves_a_server_that_runs_the_next_one_with_the_same_output(warm: Warm) -> None:
    cold = warm(*warm.run_args("--no-sandbox"))
    assert cold.returncode == 0, cold.stderr
    warm.wait_for_server()
    served = warm(*warm.run_args("--no-sandbox"))
    assert served.returncode == 0, served.stderr
    assert warm.served() == 1
    assert verdicts(served.stdout) == verdicts(cold.stdout)
    assert json.loads(served.stdout)["evaluated"] > 0


def test_a_sandboxed_run_is_served_with_the_sandbox_started_ahead(warm: Warm) -> None:
    cold = warm(*warm.run_args())
    assert cold.returncode == 0, cold.stderr
    warm.wait_for_server()
    served = warm(*warm.run_args())
    assert served.returncode == 0, served.stderr
    assert warm.served() == 1
    assert verdicts(served.stdout) == verdicts(cold.stdout)


def test_a_served_usage_error_exits_2_with_the_message_on_the_clients_stderr(warm: Warm) -> None:
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    cold = subprocess.run(
        warm.command("run", "--no-such-flag"),
        cwd=warm.work,
        env={**warm.env, keys.SWITCH_ENV: "off"},
        capture_output=True,
        text=True,
    )
    served = warm("run", "--no-such-flag")
    assert warm.served() == 1
    assert (served.returncode, served.stdout, served.stderr) == (2, "", cold.stderr)
    assert "No such option '--no-such-flag'" in served.stderr


def test_a_server_refuses_once_a_new_file_would_shadow_a_module_it_imported(
    warm: Warm, tmp_path: Path
) -> None:
    front = tmp_path / "front"
    front.mkdir()
    warm.env["PYTHONPATH"] = os.pathsep.join([str(front), str(REPO)])
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    (front / "click.py").write_text("raise ImportError('the new click, found first')\n")
    refused = warm(*warm.run_args("--no-sandbox"))
    assert warm.served() == 0
    assert "stale: click would now be imported from" in warm.log()
    assert "the new click, found first" in refused.stderr  # run here, with the new code


def test_a_served_command_ends_with_its_exit_code_once_its_threads_finish_as_a_cold_one(
    warm: Warm, tmp_path: Path
) -> None:
    marks = tmp_path / "thread-marks"
    warm.env[THREAD_MARKS_ENV] = str(marks)
    args = warm.run_args("--no-sandbox", "--provider", THREADED)
    cold = warm(*args)
    assert cold.returncode == 0, cold.stderr
    assert marks.read_text()  # the cold command's exit waited for its threads
    warm.wait_for_server()
    marks.unlink()
    served = warm(*args)
    assert warm.served() == 1
    assert "SystemExit" not in served.stderr
    assert served.returncode == cold.returncode
    assert verdicts(served.stdout) == verdicts(cold.stdout)
    assert marks.exists(), "the served command ended without waiting for its threads"


def test_a_signal_to_the_client_reaches_the_served_command(warm: Warm) -> None:
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    args = warm.run_args("--no-sandbox", "--provider", SLOW)
    process = subprocess.Popen(
        warm.command(*args),
        cwd=warm.work,
        env=warm.env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,
    )
    deadline = time.monotonic() + 30
    while warm.served() == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    ended = [line for line in warm.log().splitlines() if "ended: exit" in line]
    assert process.returncode == int(ended[-1].rsplit(" ", 1)[1]) != 0


def test_a_killed_client_ends_its_served_command(warm: Warm) -> None:
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    args = warm.run_args("--no-sandbox", "--provider", SLOW)
    process = subprocess.Popen(warm.command(*args), cwd=warm.work, env=warm.env)
    deadline = time.monotonic() + 30
    while warm.served() == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.kill()
    process.wait()
    while "went away" not in warm.log() or "ended: exit" not in warm.log():
        assert time.monotonic() < deadline + 30, warm.log()
        time.sleep(0.05)


def test_the_switch_off_leaves_no_server(warm: Warm) -> None:
    warm.env[keys.SWITCH_ENV] = "off"
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    time.sleep(0.5)
    assert not warm.folder.exists() or not list(warm.folder.iterdir())


def test_the_key_follows_the_environment_but_not_the_shells_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = keys.key(keys.material())
    monkeypatch.setenv("PWD", "/somewhere/else")
    monkeypatch.setenv("SHLVL", "9")
    assert keys.key(keys.material()) == before
    monkeypatch.setenv("OPENAI_API_KEY", "another key")
    assert keys.key(keys.material()) != before


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LD_LIBRARY_PATH", "/opt/other/lib"),
        ("LD_PRELOAD", "/opt/other/lib/libpreloaded.so"),
        ("PYTHONPATH", "/opt/other/site"),
        ("PATH", "/opt/other/bin"),
        ("JUDGEGEN_JUDGE_MODEL", "another-model"),
        ("JUDGEGEN_CONFIG", "/opt/other/judgegen.toml"),
    ],
)
def test_a_client_whose_environment_would_load_or_decide_otherwise_has_another_key(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """What the linker loads (LD_LIBRARY_PATH, LD_PRELOAD), the import path, where `bwrap` is
    found, judgegen's settings: a server started with other values would not be what a fresh
    process is, so a client never finds it (the server checks its own key as it starts)."""
    before = keys.key(keys.material())
    monkeypatch.setenv(name, value)
    assert keys.key(keys.material()) != before


@pytest.mark.parametrize("name", ["LD_LIBRARY_PATH", "LD_PRELOAD"])
def test_the_key_follows_the_working_folder_when_the_linker_is_given_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """`LD_LIBRARY_PATH=lib` (or an empty entry) is a folder of the working folder's: a fresh
    process elsewhere loads other libraries. With absolute paths one server serves every
    folder."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    monkeypatch.setenv(name, "/opt/lib/libx.so" if name == "LD_PRELOAD" else "/opt/lib")
    monkeypatch.chdir(here)
    absolute_here = keys.key(keys.material())
    monkeypatch.chdir(there)
    assert keys.key(keys.material()) == absolute_here
    monkeypatch.setenv(name, "lib/libx.so" if name == "LD_PRELOAD" else "lib")
    relative_there = keys.key(keys.material())
    monkeypatch.chdir(here)
    assert keys.key(keys.material()) != relative_there


def test_a_folder_others_can_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv(keys.RUNTIME_ENV, str(shared))
    with pytest.raises(OSError, match="only this user"):
        keys.runtime_dir()


def test_the_clients_request_is_what_the_server_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(keys.RUNTIME_ENV, str(tmp_path / "servers"))
    monkeypatch.setenv(keys.SWITCH_ENV, "on")
    client = Client.for_command(["run", "--json"])
    request = Request.model_validate(client.request())
    assert (request.argv, request.cwd, request.key) == (["run", "--json"], os.getcwd(), client.key)
    versions = {Hello().version, Reply(accepted=True, pid=1).version, End(exit=0).version}
    assert versions == {request.version}


def test_a_snapshot_sees_an_edited_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "warm_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import warm_probe_module  # noqa: F401

    snapshot = CodeSnapshot.take()
    assert snapshot.changed() is None
    (tmp_path / "warm_probe_module.py").write_text("VALUE = 2  # edited\n")
    assert snapshot.changed() == f"{tmp_path / 'warm_probe_module.py'} changed"
    monkeypatch.delitem(sys.modules, "warm_probe_module")


def test_the_files_of_a_key_live_in_the_folder(tmp_path: Path) -> None:
    assert {p.name for p in paths(tmp_path, "k").values()} == {
        "k.sock",
        "k.lock",
        "k.spec",
        "k.log",
    }


def test_a_server_imports_judgegen_and_installed_packages_ahead_but_no_users_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "users_own_policy.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import users_own_policy  # noqa: F401

    import toolkit.tree  # noqa: F401

    names = set(ahead(sys.modules))
    assert {"toolkit.tree", "generator.cli.warm.client", "pydantic", "click", "json"} <= names
    assert "users_own_policy" not in names
    assert not any(name.startswith("tests.") for name in names)
    monkeypatch.delitem(sys.modules, "users_own_policy")


def test_a_command_from_another_folder_starts_a_sandbox_of_its_own(
    warm: Warm, tmp_path: Path
) -> None:
    """The executable as installed (not `python -c`): the import path does not name the
    working folder, so one server serves every folder; the sandbox started ahead measured its
    guards against the server's folder, so it is not used for a command run elsewhere."""
    script = tmp_path / "bin" / "judgegen"
    script.parent.mkdir()
    script.write_text(LAUNCH + "\n")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(warm.work, elsewhere, ignore=shutil.ignore_patterns("servers"))
    command = [sys.executable, str(script), *warm.run_args()]
    cold = subprocess.run(command, cwd=warm.work, env=warm.env, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    warm.wait_for_server()
    served = subprocess.run(command, cwd=elsewhere, env=warm.env, capture_output=True, text=True)
    assert served.returncode == 0, served.stderr
    assert warm.served() == 1
    assert f"was not used (the command runs in {elsewhere})" in warm.log()
    assert verdicts(served.stdout) == verdicts(cold.stdout)


def test_two_commands_at_once_are_both_served_with_their_own_results(warm: Warm) -> None:
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    runs = [
        subprocess.Popen(
            warm.command(*warm.run_args("--no-sandbox", "--results", folder)),
            cwd=warm.work,
            env=warm.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for folder in ("results-a", "results-b")
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    assert warm.served() == 2
    assert verdicts(outputs[0][0]) == verdicts(outputs[1][0])
    assert (warm.work / "results-a").is_dir() and (warm.work / "results-b").is_dir()


@pytest.mark.parametrize("stop", [signal.SIGTSTP, signal.SIGTTOU], ids=["SIGTSTP", "SIGTTOU"])
def test_a_stopped_client_stops_its_served_command_until_it_is_continued(
    warm: Warm, tmp_path: Path, stop: signal.Signals
) -> None:
    """Ctrl-Z (or a background job's stop) stops the command with the client, as a cold
    command is stopped, and `fg`/`bg` (SIGCONT to the client) lets it go on and end well."""
    beats = tmp_path / "beats"
    cold, released = warm.start_beating(beats)
    client = warm.beating()
    command = 0
    try:
        until(beats.exists, f"the served command never beat: {warm.log()}")
        command = warm.served_pid()
        client.send_signal(stop)
        assert stopped_by(client.pid) == stop
        until(lambda: state(command) == "T", "the served command was not stopped", 10)
        size = beats.stat().st_size
        time.sleep(0.2)  # twenty beats, were it beating
        assert beats.stat().st_size == size
        client.send_signal(signal.SIGCONT)
        until(lambda: beats.stat().st_size > size, "the served command was not continued")
        assert state(command) != "T"
    finally:
        released.touch()
        client.send_signal(signal.SIGCONT)
        if command:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command, signal.SIGCONT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert warm.served() == 1
    assert verdicts(out) == verdicts(cold.stdout)


def test_a_client_killed_while_stopped_ends_its_stopped_command(warm: Warm, tmp_path: Path) -> None:
    """The command the server ends for a killed client is continued, or it would never end."""
    beats = tmp_path / "beats"
    _, released = warm.start_beating(beats)
    client = warm.beating()
    command = 0
    try:
        until(beats.exists, f"the served command never beat: {warm.log()}")
        command = warm.served_pid()
        client.send_signal(signal.SIGTSTP)
        until(lambda: state(command) == "T", "the served command was not stopped", 10)
        client.kill()
        client.wait()  # not its pipes: the stopped command holds them open
        until(lambda: f"{command} ended: exit" in warm.log(), "the stopped command never ended")
        assert "went away" in warm.log()
    finally:
        released.touch()
        if command:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command, signal.SIGCONT)
        client.communicate(timeout=60)


def test_a_command_for_a_zygote_found_dead_at_hand_over_gets_a_child_of_its_own(
    warm: Warm, tmp_path: Path
) -> None:
    """The zygote dies between the command's arrival and its hand-over: the command is still
    served, by a new child, as the zygote would have served it, and a new zygote is forked for
    the next one. The server is held stopped while the command arrives and the zygote dies;
    continued, it is told of the two in that order (epoll reports in the order things became
    ready), so it finds the zygote dead only when handing the command over. The test is the
    client here, speaking the wire protocol (`wire.py`), so that it knows the command arrived
    before the zygote died: it sends the command without waiting for the greeting the stopped
    server cannot send yet (a `judgegen` client would wait for it, and run the command itself)."""
    cold = warm(*warm.run_args("--no-sandbox"))
    assert cold.returncode == 0, cold.stderr
    warm.wait_for_server()
    [(key, server)] = servers(warm.folder)
    assert server is not None
    until(lambda: children(server), "the server forked no zygote")
    [zygote] = children(server)
    request = Request(
        key=key,
        argv0="judgegen",
        argv=warm.run_args("--no-sandbox"),
        cwd=str(warm.work),
        umask=0o022,
        positional_env={},
    )
    out, err = tmp_path / "out", tmp_path / "err"
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.kill(server, signal.SIGSTOP)
    try:
        conn.connect(str(paths(warm.folder, key)["sock"]))  # the listener is ready first...
        with open(os.devnull) as stdin, out.open("w") as stdout, err.open("w") as stderr:
            streams = [stdin.fileno(), stdout.fileno(), stderr.fileno()]
            socket.send_fds(conn, [request.model_dump_json().encode() + b"\n"], streams)
        os.kill(zygote, signal.SIGKILL)  # ...and the zygote's end second
        until(lambda: state(zygote) == "Z", "the zygote did not end")
    finally:
        os.kill(server, signal.SIGCONT)
    with conn, conn.makefile("rb") as reader:
        Hello.model_validate_json(reader.readline())
        reply = Reply.model_validate_json(reader.readline())
        end = End.model_validate_json(reader.readline())
    assert reply.accepted and reply.pid not in (None, zygote)
    assert end.exit == cold.returncode == 0, err.read_text()
    assert verdicts(out.read_text()) == verdicts(cold.stdout)
    assert warm.served() == 1
    assert f"the zygote {zygote} had ended" in warm.log()
    assert "ended on its own" not in warm.log()
    until(lambda: children(server) - {zygote, reply.pid}, "no new zygote was forked")


@pytest.mark.parametrize("ray", [["--ray"], ["--ray=127.0.0.1:6379"], ["--ray", "127.0.0.1:6379"]])
def test_a_ray_run_asks_no_server_and_leaves_none(
    ray: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(keys.RUNTIME_ENV, str(tmp_path / "servers"))
    monkeypatch.setenv(keys.SWITCH_ENV, "on")
    monkeypatch.setattr("generator.cli.warm.client.HANDSHAKE_S", 0.5)
    served = Client.for_command(["run", "--json"])  # the same key: a server would answer both
    assert served.folder is not None and served.key is not None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(paths(served.folder, served.key)["sock"]))
    listener.listen()
    listener.setblocking(False)
    client = Client.for_command(["run", *ray, "--json"])
    assert client.serve() is None
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody asked
    listener.close()
    client.leave_server_behind(dict(sys.modules))
    assert not [path for path in served.folder.iterdir() if path.suffix != ".sock"]
