"""The sandboxed worker: `python -m toolkit.runner.worker --fd N`, started by `WorkerPool`.

The worker is a small fork server. Its long-lived process imports the toolkit once, then for
each job forks a fresh job process that applies the per-job rlimits and guards, loads the judge
and runs it; judge code never runs in the long-lived process, so one judge cannot tamper with
the next. The long-lived process relays whole frames between the job and the parent, enforces
the wall-clock timeout, captures the job's stdout/stderr tails and reports how it ended.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import faulthandler
import gc
import importlib
import itertools
import json
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

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded, InfraError
from toolkit.runner.loader import load_judge
from toolkit.runner.protocol import (
    Call,
    EvalOutcome,
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
    error_dict,
    read_message,
)
from toolkit.runner.sandbox import (
    Guard,
    SandboxViolation,
    apply_job_limits,
    hide_credentials,
    make_filesystem_readonly,
    vm_size_bytes,
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
_TRACEBACK_CHARS = 8000


# -- the job process: channel and the proxies the judge talks to ----------------------------


def _reply_error(error: dict[str, Any]) -> InfraError:
    kind = str(error.get("kind") or "backend")
    message = f"{error.get('type', 'Error')}: {error.get('message', '')}"
    if kind == "budget":
        return BudgetExceeded(message)
    return InfraError(message, kind=kind)


class Channel:
    """The job's side of the broker channel: concurrent calls multiplexed by call id."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, job_id: int
    ) -> None:
        self._reader, self._writer, self.job_id = reader, writer, job_id
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self._reader_task: asyncio.Task[None] | None = None
        self._closed: str | None = None

    def start(self) -> None:
        """Start reading replies in the background."""
        self._reader_task = asyncio.get_running_loop().create_task(self._read_replies())

    async def call(self, method: str, payload: dict[str, Any]) -> Any:
        """Send one call and wait for its reply; an error reply raises `InfraError`."""
        if self._closed:
            raise InfraError(f"broker channel closed: {self._closed}", kind="channel")
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            message = Call(job_id=self.job_id, call_id=call_id, method=method, payload=payload)
            await self.send(message)
            return await future
        finally:
            self._pending.pop(call_id, None)

    async def send(self, message: Call | Outcome) -> None:
        """Write one frame (frames never interleave)."""
        frame = encode(message)
        async with self._lock:
            self._writer.write(frame)
            await self._writer.drain()

    async def _read_replies(self) -> None:
        reason = "the parent closed the channel"
        try:
            while (message := await read_message(self._reader)) is not None:
                if isinstance(message, Reply):
                    self._resolve(message)
        except (ProtocolError, OSError) as exc:
            reason = str(exc)
        self._closed = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(InfraError(f"broker channel closed: {reason}", kind="channel"))

    def _resolve(self, reply: Reply) -> None:
        future = self._pending.get(reply.call_id)
        if future is None or future.done():
            return
        if reply.error is not None:
            future.set_exception(_reply_error(reply.error))
        else:
            future.set_result(reply.result)

    async def close(self) -> None:
        """Flush and close the channel."""
        if self._reader_task is not None:
            self._reader_task.cancel()
        with contextlib.suppress(OSError):
            self._writer.close()
            await self._writer.wait_closed()


class BrokerBackend:
    """A `JudgingBackend` whose requests travel to the parent's real backend."""

    def __init__(
        self, channel: Channel, model: str | None = None, extract_model: str | None = None
    ) -> None:
        self._channel = channel
        self.model = model
        self.extract_model = extract_model

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        """Send the request without its template class; the Evaluator validates the dict."""
        payload = request.model_dump(mode="json", exclude={"template_class"})
        result = await self._channel.call("extract", payload)
        return result if isinstance(result, dict) else {}

    async def verify(self, request: VerifyRequest) -> Verdict:
        """Send the verification; the parent answers with a `Verdict`."""
        result = await self._channel.call("verify", request.model_dump(mode="json"))
        return Verdict.model_validate(result)


class BrokerPages:
    """A page source answered by the parent's page store (`screenshot` only when it has one)."""

    def __init__(self, channel: Channel, screenshots: bool) -> None:
        self._channel = channel
        if screenshots:
            self.screenshot = self._screenshot

    async def get(self, url: str) -> str | None:
        """The page text, or None when the page is missing."""
        return await self._channel.call("page_get", {"url": url})

    async def _screenshot(self, url: str) -> str | None:
        return await self._channel.call("page_screenshot", {"url": url})


class BrokerTools:
    """A `ToolCaller` answered by the parent's tool providers."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call tool `name` in the parent with JSON arguments."""
        return await self._channel.call("tool", {"name": name, "args": args})


# -- the job process: running the judge ----------------------------------------------------


def _exception_kind(exc: BaseException) -> str:
    if isinstance(exc, InfraError):
        return exc.kind
    if isinstance(exc, SandboxViolation):
        return "sandbox_violation"
    if isinstance(exc, MemoryError):
        return "memory_limit"
    if isinstance(exc, SystemExit):
        return "judge_exit"
    return "judge_exception"


def _exception_error(exc: BaseException, stage: str, kind: str | None = None) -> dict[str, Any]:
    if isinstance(exc, MemoryError) and exc.__traceback__ is not None:
        traceback.clear_frames(exc.__traceback__)
    try:
        text = "".join(traceback.format_exception(exc))[-_TRACEBACK_CHARS:]
    except MemoryError:
        text = None
    message = str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError):
        message = "the judge ran out of memory (address-space limit reached)"
    kind = kind or _exception_kind(exc)
    return error_dict(type(exc).__name__, kind, f"{stage}: {message}", text)


def _first_unserializable(value: Any, path: str = "summary") -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has a non-string key {key!r}"
            found = _first_unserializable(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_unserializable(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(value, float) and value != value:
        return f"{path} is NaN"
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return f"{path} is a {type(value).__name__}"


def _check_summary(summary: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    if summary is None:
        return None, None
    if not isinstance(summary, dict):
        problem = f"the judge returned a {type(summary).__name__}, not a summary dict"
        return None, error_dict("TypeError", "summary_not_serializable", problem)
    try:
        json.dumps(summary, allow_nan=False)
    except (TypeError, ValueError) as exc:
        where = _first_unserializable(summary) or str(exc)
        problem = f"the summary does not serialize to JSON: {where}"
        return None, error_dict(type(exc).__name__, "summary_not_serializable", problem)
    return summary, None


async def _run_judge(
    channel: Channel, start: JobStart, errors: list[dict[str, Any]]
) -> tuple[Any, str | None]:
    """Load and run the judge; returns its summary (partial if it raised) and its task id."""
    job = start.job
    try:
        judge = load_judge(job.judge_path)
    except BaseException as exc:
        errors.append(_exception_error(exc, "loading the judge failed", "judge_load"))
        return None, job.task_id
    try:
        summary, _ = await judge.run(
            backend=BrokerBackend(channel, start.backend_model, start.backend_extract_model),
            answer=job.answer,
            pages=BrokerPages(channel, start.screenshots) if start.pages else None,
            agent_name=job.agent_name,
            answer_name=job.answer_name,
            tools=BrokerTools(channel),
        )
    except BaseException as exc:
        errors.append(_exception_error(exc, "the judge raised"))
        summary = _partial_summary(exc, errors)
    return summary, job.task_id or judge.task_id


async def _evaluate(channel: Channel, start: JobStart, guard: Guard) -> EvalOutcome:
    """The job's outcome: `complete` only for a serializable, complete summary and no errors."""
    errors: list[dict[str, Any]] = []
    summary, task_id = await _run_judge(channel, start, errors)
    summary, problem = _check_summary(summary)
    if problem:
        errors.append(problem)
    reported = " ".join(str(entry.get("message")) for entry in errors)
    errors.extend(
        error_dict("SandboxViolation", "sandbox_violation", violation)
        for violation in guard.violations
        if violation not in reported
    )
    complete = summary is not None and not errors and summary.get("status") == "complete"
    if summary is not None and not complete:
        summary["status"] = "incomplete"
    return EvalOutcome(
        status="complete" if complete else "incomplete",
        task_id=task_id,
        agent_name=start.job.agent_name,
        answer_name=start.job.answer_name,
        summary=summary,
        errors=_dedupe(errors),
    )


def _partial_summary(exc: BaseException, errors: list[dict[str, Any]]) -> dict[str, Any] | None:
    evaluator = getattr(exc, "__evaluator__", None)
    if evaluator is None:
        return None
    try:
        return evaluator.get_summary()
    except BaseException as inner:
        errors.append(_exception_error(inner, "building the partial summary failed"))
        return None


def _dedupe(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    unique = []
    for entry in errors:
        key = json.dumps(entry, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return unique


async def _job_main(sock: socket.socket, start: JobStart) -> None:
    """Run the job, send its outcome, and leave at once (threads a judge left behind die)."""
    guard = Guard(allow_network=start.limits.network)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    channel = Channel(reader, writer, start.job_id)
    channel.start()
    sys.addaudithook(guard.hook)
    guard.active = True
    outcome = await _evaluate(channel, start, guard)
    try:
        await channel.send(Outcome(job_id=start.job_id, outcome=outcome))
    except ProtocolError as exc:
        message = f"the outcome cannot be sent: {exc}"
        fallback = EvalOutcome.failure(start.job, "protocol_violation", message)
        await channel.send(Outcome(job_id=start.job_id, outcome=fallback))
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _job_process(sock: socket.socket, start: JobStart, baseline: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    apply_job_limits(start.limits, baseline)
    asyncio.run(_job_main(sock, start))
    return 0


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

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.frames = FrameBuffer()
        self.inbox: deque[Any] = deque()
        self.shutdown = False
        self.baseline = vm_size_bytes()
        self.guards = ["rlimits", "audit", "seccomp"]

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
                code = _job_process(job_end, start, self.baseline)
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process."""
    parser = argparse.ArgumentParser(prog="python -m toolkit.runner.worker")
    parser.add_argument("--fd", type=int, required=True, help="inherited socket to the parent")
    parser.add_argument(
        "--readonly-fs",
        action="store_true",
        help="remount everything but the cwd read-only (only in a private mount namespace)",
    )
    parser.add_argument(
        "--scratch-mb", type=int, default=None, help="with --readonly-fs: cwd becomes a tmpfs"
    )
    parser.add_argument(
        "--hide-under",
        action="append",
        help="with --readonly-fs: hide well-known credential files in this directory",
    )
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable()
    for name in _WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sock = socket.socket(fileno=args.fd)
    sock.setblocking(True)
    worker = Worker(sock)
    if args.readonly_fs:
        for directory in args.hide_under or []:
            hide_credentials(directory)
        failed = make_filesystem_readonly(os.getcwd(), args.scratch_mb)
        if failed:
            print(f"judgegen worker: could not make read-only: {failed}", file=sys.stderr)
        else:
            worker.guards.append("readonly_fs")
    try:
        return worker.serve()
    except (ProtocolError, OSError) as exc:
        print(f"judgegen worker: stopping: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
