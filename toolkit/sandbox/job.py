"""The job process: one judge run on one answer, under the guards, talking to the broker.

Forked by the worker (`toolkit.sandbox.worker`) for each job, it applies the per-job limits and
guards (`toolkit.sandbox.confinement`), then runs the judge through `toolkit.runner.judging`
with proxies whose calls travel over its socket to the parent's broker, and sends its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import os
import signal
import socket
import sys
from typing import Any

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded, InfraError
from toolkit.runner.judging import evaluate_job, load_bound_judge, with_errors
from toolkit.runner.loader import Judge
from toolkit.sandbox.confinement import Guard, apply_job_limits
from toolkit.sandbox.protocol import (
    Call,
    CallMethod,
    EvalOutcome,
    JobStart,
    Outcome,
    ProtocolError,
    Reply,
    encode,
    error_dict,
    read_message,
)


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

    async def call(self, method: CallMethod, payload: dict[str, Any]) -> Any:
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


# -- running the judge ------------------------------------------------------------------


async def _evaluate(
    channel: Channel, start: JobStart, guard: Guard, guards: list[str]
) -> EvalOutcome:
    """Run the judge through the broker proxies; guard violations make it incomplete."""

    async def load() -> Judge:
        return load_bound_judge(start.job)

    outcome = await evaluate_job(
        load,
        start.job,
        backend=BrokerBackend(channel, start.backend_model, start.backend_extract_model),
        pages=BrokerPages(channel, start.screenshots) if start.pages else None,
        tools=BrokerTools(channel),
    )
    reported = " ".join(str(entry.get("message")) for entry in outcome.errors)
    violations = [
        error_dict("SandboxViolation", "sandbox_violation", violation)
        for violation in guard.violations
        if violation not in reported
    ]
    return with_errors(outcome.model_copy(update={"guards": guards}), violations)


async def _job_main(sock: socket.socket, start: JobStart, guards: list[str]) -> None:
    """Run the job, send its outcome, and leave at once (threads a judge left behind die)."""
    guard = Guard(allow_network=start.limits.network)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    channel = Channel(reader, writer, start.job_id)
    channel.start()
    sys.addaudithook(guard.hook)
    guard.active = True
    outcome = await _evaluate(channel, start, guard, [*guards, "audit_hook"])
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


def job_process(
    sock: socket.socket, start: JobStart, baseline: int, program: bytes, guards: list[str]
) -> int:
    """The forked job process's body: die with the worker, apply the guards, run the job."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    applied = apply_job_limits(start.limits, baseline, program)
    asyncio.run(_job_main(sock, start, [*guards, *applied]))
    return 0
