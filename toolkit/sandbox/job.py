"""The job process: one judge run on one answer, under the guards, talking to the parent.

Forked by the fork server (`toolkit.sandbox.worker`) for each job, it applies the per-job
limits and guards (`toolkit.sandbox.confinement`), reads its job from its own channel to the
parent, runs the judge through `toolkit.runner.judging` with proxies whose calls go straight
to the parent's broker, and sends its outcome on the same channel. A job lacking a guard its
`Spawn` requires (`--require-sandbox`) sends a `sandbox_required` outcome instead, without
loading the judge.

The proxies send only what the parent lacks: a cited page travels as its URL (the parent
attaches its text and screenshot), and the answer, which the parent already has, is never
sent back inside a request.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import itertools
import os
import select
import signal
import socket
import sys
import threading
from typing import Any

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded, InfraError
from toolkit.runner.judging import evaluate_job, load_bound_judge, with_violations
from toolkit.runner.loader import Judge, code_from_text
from toolkit.sandbox.confinement import (
    REQUIRED_KIND,
    Guard,
    apply_job_limits,
    make_undumpable,
    missing_guards,
    not_run_message,
)
from toolkit.sandbox.protocol import (
    WITH_ANSWER,
    Call,
    CallMethod,
    Cancel,
    EvalJob,
    EvalOutcome,
    FrameProtocol,
    JobGuards,
    JobStart,
    Outcome,
    ProtocolError,
    Reply,
    Spawn,
    Violation,
    encode,
)
from toolkit.sandbox.seccomp import bind_self
from toolkit.urls import page_url


def _reply_error(error: dict[str, Any]) -> InfraError:
    kind = str(error.get("kind") or "backend")
    message = f"{error.get('type', 'Error')}: {error.get('message', '')}"
    if kind == "budget":
        return BudgetExceeded(message)
    return InfraError(message, kind=kind)


class FrameWriter:
    """The job's frames to the parent, each whole and in order: queued from the event loop
    (`write`, `drain`), or sent at once from any thread (`send_now`, for the audit hook).

    It writes on its own descriptor for the channel's socket (the transport only reads), so
    the hook can send while the event loop is anywhere, never inside another frame.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.RLock()
        self._backlog: collections.deque[memoryview] = collections.deque()
        self._error: OSError | None = None
        self._loop = asyncio.get_running_loop()
        self._emptied = asyncio.Event()
        self._emptied.set()

    def write(self, frame: bytes) -> None:
        """Queue `frame` after those before it: what the socket takes now is sent now, the
        rest as it becomes writable."""
        with self._lock:
            self._backlog.append(memoryview(frame))
            self._send_some()
            if self._backlog and self._emptied.is_set():
                self._emptied.clear()
                self._loop.add_writer(self._sock.fileno(), self._writable)

    async def drain(self) -> None:
        """Wait until every queued frame is sent; OSError when the channel failed."""
        await self._emptied.wait()
        if self._error is not None:
            raise self._error

    def send_now(self, frame: bytes) -> None:
        """Send every queued frame, then `frame`, before returning (blocking, from any thread)."""
        with self._lock:
            self._backlog.append(memoryview(frame))
            poller = select.poll()
            poller.register(self._sock.fileno(), select.POLLOUT)
            while self._send_some():
                poller.poll()

    def _writable(self) -> None:
        with self._lock:
            if self._send_some():
                return
        self._loop.remove_writer(self._sock.fileno())
        self._emptied.set()

    def _send_some(self) -> bool:
        """Send what the socket takes now; True while frames remain queued."""
        while self._backlog:
            try:
                sent = self._sock.send(self._backlog[0])
            except (BlockingIOError, InterruptedError):
                return True
            except OSError as exc:
                self._error = exc
                self._backlog.clear()
                return False
            if sent < len(self._backlog[0]):
                self._backlog[0] = self._backlog[0][sent:]
            else:
                self._backlog.popleft()
        return False


class Channel:
    """The job's side of its channel to the parent: concurrent calls multiplexed by call id.

    The parent's frames are decoded as they are read (`FrameProtocol`): the first is the job
    (`job`), each later `Reply` resolves its call in the callback that read it. A call the
    judge stops waiting for (cancelled) is cancelled at the parent too; a sandbox violation is
    sent the moment it happens (`report_violation`).
    """

    def __init__(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self._frames = FrameWriter(sock.dup())
        self._reading = FrameProtocol(self._received)
        self._reading.ended.add_done_callback(self._ended)
        self._job: asyncio.Future[JobStart] = loop.create_future()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None

    @classmethod
    async def open(cls, sock: socket.socket) -> Channel:
        """The channel over `sock`, reading from the start."""
        channel = cls(sock)
        loop = asyncio.get_running_loop()
        await loop.create_unix_connection(lambda: channel._reading, sock=sock)
        return channel

    async def job(self) -> JobStart:
        """The job the parent sent first; ProtocolError when it sent something else or nothing."""
        return await self._job

    async def call(self, method: CallMethod, payload: dict[str, Any]) -> Any:
        """Send one call and wait for its reply; an error reply raises `InfraError`."""
        if self._closed:
            raise InfraError(f"broker channel closed: {self._closed}", kind="channel")
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            await self.send(Call(call_id=call_id, method=method, payload=payload))
            return await future
        except asyncio.CancelledError:  # its reply unread, or read and never taken: the same
            if not self._closed:
                with contextlib.suppress(OSError, RuntimeError):
                    self._frames.write(encode(Cancel(call_id=call_id)))
            raise
        finally:
            self._pending.pop(call_id, None)

    async def send(self, message: Call | JobGuards | Outcome) -> None:
        """Write one frame (a frame is written whole, so frames never interleave)."""
        self._frames.write(encode(message))
        await self._frames.drain()

    def report_violation(self, message: str) -> None:
        """Send a sandbox violation before returning (`Guard.report`): once sent, the parent
        records it whatever the judge does next."""
        self._frames.send_now(encode(Violation(message=message)))

    def _received(self, message: Any) -> None:
        if not self._job.done():
            if not isinstance(message, JobStart):
                raise ProtocolError(f"the job channel began with {message!r}, not a job")
            self._job.set_result(message)
        elif isinstance(message, Reply):
            self._resolve(message)

    def _ended(self, ended: asyncio.Future[BaseException | None]) -> None:
        error = ended.result()
        reason = "the parent closed the channel" if error is None else str(error)
        self._closed = reason
        if not self._job.done():
            self._job.set_exception(
                ProtocolError(f"the job channel ended before the job: {reason}")
            )
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


def _payload(request: ExtractRequest | VerifyRequest, answer: str) -> dict[str, Any]:
    """The request as JSON, without its template class and without fields holding the
    answer (the parent fills those back in from the job it sent)."""
    exclude = {"template_class"}
    filled = [name for name in ("source_text", "answer") if getattr(request, name, None) == answer]
    payload = request.model_dump(mode="json", exclude=exclude | set(filled))
    if filled:
        payload[WITH_ANSWER] = filled
    return payload


class BrokerBackend:
    """A `JudgingBackend` whose requests travel to the parent's real backend."""

    def __init__(
        self,
        channel: Channel,
        answer: str,
        model: str | None = None,
        extract_model: str | None = None,
    ) -> None:
        self._channel, self._answer = channel, answer
        self.model = model
        self.extract_model = extract_model

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        """Send the request; the Evaluator validates the dict against its template."""
        result = await self._channel.call("extract", _payload(request, self._answer))
        return result if isinstance(result, dict) else {}

    async def verify(self, request: VerifyRequest) -> Verdict:
        """Send the verification; the parent answers with a `Verdict`."""
        result = await self._channel.call("verify", _payload(request, self._answer))
        return Verdict.model_validate(result)


class BrokerPages:
    """The parent's page store, seen from the job: claims and extractions are sent with the
    pages' URLs and the parent attaches the pages; `get` (and `screenshot` when the store has
    screenshots) read a page for judges that look at one themselves."""

    def __init__(self, channel: Channel, answer: str, screenshots: bool) -> None:
        self._channel, self._answer = channel, answer
        if screenshots:
            self.screenshot = self._screenshot

    async def get(self, url: str) -> str | None:
        """The page text, or None when the page is missing; a `url` that is not a string is
        the judge's bug, raised here as in process (`page_url`)."""
        return await self._channel.call("page_get", {"url": page_url(url)})

    async def _screenshot(self, url: str) -> str | None:
        url = page_url(url, "ev.pages.screenshot")
        return await self._channel.call("page_screenshot", {"url": url})

    async def verify_sources(
        self, request: VerifyRequest, urls: list[str], target: str
    ) -> tuple[Verdict, str | None, list[str], list[dict[str, Any]]]:
        """(the verdict on `request` against the cited pages `urls`, the URL that supported
        it, the cited pages that are missing, the error entries of wave partners that failed
        after the verdict): the parent checks them as an in-process judge would
        (`toolkit.sources.SourceChecker.decide`); `target` names the claim in those entries.
        A parent that leaves the partners running records their failures itself."""
        payload = {"request": _payload(request, self._answer), "urls": urls, "target": target}
        result = await self._channel.call("verify_sources", payload)
        used = result["used"]
        missing = [str(url) for url in result["missing"]]
        failed = [dict(entry) for entry in result.get("partner_errors") or []]
        return Verdict.model_validate(result["verdict"]), used, missing, failed

    async def extract_page(self, request: ExtractRequest, url: str) -> tuple[Any, bool]:
        """(the extraction from the page at `url`, whether the page is missing)."""
        payload = {"request": _payload(request, self._answer), "url": url}
        result = await self._channel.call("extract_page", payload)
        return result["result"], bool(result["missing"])


class BrokerTools:
    """A `ToolCaller` answered by the parent's tool providers."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call tool `name` in the parent with JSON arguments."""
        return await self._channel.call("tool", {"name": name, "args": args})


# -- running the judge ------------------------------------------------------------------


async def _evaluate(
    channel: Channel, start: JobStart, guard: Guard, guards: list[str]
) -> EvalOutcome:
    """Run the judge through the broker proxies; guard violations make it incomplete."""

    async def load() -> Judge:
        return load_bound_judge(start.job, code_from_text(start.judge_code, start.job.judge_sha256))

    answer = start.job.answer
    outcome = await evaluate_job(
        load,
        start.job,
        backend=BrokerBackend(channel, answer, start.backend_model, start.backend_extract_model),
        pages=BrokerPages(channel, answer, start.screenshots) if start.pages else None,
        tools=BrokerTools(channel),
    )
    return with_violations(outcome.model_copy(update={"guards": guards}), guard.violations)


def _refused(job: EvalJob, spawn: Spawn, guards: list[str]) -> EvalOutcome | None:
    """The outcome of a job that must not load its judge because a guard `spawn` requires is
    not among the `guards` in effect (`--require-sandbox`); None when none is missing."""
    missing = missing_guards(spawn.required_guards, guards)
    if not missing:
        return None
    return EvalOutcome.failure(job, REQUIRED_KIND, not_run_message(missing), guards=guards)


async def _job_main(
    sock: socket.socket, spawn: Spawn, worker_guards: list[str], job_guards: list[str]
) -> None:
    """Read the job, report the job guards in effect before any judge code loads, run it (or,
    when a guard the spawn requires is missing, refuse to load it), send its outcome, and
    leave at once (threads a judge left behind die with the process)."""
    guard = Guard(allow_network=spawn.limits.network)
    channel = await Channel.open(sock)
    start = await channel.job()
    sys.addaudithook(guard.hook)
    measured = [*job_guards, "audit_hook"]
    await channel.send(JobGuards(guards=measured))
    guards = [*worker_guards, *measured]
    outcome = _refused(start.job, spawn, guards)
    if outcome is None:
        guard.report = channel.report_violation
        guard.active = True
        outcome = await _evaluate(channel, start, guard, guards)
    try:
        await channel.send(Outcome(outcome=outcome))
    except ProtocolError as exc:
        message = f"the outcome cannot be sent: {exc}"
        fallback = EvalOutcome.failure(start.job, "protocol_violation", message)
        await channel.send(Outcome(outcome=fallback))
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def job_process(
    sock: socket.socket, spawn: Spawn, baseline: int, program: bytes, guards: list[str]
) -> int:
    """The forked job process's body: die with the fork server, keep other jobs out of this
    one (not dumpable: no ptrace, no /proc/<pid>/mem), apply the guards, run the job."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    make_undumpable()
    applied = apply_job_limits(spawn.limits, baseline, bind_self(program, os.getpid()))
    asyncio.run(_job_main(sock, spawn, guards, applied))
    return 0
