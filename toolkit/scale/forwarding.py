"""A node's view of the gateway: a judging backend, page source and tools that forward calls.

A node runner builds its local sandboxed pool over these, exactly as a local run builds it
over the real services, so a judge cannot tell where it runs. Each reply's usage, and the
pages it sent clipped, are charged to the current evaluation's meter; errors come back under
the gateway's own error type and kind (a budget stop is still kind `budget`), as an
`InfraError` noted in that meter too: the node never holds a key. A call Ray fails (the
gateway actor died) is `GatewayLost`, noted the same way, so it stops the run. Each call names
the attempt it is made for (`current_attempt`), so the gateway can tell the driver what an
attempt lost with its node spent, which that node can no longer report. Backend calls are
known to the evaluation's meter while they run (`judge_call`, as the metered backend of a local
run makes them), so the node can end those its judge left running when it ends.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from pydantic import TypeAdapter

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.pages.store import StoredPage
from toolkit.runner.metering import current_meter, judge_call, note_infra
from toolkit.sandbox.broker import ToolProvider
from toolkit.sandbox.protocol import Call, CallMethod
from toolkit.scale.errors import GatewayLost, is_ray_failure
from toolkit.scale.messages import GatewayInfo, GatewayReply

current_attempt: ContextVar[str | None] = ContextVar("judgegen_attempt", default=None)
"""The attempt of an evaluation this node is running (`NodeRunner.evaluate` sets it); its
gateway calls are tallied under it at the gateway."""


@functools.cache
def _error_class(name: str) -> type[InfraError]:
    """An `InfraError` named as the gateway's error was, so results name the real cause."""
    return type(name if name.isidentifier() else "InfraError", (InfraError,), {})


class GatewayLink:
    """Sends broker calls to the gateway actor; one per node runner.

    `cancel` stops a call at the gateway (Ray's `ray.cancel`) when the judge gives up on it,
    e.g. a claim's other page checks once one page supports it, so the gateway does not go on
    spending on it, as a local run would not.
    """

    def __init__(
        self, gateway: Any, info: GatewayInfo, cancel: Callable[[Any], None] | None = None
    ) -> None:
        self.gateway = gateway
        self.info = info
        self.cancel = cancel
        self._ids = itertools.count(1)

    async def call(self, method: CallMethod, payload: dict[str, Any]) -> Any:
        """The gateway's result for one call; its error re-raised as an `InfraError`, and
        Ray's failure to reach it as `GatewayLost` (each noted in the evaluation's meter: a
        judge that catches it cannot make the evaluation look complete)."""
        call = Call(call_id=next(self._ids), method=method, payload=payload)
        pending = self.gateway.handle.remote(call, current_attempt.get())
        try:
            answer: GatewayReply = await pending
        except asyncio.CancelledError:
            if self.cancel is not None:
                self.cancel(pending)
            raise
        except Exception as exc:
            if not is_ray_failure(exc):
                raise
            lost = GatewayLost.of(exc)
            note_infra(lost)
            raise lost from None
        meter = current_meter.get()
        if meter is not None:
            meter.usage = meter.usage + answer.usage
            meter.clipped.update(answer.clipped)
        error = answer.reply.error
        if error is not None:
            kind = str(error.get("kind") or "backend")
            failure = _error_class(str(error.get("type") or "InfraError"))(
                str(error.get("message") or ""), kind=kind
            )
            note_infra(failure)
            raise failure
        return answer.reply.result


class GatewayBackend:
    """The judging backend of a node: extraction and verification happen at the gateway."""

    def __init__(self, link: GatewayLink) -> None:
        self.link = link
        self.model = link.info.model
        self.extract_model = link.info.extract_model

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        payload = request.model_dump(mode="json", exclude={"template_class"})
        with judge_call():
            return dict(await self.link.call("extract", payload) or {})

    async def verify(self, request: VerifyRequest) -> Verdict:
        with judge_call():
            reply = await self.link.call("verify", request.model_dump(mode="json"))
        return Verdict.model_validate(reply)


_STORED_PAGE: TypeAdapter[StoredPage] = TypeAdapter(StoredPage)


class GatewayPages:
    """The page source of a node: reads go to the one page store, at the gateway.

    Offers `screenshot` when the gateway's source has screenshots, and `stored_page` when it
    is a page store: then a check reads a page in one call, its text and screenshot from one
    store read, with the hashes the store has for exactly those (as a local run notes them).
    """

    def __init__(self, link: GatewayLink) -> None:
        self.link = link
        if link.info.screenshots:
            self.screenshot = self._screenshot
        if link.info.stored_pages:
            self.stored_page = self._stored_page

    async def get(self, url: str) -> str | None:
        return await self.link.call("page_get", {"url": url})

    async def _screenshot(self, url: str) -> str | None:
        return await self.link.call("page_screenshot", {"url": url})

    async def _stored_page(self, url: str) -> StoredPage | None:
        """The page's text, screenshot and their hashes (`PageStore.stored_page`), None when
        it is missing; a reply of another shape is refused, not misread."""
        page = await self.link.call("page_stored", {"url": url})
        return None if page is None else _STORED_PAGE.validate_python(page)


def gateway_tools(link: GatewayLink) -> dict[str, ToolProvider]:
    """One forwarding function per tool the gateway offers."""

    def tool(name: str) -> ToolProvider:
        async def forward(**args: Any) -> Any:
            return await link.call("tool", {"name": name, "args": args})

        return forward

    return {name: tool(name) for name in link.info.tools}
