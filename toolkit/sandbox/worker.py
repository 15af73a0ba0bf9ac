"""The sandboxed fork server: `python -m toolkit.sandbox.worker --fd N`, started by `launch`.

One long-lived process per run imports the toolkit once, then forks a fresh job process for
every `Spawn`, as many at a time as the parent asks for. A job process applies the per-job
rlimits and guards, then talks to the parent directly over the socket that came with its
`Spawn` (SCM_RIGHTS): the fork server never reads a job's frames. It only enforces each job's
wall-clock timeout, keeps its stdout/stderr tails, gives it a private scratch directory, and
reports how it ended. Judge code never runs in the long-lived process.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import importlib
import os
import resource
import secrets
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections import deque
from dataclasses import dataclass, field

from toolkit.sandbox.confinement import make_undumpable, measure_worker_guards, vm_size_bytes
from toolkit.sandbox.job import job_process
from toolkit.sandbox.protocol import (
    FrameBuffer,
    JobEnd,
    Kill,
    OutputTail,
    ProtocolError,
    Ready,
    Spawn,
    decode,
    encode,
)
from toolkit.util.code_files import loaded_files, mapped_libraries

_READ_CHUNK = 1 << 16
_MAX_FDS_PER_READ = 64
# Everything a judge imports is loaded before `Ready` (`toolkit` loads its names lazily), so
# every job inherits it. What would delay `Ready` by more than it saves the first jobs is built
# once the server is idle: the machinery of a template's schema (~4 ms here, 0.4–1.6 ms in
# each job), then the suffix list that only some judges need (~60 ms).
# pydantic imports `_dataclasses` the first time a model class is built: a judge's own
# models would otherwise import it in every job.
_WARM_MODULES = (
    "toolkit",
    "toolkit.evaluator",
    "toolkit.checks",
    "toolkit.compat",
    "toolkit.tools.maps",
    "pydantic._internal._dataclasses",
)
_IDLE_WARMUPS = ("toolkit.backends:warm_template_schemas", "toolkit.checks.domains:suffix_list")
# Warm-ups wait for `_warm_due`: quiet this long once jobs were spawned, or this long after
# `Ready` in any case.
_QUIET_S = 0.03
_WARM_BY_S = 1.0


@dataclass
class _Job:
    """One job process as the fork server sees it."""

    spawn: Spawn
    pid: int
    pidfd: int
    outputs: dict[int, OutputTail]
    scratch: str
    deadline: float
    timed_out: bool = False
    fds: list[int] = field(default_factory=list)


class ForkServer:
    """Forks job processes on demand and watches them; one control socket to the parent."""

    def __init__(
        self,
        sock: socket.socket,
        job_filter: bytes,
        guards: list[str],
        importing_since_ns: int | None = None,
    ) -> None:
        self.sock = sock
        self.importing_since_ns = importing_since_ns
        self.frames = FrameBuffer()
        self.fds: deque[int] = deque()  # job sockets received, in the order of their Spawns
        self.jobs: dict[int, _Job] = {}
        self.by_fd: dict[int, _Job] = {}
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self.baseline = vm_size_bytes()
        self.job_filter = job_filter
        self.guards = guards
        self.scratch_root = os.getcwd()
        self.idle_warmups = deque(_IDLE_WARMUPS)
        self.spawned = False

    def serve(self) -> int:
        """Announce readiness, then spawn and watch jobs until the parent goes away."""
        gc.freeze()
        gc.enable()  # off while the server started (`toolkit.sandbox.start`); jobs collect
        with contextlib.suppress(OSError):
            os.chmod(self.scratch_root, 0o711)  # a job can enter its own directory, not list
        code = loaded_files(self.importing_since_ns) | mapped_libraries()  # paths as outside
        ready = Ready(pid=os.getpid(), guards=self.guards, code=code)
        self.sock.sendall(encode(ready))
        self.selector.register(self.sock, selectors.EVENT_READ, None)
        warm_by = time.monotonic() + _WARM_BY_S
        while not self.stopping:
            waiting = [job.deadline for job in self.jobs.values() if not job.timed_out]
            deadline = min(waiting, default=None)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self.idle_warmups:
                idle = _QUIET_S if self.spawned else max(0.0, warm_by - time.monotonic())
                timeout = idle if timeout is None else min(timeout, idle)
            events = self.selector.select(timeout)
            for key, _ in events:
                if key.data is None:
                    self._from_parent()
                elif key.fd not in self.by_fd:
                    continue  # the job ended earlier in this batch
                elif key.fd == key.data.pidfd:
                    self._end(key.data)
                else:
                    self._output(key.data, key.fd)
            self._expire()
            due = _warm_due(self.spawned, quiet=not events, late=time.monotonic() >= warm_by)
            if self.idle_warmups and due:
                _warm(self.idle_warmups.popleft())
        for job in list(self.jobs.values()):
            _kill(job.pid)
            self._end(job)
        return 0

    def _from_parent(self) -> None:
        try:
            chunk, fds, flags, _ = socket.recv_fds(self.sock, _READ_CHUNK, _MAX_FDS_PER_READ)
        except OSError:
            chunk, fds, flags = b"", [], 0
        self.fds.extend(fds)
        if flags & socket.MSG_CTRUNC:
            raise ProtocolError("job sockets were lost in transit (too many at once)")
        if not chunk:
            self.stopping = True
            return
        for body in self.frames.feed(chunk):
            message = decode(body)
            if isinstance(message, Spawn):
                if not self.fds:
                    raise ProtocolError(f"job {message.job_id} arrived without its socket")
                self._spawn(message, self.fds.popleft())
            elif isinstance(message, Kill):
                job = self.jobs.get(message.job_id)
                if job is not None:
                    _kill(job.pid)
            else:
                raise ProtocolError(f"unexpected '{message.type}' message from the parent")

    def _spawn(self, spawn: Spawn, channel_fd: int) -> None:
        scratch = os.path.join(self.scratch_root, f"job-{spawn.job_id}-{secrets.token_hex(8)}")
        os.mkdir(scratch, 0o700)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._become_job(spawn, channel_fd, scratch, (out_r, out_w, err_r, err_w))
        os.close(channel_fd)
        os.close(out_w)
        os.close(err_w)
        limit = spawn.limits.max_output_bytes
        job = _Job(
            spawn=spawn,
            pid=pid,
            pidfd=os.pidfd_open(pid),
            outputs={out_r: OutputTail(limit), err_r: OutputTail(limit)},
            scratch=scratch,
            deadline=time.monotonic() + spawn.limits.timeout_s,
        )
        job.fds = [job.pidfd, out_r, err_r]
        self.jobs[spawn.job_id] = job
        self.spawned = True
        for fd in job.fds:
            self.by_fd[fd] = job
            self.selector.register(fd, selectors.EVENT_READ, job)

    def _become_job(
        self, spawn: Spawn, channel_fd: int, scratch: str, pipes: tuple[int, int, int, int]
    ) -> None:
        """The forked child: drop every descriptor that is not its own, then run the job."""
        code = 70
        try:
            os.setpgid(0, 0)
            out_r, out_w, err_r, err_w = pipes
            self.selector.close()
            self.sock.close()
            for fd in [*self.by_fd, *self.fds, out_r, err_r]:
                with contextlib.suppress(OSError):
                    os.close(fd)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.close(out_w)
            os.close(err_w)
            os.chdir(scratch)
            os.environ.update(HOME=scratch, TMPDIR=scratch)
            tempfile.tempdir = scratch
            channel = socket.socket(fileno=channel_fd)
            code = job_process(channel, spawn, self.baseline, self.job_filter, self.guards)
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _output(self, job: _Job, fd: int) -> None:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except OSError:
            chunk = b""
        if chunk:
            job.outputs[fd].add(chunk)
        else:
            self.selector.unregister(fd)

    def _expire(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            if not job.timed_out and now >= job.deadline:
                job.timed_out = True
                _kill(job.pid)

    def _end(self, job: _Job) -> None:
        """Reap the job, keep the last of its output, clean its scratch, tell the parent."""
        _, status, usage = os.wait4(job.pid, 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)
        for fd in job.fds:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(fd)
            if fd in job.outputs:
                os.set_blocking(fd, False)
                with contextlib.suppress(BlockingIOError, OSError):
                    while chunk := os.read(fd, _READ_CHUNK):
                        job.outputs[fd].add(chunk)
            os.close(fd)
            self.by_fd.pop(fd, None)
        del self.jobs[job.spawn.job_id]
        shutil.rmtree(job.scratch, ignore_errors=True)
        stdout, stderr = (tail.text() for tail in job.outputs.values())
        end = JobEnd(
            job_id=job.spawn.job_id,
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            timed_out=job.timed_out,
            stdout_tail=stdout,
            stderr_tail=stderr,
            cpu_s=round(usage.ru_utime + usage.ru_stime, 6),
        )
        with contextlib.suppress(OSError):
            self.sock.sendall(encode(end))


def _warm_due(spawned: bool, *, quiet: bool, late: bool) -> bool:
    """Whether an idle warm-up may run now: once the server has spawned jobs and then been
    quiet for `_QUIET_S`, or when it is `_WARM_BY_S` after `Ready` (`late`) whatever happens.
    Never merely because no job came yet: the parent may be ready long after the server, and
    its first spawns, arriving during a warm-up, would wait for all of it (~60 ms)."""
    return (spawned and quiet) or late


def _warm(target: str) -> None:
    """Call `module:function` once so later jobs inherit what it builds (a cache); a warm-up
    that fails only costs the jobs that need it the time to build it themselves."""
    module, _, name = target.partition(":")
    with contextlib.suppress(Exception):
        getattr(importlib.import_module(module), name)()
        gc.freeze()  # what it built stays out of the jobs' collections (pages stay shared)


def _kill(pid: int) -> None:
    """Kill a job's whole process group (the job process leads its own group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _read_fd(fd: int | None) -> bytes:
    if fd is None:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def main(argv: list[str] | None = None, importing_since_ns: int | None = None) -> int:
    """Entry point of the fork server; `importing_since_ns`: when its process began importing
    (`start.STARTED_NS`; by default, now), so a code file changed since reads as changed."""
    if importing_since_ns is None:
        importing_since_ns = time.time_ns()
    parser = argparse.ArgumentParser(prog="python -m toolkit.sandbox.worker")
    parser.add_argument("--fd", type=int, required=True, help="inherited socket to the parent")
    parser.add_argument("--job-filter-fd", type=int, help="inherited fd with the job's BPF filter")
    parser.add_argument(
        "--hidden",
        action="append",
        default=[],
        help="a host path that must be invisible here (measures the file-system allow-list)",
    )
    args = parser.parse_args(argv)
    make_undumpable()  # jobs share its PID namespace: none may write into its memory
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable()
    for name in _WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sock = socket.socket(fileno=args.fd)
    sock.setblocking(True)
    guards = measure_worker_guards(args.hidden)
    server = ForkServer(sock, _read_fd(args.job_filter_fd), guards, importing_since_ns)
    try:
        return server.serve()
    except (ProtocolError, OSError) as exc:
        print(f"judgegen fork server: stopping: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
