"""The parent side of the judge channel: answers a sandboxed judge's calls with real services.

The broker owns the judging backend (and so the keys, cache, rate limits and budget), the page
source and the tool providers. A judge's process only ever sees the results, or an error
reduced to its type, kind and (redacted) message, which the worker re-raises as `InfraError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from toolkit.awaitables import resolve
from toolkit.backends import ExtractRequest, JudgingBackend, Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.evaluator import PageSource
from toolkit.runner.executors import ToolTable
from toolkit.sandbox.protocol import Call, Reply
from toolkit.util.redact import redact

ToolProvider = Callable[..., Awaitable[Any] | Any]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


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

    async def handle(self, call: Call) -> Reply:
        """Answer one call; every exception becomes an error reply, never a crash."""
        try:
            result = await self._dispatch(call.method, call.payload)
        except Exception as exc:
            error = {
                "type": type(exc).__name__,
                "kind": getattr(exc, "kind", None) or "backend",
                "message": redact(str(exc))[:2000],
            }
            return Reply(job_id=call.job_id, call_id=call.call_id, error=error)
        return Reply(job_id=call.job_id, call_id=call.call_id, result=_jsonable(result))

    async def _dispatch(self, method: str, payload: dict[str, Any]) -> Any:
        if method == "extract":
            raw = await self.backend.extract(ExtractRequest.model_validate(payload))
            return raw.model_dump(mode="json") if isinstance(raw, BaseModel) else dict(raw or {})
        if method == "verify":
            verdict = await self.backend.verify(VerifyRequest.model_validate(payload))
            return Verdict.model_validate(_jsonable(verdict)).model_dump(mode="json")
        if method == "page_get":
            if self.pages is None:
                return None
            return await resolve(self.pages.get(str(payload["url"])))
        if method == "page_screenshot":
            shot = getattr(self.pages, "screenshot", None)
            return await resolve(shot(str(payload["url"]))) if shot else None
        if method == "tool":
            result = await self.tools.call(str(payload["name"]), dict(payload.get("args") or {}))
            return _jsonable(result)
        raise InfraError(f"unknown broker method '{method}'", kind="protocol")
