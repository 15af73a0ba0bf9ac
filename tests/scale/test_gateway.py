"""The gateway and a node's forwarding to it, without a cluster: a Ray actor handle is only a
way to call these methods from another process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.runner.scripted import make_backend
from toolkit.backends import ScriptedBackend, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded, InfraError
from toolkit.pages import PageRecord, PageStore
from toolkit.runner.fingerprint import PageReads
from toolkit.runner.metering import Meter, MeteredBackend, current_meter
from toolkit.runner.page_reads import RecordingPages, recording_page_reads
from toolkit.sandbox.protocol import Call
from toolkit.scale.forwarding import GatewayBackend, GatewayLink, GatewayPages
from toolkit.scale.gateway import Gateway, GatewayServices
from toolkit.sources import read_page
from toolkit.util.hashing import sha256_bytes, sha256_text


class Remote:
    """Stands in for a Ray actor method: `.remote(...)` returns an awaitable."""

    def __init__(self, method: Any) -> None:
        self.method = method

    def remote(self, *args: Any) -> Any:
        return self.method(*args)


class Handle:
    """Stands in for a Ray actor handle of `gateway`; `calls` lists the broker calls sent."""

    def __init__(self, gateway: Gateway) -> None:
        self.calls: list[str] = []
        self.handle = Remote(self._handle)
        self.info = Remote(gateway.info)
        self._gateway = gateway

    def _handle(self, call: Call, attempt: str | None = None) -> Any:
        self.calls.append(call.method)
        return self._gateway.handle(call, attempt)


class OutOfBudget:
    model = "scripted-judge"

    async def extract(self, request: Any) -> dict[str, Any]:
        raise BudgetExceeded("budget of $0.01 reached; extract request not made")

    async def verify(self, request: Any) -> Any:
        raise BudgetExceeded("budget of $0.01 reached; verify request not made")


def started(tmp_path: Path, services: GatewayServices) -> tuple[Gateway, GatewayLink]:
    gateway = Gateway(str(tmp_path), lambda: services)
    info = asyncio.run(gateway.start())
    return gateway, GatewayLink(Handle(gateway), info)


def test_services_that_fail_to_build_are_reported_not_raised(tmp_path: Path) -> None:
    def broken() -> GatewayServices:
        raise ValueError("no such provider")

    info = asyncio.run(Gateway(str(tmp_path), broken).start())
    assert info.error == "ValueError: no such provider"


def test_a_forwarded_verification_is_charged_to_the_evaluation_that_made_it(
    tmp_path: Path,
) -> None:
    services = GatewayServices(backend=MeteredBackend(make_backend()), identity="scripted")
    _, link = started(tmp_path, services)
    backend = GatewayBackend(link)

    async def one_evaluation() -> tuple[Verdict, Meter]:
        meter = Meter()
        current_meter.set(meter)
        verdict = await backend.verify(VerifyRequest(claim="Python 3.10 added match."))
        return verdict, meter

    verdict, meter = asyncio.run(one_evaluation())
    assert verdict == asyncio.run(
        make_backend().verify(VerifyRequest(claim="Python 3.10 added match."))
    )
    assert (meter.usage.backend_calls, meter.usage.verify_calls) == (1, 1)
    assert backend.model == "scripted-judge"


def test_a_forwarded_verification_keeps_its_trials_and_screenshot_choice(tmp_path: Path) -> None:
    backend = ScriptedBackend()
    _, link = started(tmp_path, GatewayServices(backend=backend, identity="scripted"))
    asyncio.run(GatewayBackend(link).verify(VerifyRequest(claim="c", trials=5, screenshots=False)))
    assert [(call.trials, call.screenshots) for call in backend.calls] == [(5, False)]


def test_a_budget_stop_at_the_gateway_reaches_the_node_as_the_same_error_kind(
    tmp_path: Path,
) -> None:
    _, link = started(tmp_path, GatewayServices(backend=OutOfBudget(), identity="scripted"))
    with pytest.raises(InfraError) as raised:
        asyncio.run(GatewayBackend(link).verify(VerifyRequest(claim="anything")))
    assert raised.value.kind == "budget" and type(raised.value).__name__ == "BudgetExceeded"
    assert "budget of $0.01 reached" in str(raised.value)


def test_page_reads_go_to_the_gateway_page_store(tmp_path: Path) -> None:
    class Pages:
        def get(self, url: str) -> str | None:
            return "Python 3.10 was released." if url == "https://python.org" else None

    services = GatewayServices(backend=OutOfBudget(), identity="x", pages=Pages())
    _, link = started(tmp_path, services)
    pages = GatewayPages(link)
    assert asyncio.run(pages.get("https://python.org")) == "Python 3.10 was released."
    assert asyncio.run(pages.get("https://example.org")) is None
    assert not hasattr(pages, "screenshot")  # the store offers none, so neither does the node
    assert not hasattr(pages, "stored_page")  # nor whole reads: the node reads text, then shot


def test_a_call_the_judge_gives_up_on_is_cancelled_at_the_gateway(tmp_path: Path) -> None:
    """A cancelled forwarded call is cancelled at the gateway too, not left spending there."""
    started_call, cancelled = asyncio.Event(), []

    class Slow:
        model = "slow"

        async def extract(self, request: Any) -> dict[str, Any]:
            return {}

        async def verify(self, request: Any) -> Verdict:
            started_call.set()
            await asyncio.sleep(60)
            return Verdict(passed=True)

    gateway = Gateway(str(tmp_path), lambda: GatewayServices(backend=Slow(), identity="slow"))

    async def give_up() -> None:
        info = await gateway.start()
        link = GatewayLink(Handle(gateway), info, cancel=lambda pending: cancelled.append(1))
        check = asyncio.ensure_future(GatewayBackend(link).verify(VerifyRequest(claim="x")))
        await started_call.wait()
        check.cancel()
        with pytest.raises(asyncio.CancelledError):
            await check

    asyncio.run(give_up())
    assert cancelled == [1]


def page_store(tmp_path: Path) -> PageStore:
    """A run's read-only page store: a page with a screenshot, one without, one the page
    itself failed (a 404: missing) and one our browser failed (an infrastructure error)."""
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web("https://a.org/", "Page A", b"\xff\xd8jpeg-a"))
        writer.put(PageRecord.web("https://b.org/", "Page B", None))
        writer.put(PageRecord.failure("https://404.org/", "http", "HTTP 404"))
        writer.put(PageRecord.failure("https://crashed.org/", "browser", "Chromium crashed"))
    return PageStore(tmp_path / "pages", readonly=True)


def node_over(tmp_path: Path, store: PageStore) -> tuple[RecordingPages, Handle]:
    """A node's page source (recording, over the gateway serving `store`) and the gateway
    handle it calls."""
    _, link = started(tmp_path, GatewayServices(backend=OutOfBudget(), identity="x", pages=store))
    return RecordingPages(GatewayPages(link)), link.gateway


async def checked(pages: RecordingPages, urls: list[str]) -> tuple[list[Any], PageReads]:
    """Read each page as a claim checked against it is, in one evaluation: what was served
    and what the evaluation's fingerprint notes."""
    with recording_page_reads() as log:
        served = [await read_page(pages, url) for url in urls]
    return served, log.reads()


def test_a_cited_page_read_on_a_node_is_one_gateway_call_noted_as_a_local_read_notes(
    tmp_path: Path,
) -> None:
    """Text and screenshot come from one store read at the gateway, with the store's hashes
    of exactly those, so a rerun compares the same fingerprint wherever the check ran."""
    store = page_store(tmp_path)
    node, gateway = node_over(tmp_path, store)
    urls = ["https://a.org/", "https://b.org/"]

    served, reads = asyncio.run(checked(node, urls))

    assert gateway.calls == ["page_stored", "page_stored"]
    assert served == [("Page A", [store.screenshot("https://a.org/")]), ("Page B", [])]
    assert reads.read == {
        "https://a.org/": sha256_text("Page A"),
        "https://b.org/": sha256_text("Page B"),
    }
    assert reads.shots == {
        "https://a.org/": sha256_bytes(b"\xff\xd8jpeg-a"),
        "https://b.org/": None,
    }
    assert (served, reads) == asyncio.run(checked(RecordingPages(store), urls))
    store.close()


def test_a_page_missing_at_the_gateway_is_none_and_noted_missing(tmp_path: Path) -> None:
    store = page_store(tmp_path)
    node, gateway = node_over(tmp_path, store)
    urls = ["https://never-captured.org/", "https://404.org/"]

    served, reads = asyncio.run(checked(node, urls))

    assert gateway.calls == ["page_stored", "page_stored"]
    assert served == [(None, []), (None, [])]
    assert reads == PageReads(missing=("https://404.org/", "https://never-captured.org/"))
    store.close()


def test_a_page_our_browser_failed_reaches_the_node_as_the_stores_error_kind(
    tmp_path: Path,
) -> None:
    """The evaluation is incomplete (and retried), never scored as if the page were missing."""
    store = page_store(tmp_path)
    node, gateway = node_over(tmp_path, store)

    async def one_evaluation() -> Meter:
        meter = Meter()
        current_meter.set(meter)
        with pytest.raises(InfraError) as raised, recording_page_reads():
            await read_page(node, "https://crashed.org/")
        assert raised.value.kind == "page_capture" and "Chromium crashed" in str(raised.value)
        return meter

    meter = asyncio.run(one_evaluation())
    assert gateway.calls == ["page_stored"]
    assert [error["kind"] for error in meter.infra] == ["page_capture"]
    store.close()
