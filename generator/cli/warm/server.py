"""A warm server: a process that has imported what `judgegen run` imports and forks each
command it is handed, so the command starts where a cold one would be after ~0.3 s.

Started by a cold `judgegen run` (`client.Client.leave_server_behind`) with the import path
and the modules that run loaded; it serves only clients with its own key (`key.py`), over a
socket in a folder only its user can use, from peers of its own user. One process — the
"zygote" — is forked ahead, with the sandbox's fork server already starting in it, and takes
the next command; the next one is forked as soon as it is taken, so its sandbox warms up
while the command runs (a command arriving before it is forked gets a child of its own). Before every command the server checks that its
code is still what a fresh process would import (`code_snapshot.py`); when it is not, it
refuses the command (which then runs in the client), finishes the commands it is running,
and exits. It also exits after `key.idle_seconds` without commands. Nothing of a command's
runs in the server itself: every command starts from the state just after the imports.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import io
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import ValidationError

from generator.cli.warm import key as keys
from generator.cli.warm.client import RELAYED, WIRE_VERSION, paths
from generator.cli.warm.code_snapshot import CodeSnapshot
from generator.cli.warm.wire import End, Hello, Reply, Request

if TYPE_CHECKING:
    from toolkit.sandbox.launch import Launch

REQUEST_TIMEOUT_S = 5.0
_LAUNCHER = "toolkit.sandbox.launch"  # what starting the sandbox imports (with pyseccomp)
NEVER_IMPORTED = frozenset({"__main__", "__mp_main__", "ray", "grpc", "playwright", "greenlet"})
"""Top-level packages a server does not import ahead: they start threads (a forked child of
a threaded process may deadlock) or are the command line itself."""


def log(message: str) -> None:
    """One line in the server's log (its standard error)."""
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {message}", file=sys.stderr)


def main(argv: list[str], tried: Collection[str] = (), began_ns: int | None = None) -> int:
    """`BOOT SPEC SOCKET KEY IDLE`: import, check, serve until idle or stale. `tried`: a
    meta-path finder `BOOT` put first, recording every module name an import looks for
    (`CodeSnapshot.take`); it is taken out before the snapshot. `began_ns`: when the process
    began importing (default: now), so a code file changed since reads as changed."""
    began_ns = time.time_ns() if began_ns is None else began_ns
    spec_file, socket_path, key, idle = argv
    folder = Path(socket_path).parent
    with open(paths(folder, key)["lock"], "a") as lock:  # held for the server's life
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another server for this key is running or starting
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        return _serve(spec_file, socket_path, key, idle, lock, tried, began_ns)


def _serve(
    spec_file: str,
    socket_path: str,
    key: str,
    idle: str,
    lock: Any,
    tried: Collection[str],
    began_ns: int,
) -> int:
    gc.disable()
    sys.path[:] = [entry or os.getcwd() for entry in sys.path]  # as the key names it
    spec = json.loads(Path(spec_file).read_text())
    material = json.loads(json.dumps(keys.material()))  # as the spec holds it
    if keys.key(material) != key:
        theirs = spec.get("material", {})
        differ = sorted(k for k in material if material[k] != theirs.get(k))
        log(f"not serving: this process differs from the one that started it in {differ}")
        return 0
    with warnings.catch_warnings(record=True) as caught:
        for name in spec["modules"]:
            if name.partition(".")[0] in NEVER_IMPORTED:
                continue
            try:
                importlib.import_module(name)
            except Exception as exc:  # a module the run loaded that will not load here
                log(f"not imported ahead: {name} ({type(exc).__name__}: {exc})")
    said = [warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught]
    if _LAUNCHER in sys.modules:  # what its zygotes' launches import: in the snapshot too
        from toolkit.sandbox.launch import import_ahead

        import_ahead()
    watch: object = tried  # the finder recording them: children's imports are not watched
    sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not watch]
    if threading.active_count() != 1:
        log("not serving: importing started threads; forking would not be safe")
        return 0
    gc.collect()
    gc.freeze()
    gc.enable()
    snapshot = CodeSnapshot.take(tried, importing_since_ns=began_ns)
    log(
        f"serving {socket_path} ({len(sys.modules)} modules imported; looked for and not "
        f"imported, watched in case they appear: {', '.join(snapshot.not_imported) or 'none'})"
    )
    return Server(Path(socket_path), key, float(idle), snapshot, lock, said).serve()


class Server:
    """The accept loop: hands commands to forked children and reports how they ended."""

    def __init__(
        self,
        path: Path,
        key: str,
        idle: float,
        snapshot: CodeSnapshot,
        lock: Any,
        said: list[str],
    ) -> None:
        self.path, self.key, self.idle, self.snapshot = path, key, idle, snapshot
        self.said = said
        """Warnings importing raised: every command prints them, as a cold one would."""
        self.home = os.getcwd()
        """The folder the server started in: where its zygotes start the sandbox ahead (by
        path: the server itself leaves it, so it holds no folder a user may remove)."""
        os.chdir("/")
        self.lock = lock  # the key's lock, held while this process lives (children close it)
        self.stopping = False
        self.wakeup = socket.socketpair()  # a signal's byte wakes the loop
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.running: dict[int, tuple[socket.socket, int]] = {}  # pid -> (client, pidfd)
        self.zygote: tuple[int, socket.socket, int] | None = None  # pid, channel, pidfd
        self.idle_since = time.monotonic()
        self.bound_inode = 0

    def serve(self) -> int:
        """Serve until idle for `idle` seconds, or stale and done."""
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a dead server's socket: this process holds the key's lock
        self.listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.bound_inode = os.stat(self.path).st_ino
        self.listener.listen(16)
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        for end in self.wakeup:
            end.setblocking(False)
        self.selector.register(self.wakeup[0], selectors.EVENT_READ, self._woken)
        signal.set_wakeup_fd(self.wakeup[1].fileno())
        signal.signal(signal.SIGTERM, self._asked_to_stop)
        self._prepare_zygote()
        while self.listener is not None or self.running:
            if self.stopping and self.listener is not None:
                self._stop("asked to stop (SIGTERM)")
                continue
            timeout = None
            if not self.running:
                timeout = max(0.0, self.idle_since + self.idle - time.monotonic())
            events = self.selector.select(timeout)
            idle_for = time.monotonic() - self.idle_since
            if not events and not self.running and idle_for >= self.idle:
                self._stop(f"idle for {self.idle:g} s")
            for selected, _ in events:
                selected.data(selected.fileobj)
            if self.zygote is None and self.listener is not None:
                self._prepare_zygote()  # the next command's, warming while this one runs
        self._end_zygote()
        return 0

    def _asked_to_stop(self, _signum: int, _frame: Any) -> None:
        self.stopping = True  # the wakeup descriptor's byte ends the wait; the loop stops

    def _woken(self, end: Any) -> None:
        with contextlib.suppress(OSError):
            end.recv(64)

    def _stop(self, why: str) -> None:
        """Accept no more commands (the running ones finish) and free the socket."""
        if self.listener is None:
            return
        log(f"stopping: {why}")
        self.selector.unregister(self.listener)
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.bound_inode:
                self.path.unlink()
        self.listener.close()
        self.listener = None

    def _accept(self, listener: Any) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            conn.sendall(_line(Hello()))  # before any work: the client holds signals from here
            request, fds = self._read_request(conn)
            reason = self._refusal(conn, request)
            if reason is not None:
                self._reply(conn, Reply(accepted=False, reason=reason))
                conn.close()
                return
            assert request is not None
            pid, pidfd = self._hand_over(request, fds, conn)
        except (OSError, ValueError) as exc:
            log(f"a request failed: {exc}")
            conn.close()
            return
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.running[pid] = (conn, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, lambda _: self._ended(pid))
        self.selector.register(conn, selectors.EVENT_READ, lambda _: self._client_spoke(pid))
        self._reply(conn, Reply(accepted=True, pid=pid))
        log(f"serving {request.argv[:1]} in {request.cwd} as {pid}")

    def _read_request(self, conn: socket.socket) -> tuple[Request | None, list[int]]:
        conn.settimeout(REQUEST_TIMEOUT_S)
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        if not data and not fds:  # it stopped waiting for the greeting, or was ended
            raise ConnectionResetError("the client left before sending its command")
        while data and not data.endswith(b"\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        conn.settimeout(None)
        try:
            return Request.model_validate_json(data), list(fds)
        except ValidationError as exc:
            log(f"a malformed request: {exc}")
            return None, list(fds)

    def _refusal(self, conn: socket.socket, request: Request | None) -> str | None:
        """Why this request is not served (None: it is)."""
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            return "another user's process"
        if request is None:
            return f"a malformed request (this server speaks version {WIRE_VERSION})"
        if request.key != self.key:
            return "another key"
        changed = self.snapshot.changed()
        if changed is not None:
            self._stop(f"stale: {changed}")
            return f"stale: {changed}"
        return None

    def _reply(self, conn: socket.socket, message: Reply | End) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(_line(message))

    def _hand_over(self, request: Request, fds: list[int], conn: socket.socket) -> tuple[int, int]:
        """The (pid, pidfd) of the process now running `request`: the zygote, or a new child
        (which closes `conn`, the server's end of the client's socket)."""
        line = request.model_dump_json().encode() + b"\n"
        if self.zygote is not None:
            pid, channel, pidfd = self.zygote
            self.zygote = None
            self.selector.unregister(pidfd)
            try:
                socket.send_fds(channel, [line], fds)
                return pid, pidfd
            except OSError as exc:
                os.close(pidfd)  # the zygote died: reap it, then a child of its own
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                log(f"the zygote {pid} had ended ({exc}); the command gets a new child")
            finally:
                channel.close()

        def child() -> NoReturn:
            conn.close()
            _become(request, fds, None, self.said)

        pid = self._fork(child)
        return pid, os.pidfd_open(pid)

    def _fork(self, child: Callable[[], NoReturn]) -> int:
        """Fork a child in its own process group that runs `child` with none of our sockets."""
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                self._close_inherited()
                child()
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(1)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also here: a signal relayed at once finds the group
        return pid

    def _close_inherited(self) -> None:
        """In a child: close the server's sockets and descriptors (through their objects, so
        none is closed twice), and take the default signal handlers back."""
        if self.listener is not None:
            self.listener.close()
        self.lock.close()
        signal.set_wakeup_fd(-1)
        for end in self.wakeup:
            end.close()
        for conn, pidfd in self.running.values():
            conn.close()
            os.close(pidfd)
        if self.zygote is not None:
            self.zygote[1].close()
            os.close(self.zygote[2])
        self.selector.close()
        for signum in (*RELAYED, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def _prepare_zygote(self) -> None:
        channel, theirs = socket.socketpair()
        pid = self._fork(lambda: _zygote(theirs, channel, self.home, self.said))
        theirs.close()
        pidfd = os.pidfd_open(pid)
        self.zygote = (pid, channel, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, lambda _: self._zygote_died(pid))

    def _zygote_died(self, pid: int) -> None:
        if self.zygote is None or self.zygote[0] != pid:
            return
        _, channel, pidfd = self.zygote
        self.zygote = None
        self.selector.unregister(pidfd)
        os.close(pidfd)
        channel.close()
        _, status = os.waitpid(pid, 0)
        log(f"the zygote ended on its own (status {status}); commands get a new child")

    def _end_zygote(self) -> None:
        if self.zygote is not None:
            pid, channel, pidfd = self.zygote
            self.zygote = None
            channel.close()  # the zygote reads the end of its channel and leaves
            os.waitpid(pid, 0)
            os.close(pidfd)

    def _ended(self, pid: int) -> None:
        conn, pidfd = self.running.pop(pid)
        self.selector.unregister(pidfd)
        if conn.fileno() in self.selector.get_map():
            self.selector.unregister(conn)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            end = End(exit=128 + os.WTERMSIG(status), signal=os.WTERMSIG(status))
        else:
            end = End(exit=os.waitstatus_to_exitcode(status))
        log(f"{pid} ended: exit {end.exit}")  # before the client hears it and goes on
        self._reply(conn, end)
        conn.close()
        if not self.running:
            self.idle_since = time.monotonic()

    def _client_spoke(self, pid: int) -> None:
        """The client closed its end (it was killed): end its command, as its death would."""
        conn, _ = self.running[pid]
        try:
            data = conn.recv(1)
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(conn)
            for signum in (signal.SIGTERM, signal.SIGCONT):  # a stopped command (its client
                with contextlib.suppress(OSError):  # was stopped too) would never end
                    os.killpg(pid, signum)
            log(f"the client of {pid} went away: its command was sent SIGTERM")


def _line(message: Hello | Reply | End) -> bytes:
    return message.model_dump_json().encode() + b"\n"


def _zygote(channel: socket.socket, ours: socket.socket, home: str, said: list[str]) -> NoReturn:
    """A child forked ahead: start the sandbox early in `home` (the folder the server started
    in), then wait for a command. The launch measures its guards against the working folder
    (`isolation.hidden_probes`), so a command from another folder gets a launch of its own,
    started in its folder as a cold run's is. Only a server that imported the launcher starts
    one, and that server imported what launching imports too (`launch.import_ahead`): a zygote
    importing code of its own would keep it, outside the snapshot, for its command."""
    from generator.cli.early_sandbox import EarlySandbox, launch_now

    ours.close()
    try:
        os.chdir(home)
        early = EarlySandbox(launch_now() if _LAUNCHER in sys.modules else None)
    except OSError:
        early = EarlySandbox()
    try:
        data, fds, _, _ = socket.recv_fds(channel, 1 << 16, 3)
    except OSError:
        data, fds = b"", []
    channel.close()
    if not data:
        early.discard()
        os._exit(0)
    request = Request.model_validate_json(data)
    launch = early.take()
    if launch is not None:
        unlike = _unlike_a_cold_launch(launch, request, home)
        if unlike is not None:
            launch.kill()  # start one as a cold run would
            log(f"the sandbox started ahead in {home} was not used ({unlike})")
            launch = None
    _become(request, list(fds), EarlySandbox(launch) if launch is not None else None, said)


def _unlike_a_cold_launch(launch: Launch, request: Request, home: str) -> str | None:
    """Why the sandbox a zygote started ahead in `home` is not what the command's cold run
    would start (None: it is)."""
    if launch.process.poll() is not None:
        return "it ended while waiting"
    if request.cwd != home:
        return f"the command runs in {request.cwd}"
    return launch.wrapped_otherwise_now()


def _become(request: Request, fds: list[int], early: Any, said: list[str]) -> NoReturn:
    """Turn this child into the client's command: its streams, folder, arguments, umask —
    and the warnings importing raised, on its standard error, as a cold start prints them."""
    from generator.cli import run_command
    from generator.cli.early_sandbox import EarlySandbox

    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request.cwd)
    os.umask(request.umask)
    for name in keys.POSITIONAL_ENV:
        os.environ.pop(name, None)
    os.environ.update(request.positional_env)
    for signum in request.ignored:
        signal.signal(signum, signal.SIG_IGN)
    sys.argv = [request.argv0, *request.argv]
    importlib.invalidate_caches()  # folder listings the server's finders kept: read them anew
    _reopen_streams()
    for warning in said:
        sys.stderr.write(warning)
    run_command(request.argv, early if early is not None else EarlySandbox.start(request.argv))


def _reopen_streams() -> None:
    """Standard streams on the client's descriptors, buffered as Python buffers them there:
    unbuffered output when the server's own is (started with the client's `-u`, or with its
    PYTHONUNBUFFERED)."""
    made = []
    for fd, old in ((0, sys.__stdin__), (1, sys.__stdout__), (2, sys.__stderr__)):
        encoding = getattr(old, "encoding", None) or "utf-8"
        errors = getattr(old, "errors", None) or "strict"
        unbuffered = fd != 0 and bool(getattr(old, "write_through", False))
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        buffered: Any = raw  # a buffer wrapped around it would close it when collected
        if not unbuffered:
            buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        line = fd == 2 or (fd == 1 and os.isatty(fd))
        made.append(
            io.TextIOWrapper(
                buffered,
                encoding,
                errors,
                line_buffering=line,
                write_through=unbuffered,
            )
        )
    for name, stream in zip(("stdin", "stdout", "stderr"), made, strict=True):
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
