"""The executable's side of the warm server: hand a command to a server, or run it here and
leave a server behind for the next one.

Standard library only, and little of it: this runs before anything else is imported, on
every `judgegen` start. A command is handed over only when a server with this process's key
greets it (at once, before any work: a server that does not is not waited for) and accepts it;
then its standard streams (as file descriptors), working folder, arguments, positional
environment and umask go to the server, which forks the command, and this process waits for
its exit status, passing on the signals it receives from the moment it sends the command
(Ctrl-C reaches the command as it would in process; Ctrl-Z stops it along with this process,
and `fg` or `bg` continues both). Anything short of an accepted command is run here (a
server's refusal, such as a stale server's, is named on standard error first).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any, BinaryIO

from generator.cli.early_sandbox import option_names
from generator.cli.warm import key as keys

WIRE_VERSION = keys.WIRE_VERSION
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
JOB_STOPS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
"""The stops a shell's job control sends (Ctrl-Z; a background job at the terminal). Each stops
the served command's group with SIGSTOP, then this process as the signal would have; SIGCONT to
this process (`fg`, `bg`) continues both. SIGSTOP rather than the signal itself, which judgegen
handles no differently: the command inherits the dispositions of whichever process started the
server (one that ignored SIGTSTP passed that on), and once the server is gone its group is
orphaned, where the kernel discards the other three."""
HELD = frozenset({*RELAYED, *JOB_STOPS})
"""Blocked from before the request is sent until the handlers that relay them are in:
one arriving while the server takes the command (its process group not yet known) would
otherwise reach this process alone — Ctrl-Z would stop it with the command running on,
Ctrl-C or SIGTERM would end it and the server would end the command with SIGTERM. Only a
server that has greeted this client is sent the request, so they are held only while a
server that is there handles it: reads it, checks its code, hands it over (milliseconds) —
and, for one that stalls meanwhile, at most `SIGNALLED_S` after the first one arrives."""
NOT_LEFT_BEHIND = frozenset({"--ray", "--help", "-h"})
NOT_SERVED = frozenset({"--ray"})
"""Flags of a command that runs cold even when a server could serve it: a Ray driver starts or
joins a cluster (seconds, next to the imports a server saves), and its cluster's processes
would descend from the server and see its `__main__`, which no test covers."""
JUDGED = "toolkit.runner.scheduler"
"""Loaded by a run that judged: only such a run knows what the next one will import (one that
stopped at a usage error, or answered from the fresh stamp, imported a fraction of it)."""
GREETING_S = 1.0
"""How long a client waits for a server to greet it (`wire.Hello`, sent as the server accepts
the connection); past it — a server stopped, hung or busy — the command runs in the client,
which has sent the server nothing it could run and held no signal."""
HANDSHAKE_S = 10.0
"""How long a client waits for a server that greeted it to take its command (it holds signals
meanwhile); past it, the command runs in the client (and the server, finding the client gone,
ends the command if it had started it). Only a server that stalls within the few
milliseconds between reading a request and answering it is waited for this long, and only
while no signal is held (`SIGNALLED_S`)."""
SIGNALLED_S = 0.25
"""How long a client still waits for the server's answer once a signal it holds has arrived:
an answer then relays the signal to the command; none, and the client hangs up and takes the
signal itself (Ctrl-C ends it, Ctrl-Z stops it) as a cold command not yet started would — so
Ctrl-C is acted on within about this long, whatever the server does."""
PENDING_POLL_S = 0.05
"""How often a client waiting for the server's answer looks for a held signal."""
SERVER_LOST = 3
"""The exit code when the server ended before the command (an infrastructure failure)."""
BOOT = (
    "# judgegen warm server (judgegen server status)\n"  # what `ps` shows
    "import sys, time\n"
    "began = time.time_ns()\n"
    "class Tried(set):  # every module name an import looks for from here on\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        self.add(name)\n"
    "tried = Tried()\n"
    "sys.meta_path.insert(0, tried)\n"
    "import json\n"
    "spec = json.load(open(sys.argv[1]))\n"
    "sys.path[:] = spec['path']\n"
    "from generator.cli.warm.server import main\n"
    "sys.exit(main(sys.argv[1:], tried, began))\n"
)
"""The server's program: it notes when it began importing (a code file changed since may
have been read before the change) and records the names its imports look for before it imports
anything it can (`code_snapshot.CodeSnapshot.take` watches those that gave no module)."""


def paths(folder: Path, key: str) -> dict[str, Path]:
    """The files of the server with `key`: its socket, lock, start-up spec and log."""
    return {part: folder / f"{key}.{part}" for part in ("sock", "lock", "spec", "log")}


class Client:
    """One `judgegen` invocation's dealings with the warm server."""

    def __init__(
        self, argv: list[str], folder: Path | None, material: dict[str, Any] | None
    ) -> None:
        self.argv = argv
        self.folder = folder
        self.material = material or {}
        """What the key is made of as this process started (`key.material`)."""
        self.key = keys.key(material) if material is not None else None
        self.path = list(sys.path)
        self.environ = dict(os.environ)
        """The import path and environment as this process started (a command may add to
        them, as a scripted policy's folder): what a server it leaves behind starts from."""

    @classmethod
    def for_command(cls, argv: list[str]) -> Client:
        """The client for `argv` (one that does nothing when the command is not served)."""
        if not argv or argv[0] not in keys.SERVED_COMMANDS or not keys.enabled():
            return cls(argv, None, None)
        if NOT_SERVED & option_names(argv):
            return cls(argv, None, None)
        if _terminal_stops_background_writes():
            return cls(argv, None, None)
        try:
            folder = keys.runtime_dir()
        except OSError:
            return cls(argv, None, None)
        return cls(argv, folder, keys.material())

    def serve(self) -> int | None:
        """The command's exit code when a server ran it; None when it must run here."""
        if self.folder is None or self.key is None:
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        reader = conn.makefile("rb")
        conn.settimeout(GREETING_S)  # a server that does not greet us: run here
        try:
            conn.connect(str(paths(self.folder, self.key)["sock"]))
            hello = _read_line(reader)
        except (OSError, ValueError):
            hello = None
        except BaseException:  # Ctrl-C meanwhile is this process's own, as in a cold command
            _hang_up(conn, reader)
            raise
        if not (hello and hello.get("version") == WIRE_VERSION and hello.get("hello")):
            _hang_up(conn, reader)
            return None
        held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
        try:
            try:
                socket.send_fds(conn, [_line(self.request())], [0, 1, 2])
                reply = _answer(conn, reader)
                conn.settimeout(None)
            except (OSError, ValueError):
                reply = None
            if not (reply and reply.get("version") == WIRE_VERSION and reply.get("accepted")):
                _hang_up(conn, reader)
                if reply and isinstance(reply.get("reason"), str):
                    print(
                        f"judgegen: the warm server was not used ({reply['reason']}); the "
                        "command runs here",
                        file=sys.stderr,
                    )
                return None
            return self._wait(conn, reader, int(reply["pid"]), held)
        finally:  # not served: what was held reaches this process now, as in a cold command
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def request(self) -> dict[str, Any]:
        """What the server needs to run the command as this process would (`wire.Request`)."""
        umask = os.umask(0)
        os.umask(umask)
        return {
            "version": WIRE_VERSION,
            "key": self.key,
            "argv0": sys.argv[0],
            "argv": self.argv,
            "cwd": os.getcwd(),
            "umask": umask,
            "positional_env": {k: os.environ[k] for k in keys.POSITIONAL_ENV if k in os.environ},
            "ignored": [int(signum) for signum in _ignored()],
        }

    def _wait(
        self, conn: socket.socket, reader: BinaryIO, pid: int, held: set[int | signal.Signals]
    ) -> int:
        """Wait for the served command's exit, relaying signals to it (and job control); the
        signals `HELD` since the request was sent go to it once its handlers are in (`held`:
        the mask to restore)."""

        def relay(signum: int, _frame: Any) -> None:
            with contextlib.suppress(OSError):
                os.killpg(pid, signum)

        def stop(signum: int, _frame: Any) -> None:
            relay(signal.SIGSTOP, None)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signum})  # one stop, however many came
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            # stopped on unblocking, until continued (or not at all in an orphaned group, where
            # the kernel discards the signal: a cold command runs on too)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
            signal.signal(signum, stop)
            relay(signal.SIGCONT, None)

        handlers = {signum: relay for signum in (*RELAYED, signal.SIGCONT)}
        handlers.update({signum: stop for signum in JOB_STOPS})
        for signum in _ignored():  # as a cold command would: nohup's SIGHUP stays ignored
            del handlers[signum]
        previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        try:
            end = _read_line(reader)
        except (OSError, ValueError):
            end = None
        finally:
            for signum, handler in previous.items():  # the command has ended: signals are ours
                signal.signal(signum, handler)
            reader.close()
            conn.close()
        if not end or end.get("version") != WIRE_VERSION or "exit" not in end:
            print(
                "judgegen: the warm server ended before the command did, which may not have "
                f"finished; its log: {paths(self.folder, self.key)['log']}"  # type: ignore[arg-type]
                f" (set {keys.SWITCH_ENV}=off to run commands without it)",
                file=sys.stderr,
            )
            return SERVER_LOST
        if end.get("signal"):
            signal.signal(int(end["signal"]), signal.SIG_DFL)
            os.kill(os.getpid(), int(end["signal"]))
        return int(end["exit"])

    def leave_server_behind(self, modules: dict[str, Any]) -> None:
        """After running here: start a server that imports what this command imported from
        the standard library, installed packages and judgegen (never a judge or the user's
        own code) — unless one is running or starting, or this command should not leave one."""
        if self.folder is None or self.key is None or NOT_LEFT_BEHIND & option_names(self.argv):
            return
        if JUDGED not in modules:
            return
        files = paths(self.folder, self.key)
        try:
            with open(files["lock"], "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at once: a probe
            spec = {
                "version": WIRE_VERSION,
                "path": self.path,
                "modules": ahead(modules),
                "material": self.material,
            }
            from toolkit.util.files import write_atomic  # loaded already: the command judged

            write_atomic(files["spec"], json.dumps(spec))
            options = keys.interpreter_options()
            if options is None:
                return
            command = [sys.executable, *options, "-c", BOOT]
            command += [str(files["spec"]), str(files["sock"]), self.key]
            with open(files["log"], "a") as log:
                subprocess.Popen(
                    [*command, repr(keys.idle_seconds())],
                    stdin=subprocess.DEVNULL,
                    env=self.environ,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError:
            return


def servers(folder: Path) -> list[tuple[str, int | None]]:
    """(key, pid) of every server in `folder` that holds its lock (pid None: unreadable)."""
    found = []
    for lock in sorted(folder.glob("*.lock")):
        try:
            with open(lock) as held:
                try:
                    fcntl.flock(held, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    continue  # nobody holds it: no server
                except BlockingIOError:
                    text = held.read().strip()
        except OSError:
            continue
        found.append((lock.stem, int(text) if text.isdigit() else None))
    return found


def stop_servers(folder: Path) -> list[int]:
    """Ask every server in `folder` to stop (each finishes its running commands first)."""
    stopped = []
    for _, pid in servers(folder):
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
                stopped.append(pid)
    return stopped


def ahead(modules: dict[str, Any]) -> list[str]:
    """The names in `modules` a server imports ahead: those loaded from the standard library,
    an installed package or judgegen itself, in the order they were loaded."""
    judgegen = str(Path(__file__).resolve().parents[3])  # the folder holding generator/
    roots = [os.path.dirname(os.path.realpath(os.__file__)) + os.sep]
    roots += [os.path.join(judgegen, package) + os.sep for package in ("toolkit", "generator")]
    roots += [
        os.path.realpath(entry) + os.sep
        for entry in sys.path
        if os.path.basename(entry) in ("site-packages", "dist-packages")
    ]
    return [
        name
        for name, module in list(modules.items())
        if isinstance(origin := getattr(module, "__file__", None), str)
        and os.path.realpath(origin).startswith(tuple(roots))  # both sides through symlinks
    ]


def _ignored() -> list[signal.Signals]:
    """The signals this process handles for its served command that it was started ignoring
    (`nohup`'s SIGHUP; SIGINT and SIGQUIT in a script's background job)."""
    return [s for s in (*RELAYED, *JOB_STOPS) if signal.getsignal(s) == signal.SIG_IGN]


def _hang_up(conn: socket.socket, reader: BinaryIO) -> None:
    """Close the connection (its file first: the socket stays open while the file is)."""
    reader.close()
    conn.close()


def _answer(conn: socket.socket, reader: BinaryIO) -> dict[str, Any] | None:
    """The server's answer to the command sent on `conn`, waited for with signals held: for
    `HANDSHAKE_S`, or `SIGNALLED_S` from the moment one of them is pending (None: no answer
    in time)."""
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    deadline = time.monotonic() + HANDSHAKE_S
    signalled = False
    while True:
        now = time.monotonic()
        if not signalled and HELD & signal.sigpending():
            signalled = True
            deadline = min(deadline, now + SIGNALLED_S)
        if now >= deadline:
            return None
        if poller.poll(1000 * min(deadline - now, PENDING_POLL_S)):
            conn.settimeout(SIGNALLED_S)  # the answer is one short line, sent at once
            return _read_line(reader)


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _read_line(reader: BinaryIO) -> dict[str, Any] | None:
    """One JSON object from its own line (None at the end of the stream)."""
    data = reader.readline()
    if not data.endswith(b"\n"):
        return None
    message = json.loads(data)
    return message if isinstance(message, dict) else None


def _terminal_stops_background_writes() -> bool:
    """Whether a standard stream is a terminal set to stop writers outside its foreground
    group (`stty tostop`): a served command runs in the server's session, where no terminal's
    job control reaches it, so it would write on in the background where a cold one stops."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError, termios.error):
            if os.isatty(fd) and termios.tcgetattr(fd)[3] & termios.TOSTOP:
                return True
    return False
