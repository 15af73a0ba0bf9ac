"""Parent side of the sandbox: worker processes and a pool of them sharing one broker.

Workers are wrapped as `toolkit.sandbox.isolation` finds possible and talk to the parent over
an inherited socket. Whatever a judge does, `WorkerPool.evaluate` returns an `EvalOutcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.evaluator import PageSource
from toolkit.runner.judging import with_errors
from toolkit.sandbox import seccomp
from toolkit.sandbox.broker import Broker, ToolProvider
from toolkit.sandbox.isolation import (
    SCRATCH,
    Isolation,
    hidden_probes,
    probe_isolation,
    scrubbed_environment,
)
from toolkit.sandbox.protocol import (
    Call,
    EvalJob,
    EvalOutcome,
    JobEnd,
    JobStart,
    Outcome,
    OutputTail,
    ProtocolError,
    Ready,
    Reply,
    SandboxLimits,
    Shutdown,
    encode,
    error_dict,
    read_message,
)

STARTUP_TIMEOUT_S = 60.0
KILL_GRACE_S = 5.0
MAX_CALLS_IN_FLIGHT = 256
SCRATCH_FILES = 4  # the scratch tmpfs holds this many files of the largest allowed size
REQUIRED_KIND = "sandbox_required"
_SIGNAL_KINDS = {signal.SIGXCPU: "cpu_limit", signal.SIGKILL: "killed"}


def _memfd(name: str, data: bytes) -> int | None:
    """An anonymous in-memory file holding `data`, rewound (what bwrap and the worker read)."""
    if not data:
        return None
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


PROBE_NAME = "host-only"


def _host_probe_dir() -> str:
    """A host temp dir with one file, which a worker must not see (measures the allow-list)."""
    directory = tempfile.mkdtemp(prefix="judgegen-probe-")
    Path(directory, PROBE_NAME).write_text("a host file no judge may see\n")
    return directory


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker of a pool is started with: the wrapper, both filters, the probes."""

    isolation: Isolation
    sandbox_filter: bytes = b""
    job_filter: bytes = b""
    hidden: tuple[str, ...] = ()


async def prepare_setup(network: bool, probe_file: str) -> tuple[WorkerSetup, str | None]:
    """Probe bubblewrap and build the seccomp filters (concurrently); returns the setup and
    any warning."""
    filters = asyncio.ensure_future(
        asyncio.to_thread(lambda: (seccomp.sandbox_filter(), seccomp.job_filter(network)))
    )
    isolation = await probe_isolation(network)
    warnings = [isolation.warning] if isolation.warning else []
    try:
        sandbox_bpf, job_bpf = await filters
    except (ImportError, OSError, RuntimeError) as exc:
        sandbox_bpf, job_bpf = b"", b""
        warnings.append(f"no seccomp filter: libseccomp is unavailable ({exc})")
    setup = WorkerSetup(isolation, sandbox_bpf, job_bpf, tuple(hidden_probes(probe_file)))
    return setup, "; ".join(warnings) or None


class WorkerProcess:
    """One long-lived worker seen from the parent; runs one job at a time."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        home: str,
        output_limit: int,
    ) -> None:
        self.process, self.reader, self.writer, self.home = process, reader, writer, home
        self.alive = True
        self.guards: list[str] = []
        self.tails = {"stdout": OutputTail(output_limit), "stderr": OutputTail(output_limit)}
        self._write_lock = asyncio.Lock()
        self._pumps = [
            asyncio.ensure_future(self._pump(process.stdout, self.tails["stdout"])),
            asyncio.ensure_future(self._pump(process.stderr, self.tails["stderr"])),
        ]

    @classmethod
    async def start(cls, setup: WorkerSetup, limits: SandboxLimits) -> WorkerProcess:
        """Spawn a worker and wait for it to say it is ready; InfraError-free: raises OSError."""
        home = tempfile.mkdtemp(prefix="judgegen-worker-")
        confined = setup.isolation.bwrap is not None
        env = scrubbed_environment(os.environ, SCRATCH if confined else home)
        parent_sock, child_sock = socket.socketpair()
        job_fd = _memfd("judgegen-job-filter", setup.job_filter)
        sandbox_fd = _memfd("judgegen-sandbox-filter", setup.sandbox_filter)
        filter_fds = [fd for fd in (job_fd, sandbox_fd) if fd is not None]
        scratch_bytes = SCRATCH_FILES * limits.max_file_mb * 1024 * 1024
        command = setup.isolation.command(env, scratch_bytes, sandbox_fd)
        worker_args = ["--fd", str(child_sock.fileno())]
        worker_args += ["--job-filter-fd", str(job_fd)] if job_fd is not None else []
        worker_args += [arg for path in setup.hidden for arg in ("--hidden", path)]
        fds = (child_sock.fileno(), *filter_fds)
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                sys.executable,
                "-m",
                "toolkit.sandbox.worker",
                *worker_args,
                pass_fds=fds,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=home,
                start_new_session=True,
            )
        except BaseException:
            parent_sock.close()
            shutil.rmtree(home, ignore_errors=True)
            raise
        finally:
            child_sock.close()
            for fd in filter_fds:
                os.close(fd)
        reader, writer = await asyncio.open_unix_connection(sock=parent_sock)
        worker = cls(process, reader, writer, home, limits.max_output_bytes)
        weakref.finalize(worker, shutil.rmtree, home, True)
        try:
            async with asyncio.timeout(STARTUP_TIMEOUT_S):
                message = await read_message(reader)
        except (TimeoutError, ProtocolError, OSError) as exc:
            message = exc
        if not isinstance(message, Ready):
            await worker.close()
            detail = worker.tails["stderr"].text()[-1000:]
            raise OSError(f"the judge worker did not start ({message!r}); stderr: {detail}")
        worker.guards = list(message.guards)
        return worker

    async def _pump(self, stream: asyncio.StreamReader | None, tail: OutputTail) -> None:
        if stream is None:
            return
        with contextlib.suppress(OSError):
            while chunk := await stream.read(1 << 16):
                tail.add(chunk)

    async def send(self, message: Any) -> None:
        """Write one frame to the worker."""
        frame = encode(message)
        async with self._write_lock:
            self.writer.write(frame)
            await self.writer.drain()

    async def run(self, start: JobStart, broker: Broker) -> EvalOutcome:
        """Run one job; every failure mode ends in an outcome, and a broken worker in `alive=False`."""
        begin = time.monotonic()
        calls: set[asyncio.Task[None]] = set()
        try:
            async with asyncio.timeout(start.limits.timeout_s + KILL_GRACE_S):
                await self.send(start)
                outcome, end = await self._converse(start, broker, calls)
        except TimeoutError:
            await self.kill()
            message = f"the judge did not finish within {start.limits.timeout_s:g} s and was killed"
            lost = EvalOutcome.failure(start.job, "timeout", message, error_type="Timeout")
            return self._lost(lost, begin)
        except (ProtocolError, OSError) as exc:
            await self.kill()
            message = f"the judge worker failed: {exc}"
            return self._lost(EvalOutcome.failure(start.job, "sandbox", message), begin)
        except BaseException:
            await self.kill()
            raise
        finally:
            for task in calls:
                task.cancel()
        return _finish(start, outcome, end, time.monotonic() - begin)

    def _lost(self, outcome: EvalOutcome, begin: float) -> EvalOutcome:
        stderr = self.tails["stderr"].text()
        update = {"duration_s": round(time.monotonic() - begin, 6), "stderr_tail": stderr}
        return outcome.model_copy(update=update)

    async def _converse(
        self, start: JobStart, broker: Broker, calls: set[asyncio.Task[None]]
    ) -> tuple[EvalOutcome | None, JobEnd]:
        outcome: EvalOutcome | None = None
        while True:
            if len(calls) >= MAX_CALLS_IN_FLIGHT:
                await asyncio.wait(set(calls), return_when=asyncio.FIRST_COMPLETED)
            message = await read_message(self.reader)
            if message is None:
                raise ProtocolError("the worker process ended unexpectedly")
            if isinstance(message, Call) and message.job_id == start.job_id:
                task = asyncio.ensure_future(self._answer(message, broker))
                calls.add(task)
                task.add_done_callback(calls.discard)
            elif isinstance(message, Outcome) and message.job_id == start.job_id:
                outcome = outcome or message.outcome
            elif isinstance(message, JobEnd) and message.job_id == start.job_id:
                return outcome, message
            else:
                raise ProtocolError(f"unexpected '{message.type}' message from the worker")

    async def _answer(self, call: Call, broker: Broker) -> None:
        reply = await broker.handle(call)
        try:
            frame_message: Reply = reply
            encode(frame_message)
        except (ProtocolError, ValueError, TypeError) as exc:
            error = {"type": type(exc).__name__, "kind": "broker", "message": str(exc)[:500]}
            frame_message = Reply(job_id=call.job_id, call_id=call.call_id, error=error)
        with contextlib.suppress(OSError, ConnectionError):
            await self.send(frame_message)

    async def kill(self) -> None:
        """Kill the worker's whole process group and mark it dead."""
        self.alive = False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()

    async def close(self) -> None:
        """Ask the worker to stop, then make sure it is gone and its temp dir removed."""
        if self.alive and self.process.returncode is None:
            with contextlib.suppress(OSError, ConnectionError, ProtocolError):
                await self.send(Shutdown())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), timeout=2)
        await self.kill()
        await self.process.wait()
        for pump in self._pumps:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(pump, timeout=1)
        self.writer.close()
        shutil.rmtree(self.home, ignore_errors=True)


def _end_error(start: JobStart, end: JobEnd) -> dict[str, Any]:
    limits = start.limits
    last_line = next((ln for ln in reversed(end.stderr_tail.splitlines()) if ln.strip()), "")
    hint = f"; last stderr line: {last_line.strip()[:300]}" if last_line else ""
    if end.timed_out:
        message = f"the judge did not finish within {limits.timeout_s:g} s and was killed"
        return error_dict("Timeout", "timeout", message)
    if end.protocol_error:
        message = f"the judge process broke the channel protocol: {end.protocol_error}"
        return error_dict("ProtocolViolation", "protocol_violation", message)
    if end.signal is not None:
        kind = _SIGNAL_KINDS.get(signal.Signals(end.signal), "crash")
        name = signal.Signals(end.signal).name
        if kind == "cpu_limit":
            message = f"the judge exceeded its CPU limit of {limits.cpu_s} s ({name})"
        else:
            message = f"the judge process was killed by {name} without reporting an outcome{hint}"
        return error_dict("SandboxError", kind, message)
    message = f"the judge process exited with code {end.exit_code} without reporting an outcome"
    return error_dict("SandboxError", "crash", f"{message}{hint}")


def _finish(
    start: JobStart, outcome: EvalOutcome | None, end: JobEnd, duration: float
) -> EvalOutcome:
    tails = {"stdout_tail": end.stdout_tail, "stderr_tail": end.stderr_tail}
    if outcome is None:
        outcome = EvalOutcome.failure(start.job, "crash", "")
        outcome.errors = [_end_error(start, end)]
    elif end.protocol_error:
        errors = [*outcome.errors, _end_error(start, end)]
        summary = {**outcome.summary, "status": "incomplete"} if outcome.summary else None
        update = {"status": "incomplete", "errors": errors, "summary": summary}
        outcome = outcome.model_copy(update=update)
    return outcome.model_copy(update={"duration_s": round(duration, 6), **tails})


class WorkerPool:
    """Up to `size` sandboxed workers sharing one broker; `evaluate` runs a job on a free one.

    Workers start on demand: the first evaluation waits for one worker, not for `size`. Use as `async with WorkerPool(4, limits, backend, pages, tools) as pool:` (or call
    `evaluate` directly: the pool starts on the first job). A worker that crashed, timed out or
    broke the protocol is replaced on the next job. Each outcome carries the guards measured in
    effect; when some are missing the pool says which on stderr, and with `require_sandbox`
    such an outcome is incomplete with kind `sandbox_required`.
    """

    def __init__(
        self,
        size: int = 1,
        limits: SandboxLimits | None = None,
        backend: JudgingBackend | None = None,
        pages: PageSource | None = None,
        tools: Mapping[str, ToolProvider] | None = None,
        *,
        require_sandbox: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        if backend is None:
            raise ValueError("a worker pool needs a judging backend")
        self.size = size
        self.limits = limits or SandboxLimits()
        self.broker = Broker(backend, pages, tools)
        self.require_sandbox = require_sandbox
        self.setup = WorkerSetup(Isolation())
        self._idle: list[WorkerProcess] = []
        self._busy: set[WorkerProcess] = set()
        self._slots = asyncio.Semaphore(size)
        self._job_ids = itertools.count(1)
        self._started = False
        self._start_lock = asyncio.Lock()
        self._probe_dir: str | None = None
        self._warned: set[frozenset[str]] = set()

    @property
    def isolation(self) -> Isolation:
        """How this pool's workers are wrapped (known once the pool started)."""
        return self.setup.isolation

    async def __aenter__(self) -> WorkerPool:
        await self.start()
        return self

    async def start(self) -> None:
        """Probe the isolation and build the filters once (warning on stderr if weak);
        workers themselves start when a job needs one."""
        async with self._start_lock:
            if self._started:
                return
            self._probe_dir = await asyncio.to_thread(_host_probe_dir)
            probe = os.path.join(self._probe_dir, PROBE_NAME)
            self.setup, warning = await prepare_setup(self.limits.network, probe)
            if warning:
                print(f"judgegen: warning: {warning}", file=sys.stderr)
            self._started = True

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every worker."""
        workers = [*self._idle, *self._busy]
        self._idle, self._busy = [], set()
        await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
        if self._probe_dir is not None:
            shutil.rmtree(self._probe_dir, ignore_errors=True)
            self._probe_dir = None
        self._started = False

    def _job_start(self, job: EvalJob, limits: SandboxLimits | None) -> JobStart:
        backend = self.broker.backend
        pages = self.broker.pages
        return JobStart(
            job_id=next(self._job_ids),
            job=job,
            limits=(limits or self.limits).model_copy(update={"network": self.limits.network}),
            backend_model=getattr(backend, "model", None),
            backend_extract_model=getattr(backend, "extract_model", None),
            pages=pages is not None,
            screenshots=callable(getattr(pages, "screenshot", None)),
        )

    def _check_guards(self, outcome: EvalOutcome) -> EvalOutcome:
        """Say (once per set) which guards were missing; with `require_sandbox`, fail it."""
        if not outcome.guards:
            return outcome
        missing = self.isolation.expected_guards - set(outcome.guards)
        if not missing:
            return outcome
        names = ", ".join(sorted(missing))
        if frozenset(missing) not in self._warned:
            self._warned.add(frozenset(missing))
            print(f"judgegen: warning: sandbox guards not in effect: {names}", file=sys.stderr)
        if not self.require_sandbox:
            return outcome
        message = f"--require-sandbox: these guards were not in effect: {names}"
        return with_errors(outcome, [error_dict("SandboxError", REQUIRED_KIND, message)])

    async def evaluate(self, job: EvalJob, limits: SandboxLimits | None = None) -> EvalOutcome:
        """Run `job` in a sandboxed worker; never raises for anything the judge does.

        The judge's code is read (if the job does not carry it) before the job is queued, so a
        file replaced later changes nothing. `limits` overrides the pool's time, CPU, memory and
        output limits for this job; network access is fixed per pool (the workers' namespace),
        so `limits.network` is ignored here.
        """
        try:
            job = job.bound()
        except (OSError, UnicodeDecodeError) as exc:
            return EvalOutcome.failure(job, "judge_load", f"cannot read the judge: {exc}")
        await self.start()
        start = self._job_start(job, limits)
        async with self._slots:
            try:
                worker = self._idle.pop() if self._idle else None
                if worker is None or not worker.alive:
                    worker = await WorkerProcess.start(self.setup, self.limits)
            except OSError as exc:
                return EvalOutcome.failure(job, "sandbox", f"cannot start a judge worker: {exc}")
            self._busy.add(worker)
            try:
                outcome = await worker.run(start, self.broker)
            finally:
                self._busy.discard(worker)
                if worker.alive:
                    self._idle.append(worker)
                else:
                    await worker.close()
        return self._check_guards(outcome)
