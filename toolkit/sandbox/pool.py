"""Parent side of the sandbox: one warm fork server, and as many job processes as there is work.

`WorkerPool.evaluate` makes a socket pair per job, hands the job's end to the fork server
(`Spawn` with SCM_RIGHTS), writes the job on its own end and serves the judge's calls there
(`toolkit.sandbox.broker.JobSession`); the fork server only reports how the job ended.
Whatever a judge does, `evaluate` returns an `EvalOutcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from toolkit.awaitables import mark_retrieved
from toolkit.backends import JudgingBackend
from toolkit.errors import CodeChanged
from toolkit.evaluator import PageSource
from toolkit.runner.fingerprint import toolkit_code
from toolkit.runner.judging import (
    UserImports,
    settles_partners,
    with_errors,
    with_node_errors,
    with_violations,
)
from toolkit.runner.loader import code_to_text, compile_judge
from toolkit.runner.metering import note_infra
from toolkit.sandbox.broker import Broker, JobSession, ToolProvider
from toolkit.sandbox.bytecode import write_missing_bytecode
from toolkit.sandbox.confinement import (
    REQUIRED_KIND,
    WORKER_GUARDS,
    missing_guards,
    not_run_message,
)
from toolkit.sandbox.isolation import Isolation, package_root, probe_isolation
from toolkit.sandbox.launch import Launch, launch_sandbox
from toolkit.sandbox.protocol import (
    EvalJob,
    EvalOutcome,
    FrameBuffer,
    JobEnd,
    JobStart,
    Kill,
    OutputTail,
    ProtocolError,
    Ready,
    SandboxLimits,
    Spawn,
    decode,
    encode,
    error_dict,
)
from toolkit.util.code_files import Stamp, first_change

STARTUP_TIMEOUT_S = 60.0
KILL_GRACE_S = 5.0
LOST = "the sandbox worker process ended unexpectedly"
_SIGNAL_KINDS: dict[int, str] = {signal.SIGXCPU: "cpu_limit", signal.SIGKILL: "killed"}
_READ_CHUNK = 1 << 16


async def _received(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes:
    """The next bytes on `sock`; OSError at its end."""
    chunk = await loop.sock_recv(sock, _READ_CHUNK)
    if not chunk:
        raise OSError("it exited before it was ready")
    return chunk


class ForkServer:
    """The parent's handle on a running fork server: spawns jobs and learns how they ended."""

    def __init__(
        self,
        launch: Launch,
        guards: list[str],
        frames: FrameBuffer,
        code: dict[str, Stamp | None] | None = None,
    ) -> None:
        self.launch, self.guards, self.frames = launch, guards, frames
        self.code = code or {}
        self.alive = True
        self.output = OutputTail(16 * 1024)
        self._ends: dict[int, asyncio.Future[JobEnd]] = {}
        self._write_lock = asyncio.Lock()
        self._reader = asyncio.ensure_future(self._read())
        self._pump = asyncio.ensure_future(self._pump_output())

    @classmethod
    async def start(cls, launch: Launch) -> ForkServer:
        """Wait for `launch` to be ready; OSError (after killing it) when it is not."""
        sock = launch.control
        sock.setblocking(False)
        frames = FrameBuffer()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(STARTUP_TIMEOUT_S):
                while not (bodies := frames.feed(await _received(loop, sock))):
                    pass
                ready = decode(bodies[0])
        except (TimeoutError, OSError, ProtocolError) as exc:
            launch.kill()
            output = launch.output()
            raise OSError(f"the sandbox worker did not start ({exc}); output: {output}") from exc
        if not isinstance(ready, Ready) or len(bodies) > 1:
            launch.kill()
            raise OSError(f"the sandbox worker did not start: it sent {bodies[-1][:200]!r}")
        launch.measured()
        return cls(launch, list(ready.guards), frames, dict(ready.code))

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while chunk := await loop.sock_recv(self.launch.control, _READ_CHUNK):
                for body in self.frames.feed(chunk):
                    message = decode(body)
                    if not isinstance(message, JobEnd):
                        raise ProtocolError(f"unexpected '{message.type}' from the fork server")
                    ended = self._ends.pop(message.job_id, None)
                    if ended is not None and not ended.done():
                        ended.set_result(message)
        except (OSError, ProtocolError):
            pass
        self.alive = False
        for ended in self._ends.values():
            if not ended.done():
                ended.set_exception(ProtocolError(LOST))
        self._ends.clear()

    async def _pump_output(self) -> None:
        stream = self.launch.process.stdout
        if stream is None:
            return
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError, ValueError):
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
            while chunk := await reader.read(_READ_CHUNK):
                self.output.add(chunk)

    async def _send(self, data: bytes, fds: list[int]) -> None:
        """Write one frame, the descriptors riding on its first byte."""
        sock, loop = self.launch.control, asyncio.get_running_loop()
        async with self._write_lock:
            while True:
                try:
                    sent = socket.send_fds(sock, [data], fds)
                    break
                except BlockingIOError:
                    writable = loop.create_future()
                    loop.add_writer(sock.fileno(), writable.set_result, None)
                    try:
                        await writable
                    finally:
                        loop.remove_writer(sock.fileno())
            if sent < len(data):
                await loop.sock_sendall(sock, data[sent:])

    async def spawn(
        self,
        job_id: int,
        limits: SandboxLimits,
        channel: socket.socket,
        required_guards: Sequence[str] = (),
    ) -> asyncio.Future[JobEnd]:
        """Fork a job process talking over `channel`, which loads its judge only with every
        one of `required_guards` in effect; the future gets how it ended."""
        if not self.alive:
            raise ProtocolError(LOST)
        ended: asyncio.Future[JobEnd] = asyncio.get_running_loop().create_future()
        ended.add_done_callback(mark_retrieved)
        self._ends[job_id] = ended
        try:
            spawn = Spawn(job_id=job_id, limits=limits, required_guards=list(required_guards))
            await self._send(encode(spawn), [channel.fileno()])
        except BaseException:
            self._ends.pop(job_id, None)
            raise
        return ended

    async def kill_job(self, job_id: int) -> None:
        """Ask the fork server to kill a job now (best effort)."""
        with contextlib.suppress(OSError):
            await self._send(encode(Kill(job_id=job_id)), [])

    async def close(self) -> None:
        """Kill the server and everything it forked."""
        self.alive = False
        await asyncio.to_thread(self.launch.kill)
        for task in (self._reader, self._pump):
            task.cancel()
        await asyncio.gather(self._reader, self._pump, return_exceptions=True)


def _end_error(limits: SandboxLimits, end: JobEnd) -> dict[str, Any]:
    last_line = next((ln for ln in reversed(end.stderr_tail.splitlines()) if ln.strip()), "")
    hint = f"; last stderr line: {last_line.strip()[:300]}" if last_line else ""
    if end.timed_out:
        message = f"the judge did not finish within {limits.timeout_s:g} s and was killed"
        return error_dict("Timeout", "timeout", message)
    if end.signal is not None:
        kind = _SIGNAL_KINDS.get(end.signal, "crash")
        name = _signal_name(end.signal)
        if kind == "cpu_limit":
            message = f"the judge exceeded its CPU limit of {limits.cpu_s} s ({name})"
        else:
            message = f"the judge process was killed by {name} without reporting an outcome{hint}"
        return error_dict("SandboxError", kind, message)
    message = f"the judge process exited with code {end.exit_code} without reporting an outcome"
    return error_dict("SandboxError", "crash", f"{message}{hint}")


def _signal_name(number: int) -> str:
    """`SIGTERM` for 15; a real-time or unknown signal by its number (`signal 40`)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _finish(
    job: EvalJob,
    limits: SandboxLimits,
    session: JobSession,
    end: JobEnd,
    duration: float,
    worker_guards: list[str],
) -> EvalOutcome:
    """The job's outcome as the parent records it: the job's own (or a failure), with the
    sandbox violations the job reported as they happened and the guards measured before judge
    code ran (the fork server's and the job's first frame; none when the job never reported
    its own), whatever the outcome claims."""
    tails = {"stdout_tail": end.stdout_tail, "stderr_tail": end.stderr_tail}
    outcome = session.outcome
    if session.protocol_error:
        message = f"the judge process broke the channel protocol: {session.protocol_error}"
        violation = error_dict("ProtocolViolation", "protocol_violation", message)
        outcome = with_errors(outcome or EvalOutcome.failure(job, "", ""), [violation])
        if session.outcome is None:
            outcome.errors = [violation]
    elif outcome is None:
        outcome = EvalOutcome.failure(job, "crash", "")
        outcome.errors = [_end_error(limits, end)]
    outcome = with_violations(outcome, session.violations)
    guards = [] if session.guards is None else [*worker_guards, *session.guards]
    update = {"duration_s": round(duration, 6), "cpu_s": end.cpu_s, "guards": guards, **tails}
    return outcome.model_copy(update=update)


def _launched_for(launch: Launch, limits: SandboxLimits) -> bool:
    """Whether a fork server launched ahead (early, with defaults) was started as `limits`
    need — the network namespace and the scratch space are fixed at launch — and wrapped as
    a launch now would be (bubblewrap not installed, removed or upgraded since)."""
    return (
        launch.network == limits.network
        and launch.max_file_mb == limits.max_file_mb
        and launch.wrapped_otherwise_now() is None
    )


class WorkerPool:
    """Runs jobs in processes forked from one sandboxed fork server, all sharing one broker.

    Any number of jobs run at once (`jobs` caps them; None: no cap). The fork server is
    launched by `start` (or adopted from an early `launch`) and is waited for by the first
    job only; one that dies is replaced on the next job. Use as `async with WorkerPool(...)
    as pool:` (or call `evaluate` directly: the pool starts itself). Each outcome carries the
    guards measured in effect; when some are missing the pool says which on stderr, and with
    `require_sandbox` such an outcome is incomplete with kind `sandbox_required`, its judge
    not loaded: no job starts under a fork server lacking a guard, and a job lacking one of
    its own refuses before loading the judge.
    """

    def __init__(
        self,
        jobs: int | None = None,
        limits: SandboxLimits | None = None,
        backend: JudgingBackend | None = None,
        pages: PageSource | None = None,
        tools: Mapping[str, ToolProvider] | None = None,
        *,
        require_sandbox: bool = False,
        launch: Launch | None = None,
    ) -> None:
        if jobs is not None and jobs < 1:
            raise ValueError("jobs must be at least 1 (or None for no cap)")
        if backend is None:
            raise ValueError("a worker pool needs a judging backend")
        self.limits = limits or SandboxLimits()
        self.broker = Broker(backend, pages, tools)
        self.require_sandbox = require_sandbox
        self.isolation = Isolation()
        self.server: ForkServer | None = None
        self._launch = launch
        self._slots = asyncio.Semaphore(jobs) if jobs else None
        self._job_ids = itertools.count(1)
        self._server_lock = asyncio.Lock()
        self._warned: set[frozenset[str]] = set()
        self._warming: asyncio.Future[None] | None = None
        self._codes: dict[tuple[str, str], str | None] = {}
        self._imports = UserImports()
        self._code_changed: str | None = None

    async def __aenter__(self) -> WorkerPool:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def start(self) -> None:
        """Launch the fork server now (it warms up while the caller goes on), unless one is
        launched or running already; a launch that fails is reported by the first job."""
        if self._launch is None and self.server is None:
            with contextlib.suppress(OSError):
                self._launch = launch_sandbox(self.limits.network, self.limits.max_file_mb)

    async def aclose(self) -> None:
        """Stop the fork server (and any job still running); then write the bytecode of the
        project's modules it compiled because none was cached (`toolkit.sandbox.bytecode`)."""
        if self.server is not None:
            loaded = list(self.server.code)
            await self.server.close()
            self.server = None
            await asyncio.to_thread(write_missing_bytecode, loaded, package_root())
        if self._launch is not None:
            await asyncio.to_thread(self._launch.kill)
            self._launch = None

    async def _server(self) -> ForkServer:
        """The running fork server: the launched one once ready, or a new one. OSError when
        none starts; bubblewrap that fails here is probed, and dropped with a warning.
        `CodeChanged` (from then on) when the one started loaded toolkit code other than
        the code the results name (`toolkit_code`): a file edited after it was hashed."""
        async with self._server_lock:
            if self._code_changed is not None:
                raise CodeChanged(self._code_changed)
            if self.server is not None and self.server.alive:
                return self.server
            if self.server is not None:
                await self.server.close()
                self.server = None
            launch, self._launch = self._launch, None
            if launch is not None and not _launched_for(launch, self.limits):
                await asyncio.to_thread(launch.kill)
                launch = None
            if launch is None:
                launch = launch_sandbox(self.limits.network, self.limits.max_file_mb)
            try:
                server = await self._ready(launch)
            except OSError:
                if launch.isolation.bwrap is None:
                    raise
                probed = await probe_isolation(self.limits.network)
                if probed.bwrap is not None:
                    raise
                fallback = launch_sandbox(
                    self.limits.network, self.limits.max_file_mb, isolation=probed
                )
                server = await ForkServer.start(fallback)
            if first_change(server.code) is not None:
                server = await self._restarted(server)
            changed = toolkit_code().changed(server.code)
            if changed is not None:
                await server.close()
                self._code_changed = changed
                raise CodeChanged(changed)
            self.isolation = server.launch.isolation
            for warning in server.launch.warnings:
                print(f"judgegen: warning: {warning}", file=sys.stderr)
            self.server = server
            return server

    async def _restarted(self, stale: ForkServer) -> ForkServer:
        """A fork server in place of `stale`, whose code changed on disk after it imported
        it (one started ahead, by a warm server or early in start-up): its jobs would judge
        with code other than what the results' toolkit hash names. The new one imports the
        files as they are now."""
        isolation = stale.launch.isolation
        await stale.close()
        launch = launch_sandbox(self.limits.network, self.limits.max_file_mb, isolation=isolation)
        return await self._ready(launch)

    async def _ready(self, launch: Launch) -> ForkServer:
        """Wait for the fork server's `Ready` while a thread does the backend's first-request
        work (`warm`: templates, schemas, LLM modules); jobs start as soon as the server is
        ready, whether or not the warm-up is done (one that fails only leaves that work to
        the first request)."""
        warm = getattr(self.broker.backend, "warm", None)
        if callable(warm) and self._warming is None:
            self._warming = asyncio.ensure_future(asyncio.to_thread(warm))
            self._warming.add_done_callback(mark_retrieved)
        return await ForkServer.start(launch)

    def _job_start(self, job: EvalJob) -> JobStart:
        backend = self.broker.backend
        pages = self.broker.pages
        return JobStart(
            job=job,
            backend_model=getattr(backend, "model", None),
            backend_extract_model=getattr(backend, "extract_model", None),
            pages=pages is not None,
            screenshots=callable(getattr(pages, "screenshot", None)),
            judge_code=self._judge_code(job),
        )

    def _judge_code(self, job: EvalJob) -> str | None:
        """The judge compiled once per run for all its jobs, by source digest and path (the
        path names the file in its tracebacks). None if it does not compile, the job then
        reporting the error as it would have, or when the job names no digest to check."""
        if not job.judge_sha256 or job.judge_source is None:
            return None
        key = (job.judge_sha256, job.judge_path)
        if key not in self._codes:
            try:
                code = compile_judge(job.judge_source, job.judge_path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._codes[key] = None
            else:
                self._codes[key] = code_to_text(code, job.judge_sha256)
        return self._codes[key]

    def _required_guards(self) -> list[str]:
        """The guards a job must have in effect to load its judge: all that a fully confined
        evaluation reports with `require_sandbox`, none without."""
        return sorted(self.isolation.expected_guards) if self.require_sandbox else []

    def _check_guards(self, outcome: EvalOutcome) -> EvalOutcome:
        """Say (once per set) which guards were missing from those measured for the job
        (none measured: it never ran); with `require_sandbox`, fail it, noted in the
        evaluation's meter (a failure the runner found, which stops the run).

        A job missing a guard it was told to require refuses to load its judge, but this
        check does not rely on that: the job's refusal stands as it is only when it names
        exactly the guards measured missing here; any other outcome gets the parent's own
        `sandbox_required` error."""
        if not outcome.guards:
            return outcome
        missing = missing_guards(self.isolation.expected_guards, outcome.guards)
        if not missing:
            return outcome
        names = ", ".join(missing)
        if frozenset(missing) not in self._warned:
            self._warned.add(frozenset(missing))
            print(f"judgegen: warning: sandbox guards not in effect: {names}", file=sys.stderr)
        if not self.require_sandbox:
            return outcome
        refusal = error_dict("SandboxError", REQUIRED_KIND, not_run_message(missing))
        if outcome.status == "incomplete" and outcome.errors == [refusal]:
            note_infra(refusal)
            return outcome
        message = f"--require-sandbox: these guards were not in effect: {names}"
        failure = error_dict("SandboxError", REQUIRED_KIND, message)
        note_infra(failure)
        return with_errors(outcome, [failure])

    async def evaluate(self, job: EvalJob, limits: SandboxLimits | None = None) -> EvalOutcome:
        """Run `job` in a sandboxed job process; never raises for anything the judge does.

        The judge's code is read (if the job does not carry it) before the job is queued, so a
        file replaced later changes nothing. A judge importing a module of the user's is
        refused here, with the message the in-process executor gives, not left to fail on
        an import the job cannot do. `limits` overrides the pool's time, CPU, memory and
        output limits for this job; network access is fixed per pool (the fork server's
        namespace), so `limits.network` is ignored here.
        """
        try:
            job = job.bound()
        except (OSError, UnicodeDecodeError) as exc:
            return EvalOutcome.failure(job, "judge_load", f"cannot read the judge: {exc}")
        refused = self._imports.refusal(job)
        if refused is not None:
            return refused
        limits = (limits or self.limits).model_copy(update={"network": self.limits.network})
        async with self._slots or contextlib.nullcontext():
            try:
                server = await self._server()
            except OSError as exc:
                return EvalOutcome.failure(job, "sandbox", f"cannot start a judge worker: {exc}")
            except CodeChanged as exc:
                failure = error_dict(type(exc).__name__, exc.kind, str(exc))
                note_infra(failure)
                return EvalOutcome.failure(job, exc.kind, str(exc), error_type=failure["type"])
            refused = self._unconfined(job, server)
            if refused is not None:
                return refused
            outcome = await self._run(server, job, limits)
        return self._check_guards(outcome)

    def _unconfined(self, job: EvalJob, server: ForkServer) -> EvalOutcome | None:
        """With `require_sandbox`, the outcome of a job not run at all because the fork server
        measured, as it started, a worker guard missing (no bubblewrap, say): no judge code
        runs outside the sandbox it requires. Noted in the evaluation's meter, which stops the
        run. None when the server has every worker guard it should."""
        if not self.require_sandbox:
            return None
        expected = self.isolation.expected_guards & set(WORKER_GUARDS)
        missing = missing_guards(expected, server.guards)
        if not missing:
            return None
        message = not_run_message(missing)
        note_infra(error_dict("SandboxError", REQUIRED_KIND, message))
        return EvalOutcome.failure(job, REQUIRED_KIND, message, guards=list(server.guards))

    async def _run(self, server: ForkServer, job: EvalJob, limits: SandboxLimits) -> EvalOutcome:
        begin = time.monotonic()
        job_id = next(self._job_ids)
        ours, theirs = socket.socketpair()
        try:
            ended = await server.spawn(job_id, limits, theirs, self._required_guards())
        except (OSError, ProtocolError) as exc:
            ours.close()
            return self._lost(job, f"the judge worker failed: {exc}", begin)
        finally:
            theirs.close()
        session = await JobSession.open(ours, self.broker, job.answer)
        serving = asyncio.ensure_future(session.run())
        end: JobEnd | None = None
        try:
            session.send(encode(self._job_start(job)))
            async with asyncio.timeout(limits.timeout_s + KILL_GRACE_S):
                watched: set[asyncio.Future[Any]] = {serving, ended}
                await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                if session.protocol_error:
                    await server.kill_job(job_id)
                end = await ended
                await serving
                failed = await session.settle() if settles_partners(session.outcome) else []
        except TimeoutError:
            if end is not None:  # the job ended; a wave partner's check ran out of time
                return self._partners_overran(job, limits, session, end, begin, server.guards)
            await server.kill_job(job_id)
            message = f"the judge did not finish within {limits.timeout_s:g} s and was killed"
            lost = self._lost(job, message, begin, "timeout", "Timeout")
            return with_violations(lost, session.violations)
        except (ProtocolError, OSError) as exc:
            await server.kill_job(job_id)
            lost = self._lost(job, f"the judge worker failed: {exc}", begin)
            return with_violations(lost, session.violations)
        except BaseException:
            await server.kill_job(job_id)
            raise
        finally:
            serving.cancel()
            await session.close()
        outcome = _finish(job, limits, session, end, time.monotonic() - begin, server.guards)
        return with_node_errors(outcome, failed)

    @staticmethod
    def _partners_overran(
        job: EvalJob,
        limits: SandboxLimits,
        session: JobSession,
        end: JobEnd,
        begin: float,
        worker_guards: list[str],
    ) -> EvalOutcome:
        """The outcome of a job that ended (its judge returned or failed) while a wave
        partner's check its verdict did not wait for was still running at the evaluation's
        deadline: the job's own outcome, its tree kept as an in-process judge's partial tree
        is, incomplete with a `timeout` error (the partners are cancelled as the session
        closes)."""
        outcome = _finish(job, limits, session, end, time.monotonic() - begin, worker_guards)
        message = (
            f"the check of a cited page that the claim's verdict did not wait for had not "
            f"finished within {limits.timeout_s + KILL_GRACE_S:g} s of the judge's start "
            "(the judge itself had ended)"
        )
        return with_errors(outcome, [error_dict("TimeoutError", "timeout", message)])

    def _lost(
        self,
        job: EvalJob,
        message: str,
        begin: float,
        kind: str = "sandbox",
        error_type: str = "SandboxError",
    ) -> EvalOutcome:
        """The outcome of a job whose end the fork server could not report."""
        output = self.server.output.text() if self.server is not None else ""
        return EvalOutcome.failure(
            job,
            kind,
            message,
            error_type=error_type,
            duration_s=round(time.monotonic() - begin, 6),
            stderr_tail=output,
        )
