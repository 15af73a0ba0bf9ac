"""The sandboxed worker: `python -m toolkit.sandbox.worker --fd N`, started by `WorkerPool`.

The worker is a small fork server. Its long-lived process imports the toolkit once, then for
each job forks a fresh job process that applies the per-job rlimits and guards, loads the judge
and runs it; judge code never runs in the long-lived process, so one judge cannot tamper with
the next. The long-lived process relays whole frames between the job and the parent, enforces
the wall-clock timeout, captures the job's stdout/stderr tails and reports how it ended.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import importlib
import os
import resource
import selectors
import shutil
import signal
import socket
import sys
import time
import traceback
from collections import deque
from typing import Any

from toolkit.sandbox.confinement import measure_worker_guards, vm_size_bytes
from toolkit.sandbox.job import job_process
from toolkit.sandbox.protocol import (
    Call,
    FrameBuffer,
    JobEnd,
    JobStart,
    Outcome,
    OutputTail,
    ProtocolError,
    Ready,
    Reply,
    Shutdown,
    decode,
    encode,
)

_READ_CHUNK = 1 << 16
# Everything a judge imports is loaded before the guards go up: `toolkit` loads its names lazily,
# and `toolkit.checks` pulls in tldextract → urllib3, which opens a socket at import time.
_WARM_MODULES = (
    "toolkit",
    "toolkit.evaluator",
    "toolkit.checks",
    "toolkit.compat",
    "toolkit.tools.maps",
)


# -- the long-lived process: fork, relay, watch ---------------------------------------------


def _wipe(directory: str) -> None:
    """Remove everything a job left in the scratch directory, so the next job starts clean."""
    for entry in os.scandir(directory):
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


class Worker:
    """The long-lived side of the worker: one socket to the parent, one job at a time."""

    def __init__(self, sock: socket.socket, job_filter: bytes, guards: list[str]) -> None:
        self.sock = sock
        self.frames = FrameBuffer()
        self.inbox: deque[Any] = deque()
        self.shutdown = False
        self.baseline = vm_size_bytes()
        self.job_filter = job_filter
        self.guards = guards

    def serve(self) -> int:
        """Announce readiness, then run jobs until the parent says stop or goes away."""
        gc.freeze()
        self.sock.sendall(encode(Ready(pid=os.getpid(), guards=self.guards)))
        while not self.shutdown:
            message = self._next_message()
            if message is None or isinstance(message, Shutdown):
                return 0
            if isinstance(message, JobStart):
                self._run_job(message)
        return 0

    def _next_message(self) -> Any:
        while not self.inbox:
            chunk = self.sock.recv(_READ_CHUNK)
            if not chunk:
                return None
            self.inbox.extend(decode(body) for body in self.frames.feed(chunk))
        return self.inbox.popleft()

    def _run_job(self, start: JobStart) -> None:
        parent_end, job_end = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.setpgid(0, 0)
                self.sock.close()
                parent_end.close()
                os.close(out_r)
                os.close(err_r)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.close(out_w)
                os.close(err_w)
                code = job_process(job_end, start, self.baseline, self.job_filter, self.guards)
            except BaseException:
                traceback.print_exc()
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        job_end.close()
        os.close(out_w)
        os.close(err_w)
        relay = _Relay(self, start, pid, parent_end, out_r, err_r)
        end = relay.run()
        _wipe(os.getcwd())
        self.sock.sendall(encode(end))


class _Relay:
    """Moves frames between the parent and one job process until the job process is gone."""

    def __init__(
        self,
        worker: Worker,
        start: JobStart,
        pid: int,
        job: socket.socket,
        out_fd: int,
        err_fd: int,
    ) -> None:
        self.worker, self.start, self.pid, self.job = worker, start, pid, job
        self.job.setblocking(False)
        self.job_frames = FrameBuffer()
        self.to_job = bytearray()
        self.outcome_sent = False
        self.protocol_error: str | None = None
        limit = start.limits.max_output_bytes
        self.tails = {out_fd: OutputTail(limit), err_fd: OutputTail(limit)}
        self.pidfd = os.pidfd_open(pid)
        self.selector = selectors.DefaultSelector()

    def run(self) -> JobEnd:
        """Relay until the job process exits or times out; then report how it ended."""
        deadline = time.monotonic() + self.start.limits.timeout_s
        timed_out = False
        sel = self.selector
        sel.register(self.worker.sock, selectors.EVENT_READ, "parent")
        sel.register(self.job, selectors.EVENT_READ, "job")
        sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        for fd in self.tails:
            sel.register(fd, selectors.EVENT_READ, "output")
        exited = False
        for message in list(self.worker.inbox):
            self._from_parent(message)
        self.worker.inbox.clear()
        while not exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                self._kill()
                break
            for key, events in sel.select(timeout=remaining):
                exited |= self._handle(key, events)
            self._update_job_interest()
        status = self._reap()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self._drain()
        sel.close()
        os.close(self.pidfd)
        for fd in self.tails:
            os.close(fd)
        self.job.close()
        tails = list(self.tails.values())
        return JobEnd(
            job_id=self.start.job_id,
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            timed_out=timed_out,
            protocol_error=self.protocol_error,
            stdout_tail=tails[0].text(),
            stderr_tail=tails[1].text(),
        )

    def _handle(self, key: selectors.SelectorKey, events: int) -> bool:
        if key.data == "exit":
            return True
        if key.data == "parent":
            chunk = self.worker.sock.recv(_READ_CHUNK)
            if not chunk:
                self.worker.shutdown = True
                self._kill()
                return True
            for body in self.worker.frames.feed(chunk):
                self._from_parent(decode(body))
        elif key.data == "output":
            chunk = os.read(key.fd, _READ_CHUNK)
            if chunk:
                self.tails[key.fd].add(chunk)
            else:
                self.selector.unregister(key.fd)
        elif key.data == "job":
            if events & selectors.EVENT_WRITE and self.to_job:
                with contextlib.suppress(BlockingIOError, InterruptedError):
                    sent = self.job.send(self.to_job)
                    del self.to_job[:sent]
            if events & selectors.EVENT_READ:
                self._read_job()
        return False

    def _from_parent(self, message: Any) -> None:
        if isinstance(message, Reply) and message.job_id == self.start.job_id:
            self.to_job += encode(message)
        elif isinstance(message, Shutdown):
            self.worker.shutdown = True

    def _read_job(self) -> None:
        try:
            chunk = self.job.recv(_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self.job)
            return
        if self.protocol_error is not None:
            return
        try:
            for body in self.job_frames.feed(chunk):
                self._from_job(decode(body))
        except ProtocolError as exc:
            self.protocol_error = str(exc)
            self._kill()

    def _from_job(self, message: Any) -> None:
        if isinstance(message, Call) and message.job_id == self.start.job_id:
            self.worker.sock.sendall(encode(message))
        elif isinstance(message, Outcome) and not self.outcome_sent:
            message.job_id = self.start.job_id
            self.outcome_sent = True
            self.worker.sock.sendall(encode(message))
        else:
            raise ProtocolError(f"unexpected '{message.type}' message from the job process")

    def _update_job_interest(self) -> None:
        try:
            key = self.selector.get_key(self.job)
        except (KeyError, ValueError):
            return
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.to_job else 0)
        if key.events != wanted:
            self.selector.modify(self.job, wanted, "job")

    def _kill(self) -> None:
        """Kill the job's whole process group (the job process leads its own group)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def _reap(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        return status

    def _drain(self) -> None:
        """Read what the job wrote before it ended (its last frames and output)."""
        for fd, tail in self.tails.items():
            os.set_blocking(fd, False)
            with contextlib.suppress(BlockingIOError, OSError):
                while chunk := os.read(fd, _READ_CHUNK):
                    tail.add(chunk)
        if self.protocol_error is None:
            with contextlib.suppress(BlockingIOError, OSError, ProtocolError):
                while chunk := self.job.recv(_READ_CHUNK):
                    for body in self.job_frames.feed(chunk):
                        self._from_job(decode(body))


def _read_fd(fd: int | None) -> bytes:
    if fd is None:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process."""
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
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable()
    for name in _WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sock = socket.socket(fileno=args.fd)
    sock.setblocking(True)
    worker = Worker(sock, _read_fd(args.job_filter_fd), measure_worker_guards(args.hidden))
    try:
        return worker.serve()
    except (ProtocolError, OSError) as exc:
        print(f"judgegen worker: stopping: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
