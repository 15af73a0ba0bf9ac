"""A signal that reaches the client while the server is taking its command — sent, not yet
answered with the command's process group — is relayed to the command once it is known, as
every later one is: Ctrl-Z never stops the client alone with the command running on, and
Ctrl-C or SIGTERM reaches the command rather than only ending the client. The test is the
server here (`wire.py`), so that the signal is sent exactly while the client waits for the
answer; a `sleep` in a process group of its own stands in for the served command. A server
that never greets the client holds none of its signals: the client sends it nothing and runs
the command itself."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.cli.warm import key as keys
from generator.cli.warm.client import GREETING_S, HANDSHAKE_S, paths
from generator.cli.warm.wire import End, Hello, Reply
from tests.runner.test_warm_server import REPO, as_from_a_terminal, state, stopped_by, until

CLIENT = (
    "import sys\n"
    "from pathlib import Path\n"
    "from generator.cli.warm.client import Client\n"
    "code = Client(['run'], Path(sys.argv[1]), {}).serve()\n"
    "sys.exit(99 if code is None else code)\n"
)
"""A client of the key `keys.key({})` in the folder given: exit 99 when it was not served."""


class Handshake:
    """A client started against this test as its server, caught waiting for the answer."""

    def __init__(self, folder: Path) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(paths(folder, keys.key({}))["sock"]))
        listener.listen()
        self.command = subprocess.Popen(
            ["sleep", "60"], process_group=0, preexec_fn=as_from_a_terminal
        )
        self.client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(folder)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.DEVNULL,
            process_group=0,  # not orphaned: the kernel delivers stops (`Warm.beating`)
            preexec_fn=as_from_a_terminal,
        )
        with listener:
            self.conn, _ = listener.accept()
        self.answer(Hello())  # as the server greets every client it accepts
        _, fds, _, _ = socket.recv_fds(self.conn, 1 << 16, 3)  # sent: the client now waits
        for fd in fds:
            os.close(fd)

    def answer(self, message: Hello | Reply | End) -> None:
        """Send `message`, as the server does (a client gone by then is not an error)."""
        with contextlib.suppress(OSError):
            self.conn.sendall(message.model_dump_json().encode() + b"\n")

    def close(self) -> None:
        for process in (self.command, self.client):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.conn.close()


@pytest.fixture
def handshake(tmp_path: Path) -> Iterator[Handshake]:
    folder = tmp_path / "servers"
    folder.mkdir(mode=0o700)
    caught = Handshake(folder)
    yield caught
    caught.close()


def test_a_stop_while_the_server_takes_the_command_stops_the_command_too(
    handshake: Handshake,
) -> None:
    handshake.client.send_signal(signal.SIGTSTP)
    handshake.answer(Reply(accepted=True, pid=handshake.command.pid))
    assert stopped_by(handshake.client.pid) == signal.SIGTSTP
    until(lambda: state(handshake.command.pid) == "T", "the command ran on, unstopped", 10)
    handshake.client.send_signal(signal.SIGCONT)
    until(lambda: state(handshake.command.pid) != "T", "the command was not continued", 10)
    handshake.answer(End(exit=0))
    assert handshake.client.wait(timeout=30) == 0


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_signal_while_the_server_takes_the_command_reaches_the_command(
    handshake: Handshake, signum: signal.Signals
) -> None:
    handshake.client.send_signal(signum)
    handshake.answer(Reply(accepted=True, pid=handshake.command.pid))
    assert handshake.command.wait(timeout=10) == -signum
    handshake.answer(End(exit=128 + signum, signal=signum))
    assert handshake.client.wait(timeout=30) == -signum


def test_a_signal_while_a_server_refuses_the_command_reaches_the_client_to_run_it(
    handshake: Handshake,
) -> None:
    """Not served, the command would run in the client: the signal is the client's own."""
    handshake.client.send_signal(signal.SIGTERM)
    handshake.answer(Reply(accepted=False, reason="stale"))
    assert handshake.client.wait(timeout=30) == -signal.SIGTERM
    assert state(handshake.command.pid) not in ("", "T", "Z")


PROMPTLY_S = 1.5
"""How soon a client acts on a signal whatever its server does (about a second; the rest is
slack for a loaded machine): well short of `HANDSHAKE_S`, the longest it waits for a server."""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_server_that_greeted_stalls_ends_the_client_promptly(
    handshake: Handshake, signum: signal.Signals
) -> None:
    """The server greeted the client and read its command, then never answers (hung, or
    stopped): Ctrl-C is not held until the client gives up on it; the client hangs up, so a
    server that takes the command late finds its client gone and ends it."""
    assert PROMPTLY_S < HANDSHAKE_S
    signalled = time.monotonic()
    handshake.client.send_signal(signum)
    assert handshake.client.wait(timeout=HANDSHAKE_S + 30) == -signum
    assert time.monotonic() - signalled < PROMPTLY_S
    assert handshake.conn.recv(1) == b""  # hung up


def test_a_stop_while_a_server_that_greeted_stalls_stops_the_client_promptly_and_then_it_runs_the_command(
    handshake: Handshake,
) -> None:
    """Ctrl-Z stops the client at once; `fg` continues it, and it runs the command itself
    (99: not served), having hung up on the server that never took it."""
    signalled = time.monotonic()
    handshake.client.send_signal(signal.SIGTSTP)
    assert stopped_by(handshake.client.pid) == signal.SIGTSTP
    assert time.monotonic() - signalled < PROMPTLY_S
    handshake.client.send_signal(signal.SIGCONT)
    assert handshake.client.wait(timeout=30) == 99
    assert handshake.conn.recv(1) == b""


class Silent:
    """A server that accepts a client and never says a word, and the client it accepted."""

    def __init__(self, folder: Path, patience_s: float) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(paths(folder, keys.key({}))["sock"]))
        listener.listen()
        client = (
            "from generator.cli.warm import client\n"
            f"client.GREETING_S = client.HANDSHAKE_S = {patience_s!r}\n" + CLIENT
        )
        self.client = subprocess.Popen(
            [sys.executable, "-c", client, str(folder)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # the KeyboardInterrupt of a client told to stop
            process_group=0,
            preexec_fn=as_from_a_terminal,
        )
        with listener:
            self.conn, _ = listener.accept()

    def heard(self) -> bytes:
        """All the client sent until it closed the connection."""
        received = b""
        while chunk := self.conn.recv(1 << 16):
            received += chunk
        return received

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.client.pid, signal.SIGKILL)
        self.client.wait()
        self.conn.close()


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[Silent]:
    folder = tmp_path / "servers"
    folder.mkdir(mode=0o700)
    caught = Silent(folder, patience_s=3600.0)  # whatever the client waits for, it waits long
    yield caught
    caught.close()


def test_a_signal_while_a_server_has_not_greeted_the_client_is_the_clients_own_at_once(
    silent: Silent,
) -> None:
    """The client is patient for an hour here: a signal it held until the server answered
    would not end it within the test's wait; it holds none before the greeting."""
    silent.client.send_signal(signal.SIGINT)
    assert silent.client.wait(timeout=60) == -signal.SIGINT
    assert silent.heard() == b""  # no command was sent that a late server could start


def test_a_client_a_server_never_greets_runs_the_command_itself_having_sent_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "servers"
    folder.mkdir(mode=0o700)
    caught = Silent(folder, patience_s=GREETING_S)
    try:
        assert caught.client.wait(timeout=60) == 99  # not served: run in the client
        assert caught.heard() == b""
    finally:
        caught.close()
