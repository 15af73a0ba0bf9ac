"""The parent side of a judge's channel: answers a sandboxed judge's calls with real services.

The broker owns the judging backend (and so the keys, cache, rate limits and budget), the page
source and the tool providers. A judge's process only ever sees the results, or an error
reduced to its type, kind and (redacted) message, which the job re-raises as `InfraError`.
Cited pages are attached here: the judge names a URL, the broker reads the page and its
screenshot and hands the backend the same request an in-process judge would have built.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from toolkit.awaitables import resolve
from toolkit.backends import ExtractRequest, JudgingBackend, Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.evaluator import PageSource
from toolkit.runner.executors import ToolTable
from toolkit.runner.page_reads import stored_page
from toolkit.sandbox.confinement import MAX_VIOLATIONS
from toolkit.sandbox.protocol import (
    WITH_ANSWER,
    Call,
    Cancel,
    EvalOutcome,
    FrameProtocol,
    JobGuards,
    Outcome,
    ProtocolError,
    Reply,
    Violation,
    encode,
)
from toolkit.sources import DetachedCheck, NoPages, SourceChecker, extract_from_page, settle
from toolkit.util.redact import redact

ToolProvider = Callable[..., Awaitable[Any] | Any]
MAX_CALLS_IN_FLIGHT = 256  # per job: the parent stops reading a job's frames beyond this


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def _extraction(raw: Any) -> dict[str, Any]:
    return raw.model_dump(mode="json") if isinstance(raw, BaseModel) else dict(raw or {})


def _verdict(verdict: Any) -> dict[str, Any]:
    return Verdict.model_validate(_jsonable(verdict)).model_dump(mode="json")


def _request(model: type[BaseModel], payload: dict[str, Any], answer: str) -> Any:
    """The request a job sent, with the answer put back where the job left it out."""
    data = dict(payload)
    for name in data.pop(WITH_ANSWER, None) or []:
        if name in ("source_text", "answer"):
            data[name] = answer
    return model.model_validate(data)


class Broker:
    """Dispatches `Call` messages to the backend, the page source and the tool providers."""

    def __init__(
        self,
        backend: JudgingBackend,
        pages: PageSource | None = None,
        tools: Mapping[str, ToolProvider] | None = None,
    ) -> None:
        self.backend = backend
        self.pages = pages
        self.tools = ToolTable(tools or {})

    async def handle(
        self, call: Call, answer: str = "", detached: list[DetachedCheck] | None = None
    ) -> Reply:
        """Answer one call of a job judging `answer`; every exception becomes an error reply,
        of the service's kind when it is not an InfraError (`tool` for a tool's, as the
        runner's meter notes it, else `backend`). Given `detached`, a claim checked against
        cited pages is answered once a page supports it, its wave partners' checks left
        there for the caller to settle (`toolkit.sources`); else they are waited for."""
        try:
            result = await self._dispatch(call.method, call.payload, answer, detached)
        except Exception as exc:
            service = "tool" if call.method == "tool" else "backend"
            error = {
                "type": type(exc).__name__,
                "kind": getattr(exc, "kind", None) or service,
                "message": redact(str(exc))[:2000],
            }
            return Reply(call_id=call.call_id, error=error)
        return Reply(call_id=call.call_id, result=_jsonable(result))

    async def _dispatch(
        self,
        method: str,
        payload: dict[str, Any],
        answer: str,
        detached: list[DetachedCheck] | None,
    ) -> Any:
        pages = self.pages if self.pages is not None else NoPages()
        if method == "extract":
            return _extraction(
                await self.backend.extract(_request(ExtractRequest, payload, answer))
            )
        if method == "verify":
            return _verdict(await self.backend.verify(_request(VerifyRequest, payload, answer)))
        if method == "extract_page":
            request = _request(ExtractRequest, payload["request"], answer)
            raw, missing = await extract_from_page(self.backend, pages, request, payload["url"])
            return {"result": _extraction(raw), "missing": missing}
        if method == "verify_sources":
            request = _request(VerifyRequest, payload["request"], answer)
            checker = SourceChecker(self.backend, pages, missing=[], detach=detached is not None)
            urls = [str(url) for url in payload["urls"]]
            verdict, used = await checker.decide(request, urls, str(payload.get("target", "")))
            if detached is not None:
                detached += checker.detached
            return {
                "verdict": _verdict(verdict),
                "used": used,
                "missing": checker.missing,
                "partner_errors": checker.partner_errors,
            }
        if method == "page_get":
            return await resolve(pages.get(str(payload["url"])))
        if method == "page_screenshot":
            shot = getattr(pages, "screenshot", None)
            return await resolve(shot(str(payload["url"]))) if shot else None
        if method == "page_stored":
            page = await stored_page(pages, str(payload["url"]))
            return None if page is None else dataclasses.asdict(page)
        if method == "tool":
            result = await self.tools.call(str(payload["name"]), dict(payload.get("args") or {}))
            return _jsonable(result)
        raise InfraError(f"unknown broker method '{method}'", kind="protocol")


class JobSession:
    """The parent's end of one job's channel: answers its calls concurrently (at most
    `MAX_CALLS_IN_FLIGHT`), cancels those the judge gave up on, and keeps its outcome and the
    sandbox violations the job reported as they happened (`violations`, at most
    `MAX_VIOLATIONS`), which nothing the job sends later takes back.

    Each frame is validated (`decode`) and acted on in the callback that read it
    (`FrameProtocol`): a call's answer starts without waiting for a reader task. `run` returns
    at the end of the stream, or at the first frame that breaks the protocol (then
    `protocol_error` says how); calls still running are cancelled by `close`. The job's first
    frame is its `JobGuards`, sent before judge code runs: `guards` keeps them (None until
    then); any other first frame, or a second one, breaks the protocol.
    """

    def __init__(self, broker: Broker, answer: str) -> None:
        self.broker, self.answer = broker, answer
        self.channel = FrameProtocol(self._received)
        self.outcome: EvalOutcome | None = None
        self.guards: list[str] | None = None
        self.protocol_error: str | None = None
        self.violations: list[str] = []
        self.calls: dict[int, asyncio.Task[None]] = {}
        self.detached: dict[int, list[DetachedCheck]] = {}
        """Wave partners' checks the job's verifications no longer wait for (`settle`), by
        the call that left them."""
        self._dropped: list[asyncio.Task[Verdict]] = []
        """Those of calls the judge gave up on, cancelled (`close` waits for them)."""
        self._closing = False

    @classmethod
    async def open(cls, sock: socket.socket, broker: Broker, answer: str) -> JobSession:
        """A session serving the job at the other end of `sock`."""
        session = cls(broker, answer)
        loop = asyncio.get_running_loop()
        await loop.create_unix_connection(lambda: session.channel, sock=sock)
        return session

    def send(self, frame: bytes) -> None:
        """Queue one frame to the job; OSError when the channel is closed."""
        self.channel.write(frame)

    async def run(self) -> None:
        """Serve the job's frames until its stream ends or breaks the protocol."""
        ended = await self.channel.ended
        if isinstance(ended, ProtocolError):
            self.protocol_error = str(ended)
        elif ended is not None and not isinstance(ended, OSError):
            raise ended  # not the job's doing; a reset (OSError) is: how it ended, JobEnd says

    def _received(self, message: Any) -> None:
        if self.guards is None:
            if not isinstance(message, JobGuards):
                raise ProtocolError(f"the job began with '{message.type}', not its guards")
            self.guards = list(message.guards)
        elif isinstance(message, Call) and message.call_id not in self.calls:
            self._start(message)
        elif isinstance(message, Cancel):
            running = self.calls.get(message.call_id)
            if running is not None:
                running.cancel()
            self._drop(message.call_id)
        elif isinstance(message, Violation):
            self._note(message.message)
        elif isinstance(message, Outcome) and self.outcome is None:
            self.outcome = message.outcome
        else:
            raise ProtocolError(f"unexpected '{message.type}' message from the job")

    def _note(self, violation: str) -> None:
        if violation not in self.violations and len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(violation)

    def _start(self, call: Call) -> None:
        task = asyncio.ensure_future(self._answer(call))
        self.calls[call.call_id] = task
        task.add_done_callback(lambda _: self._done(call.call_id))
        if len(self.calls) >= MAX_CALLS_IN_FLIGHT:
            self.channel.pause()

    def _done(self, call_id: int) -> None:
        self.calls.pop(call_id, None)
        if len(self.calls) < MAX_CALLS_IN_FLIGHT and not self._closing:
            self.channel.resume()

    def _drop(self, call_id: int) -> None:
        """Cancel the wave partners' checks of a call the judge gave up on, answered or not:
        its verification has no verdict, as in process, where one cancelled before its
        verdict leaves no partner running (`toolkit.sources`), so none is settled."""
        for check in self.detached.pop(call_id, []):
            check.task.cancel()
            self._dropped.append(check.task)

    async def _answer(self, call: Call) -> None:
        partners = self.detached.setdefault(call.call_id, [])
        reply = await self.broker.handle(call, self.answer, partners)
        try:
            frame = encode(reply)
        except (ProtocolError, ValueError, TypeError) as exc:
            error = {"type": type(exc).__name__, "kind": "broker", "message": str(exc)[:500]}
            frame = encode(Reply(call_id=call.call_id, error=error))
        with contextlib.suppress(OSError, ConnectionError, RuntimeError):
            self.channel.write(frame)
            await self.channel.drain()

    async def settle(self) -> list[dict[str, Any]]:
        """Wait for the wave partners' checks still running; the error entries of those that
        failed (`toolkit.sources.partner_error`), which the job's summary lacks. Only for a
        judge that finished (`toolkit.runner.judging.settles_partners`): else `close`
        cancels them."""
        detached, self.detached = self.detached, {}
        return await settle([check for checks in detached.values() for check in checks])

    async def close(self) -> None:
        """Cancel the calls and wave partners' checks still running and close the channel."""
        self._closing = True
        self.channel.pause()
        partners = [check.task for checks in self.detached.values() for check in checks]
        running = [*self.calls.values(), *partners, *self._dropped]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if self.channel.transport is not None:
            self.channel.transport.close()
