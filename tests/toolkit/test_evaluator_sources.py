"""Verifying a claim against several cited pages: two pages at a time, in order, first yes wins."""

from __future__ import annotations

import asyncio

import pytest

from tests.toolkit.conftest import DictPages
from toolkit.backends import Verdict, VerifyRequest
from toolkit.errors import InfraError
from toolkit.evaluator import Evaluator

URLS = [f"https://{name}.example/" for name in "abcde"]


class GatedBackend:
    """Verdicts by URL; each URL's check waits for its gate, so tests decide the timing."""

    def __init__(
        self, passing: set[str], errors: frozenset[str] = frozenset(), *, opened: bool = False
    ) -> None:
        self.passing = passing
        self.errors = errors
        self.gates = {url: asyncio.Event() for url in URLS}
        for gate in self.gates.values() if opened else ():
            gate.set()  # every check answers at once
        self.started: list[str] = []
        self.cancelled: list[str] = []

    async def extract(self, request):  # pragma: no cover - not used here
        return {}

    async def verify(self, request: VerifyRequest) -> Verdict:
        url = request.sources[0]
        self.started.append(url)
        try:
            await self.gates[url].wait()
        except asyncio.CancelledError:
            self.cancelled.append(url)
            raise
        if url in self.errors:
            raise InfraError(f"LLM call for {url} failed", kind="llm")
        return Verdict(passed=url in self.passing, reasoning=f"checked {url}")


def evaluator(backend: GatedBackend) -> Evaluator:
    return Evaluator.create(
        task_id="t1",
        task_description="Find things.",
        answer="the answer",
        backend=backend,
        pages=DictPages({url: f"page {url}" for url in URLS}),
        agent_name="agent",
        answer_name="answer_1",
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_two_cited_pages_are_checked_at_once() -> None:
    backend = GatedBackend(passing={URLS[1]})
    ev = evaluator(backend)
    verify = asyncio.ensure_future(ev.verify("c", ev.add_leaf(id="x", desc="x"), sources=URLS[:3]))
    await settle()
    assert backend.started == URLS[:2]
    backend.gates[URLS[0]].set()
    backend.gates[URLS[1]].set()
    assert await verify is True
    assert backend.started == URLS[:2]


async def test_the_earliest_supporting_page_decides_even_when_a_later_one_answers_first() -> None:
    backend = GatedBackend(passing={URLS[0], URLS[1]})
    ev = evaluator(backend)
    verify = asyncio.ensure_future(ev.verify("c", ev.add_leaf(id="x", desc="x"), sources=URLS[:2]))
    await settle()
    backend.gates[URLS[1]].set()
    await settle()
    assert not verify.done()
    backend.gates[URLS[0]].set()
    assert await verify is True
    assert ev.verifications[-1]["supported_by"] == URLS[0]


async def test_a_supporting_page_waits_for_its_wave_partner_and_no_later_wave_starts() -> None:
    backend = GatedBackend(passing={URLS[0]})
    ev = evaluator(backend)
    verify = asyncio.ensure_future(ev.verify("c", ev.add_leaf(id="x", desc="x"), sources=URLS))
    await settle()
    backend.gates[URLS[0]].set()
    await settle()
    assert not verify.done()  # the partner's call was made: it completes and is counted
    backend.gates[URLS[1]].set()
    assert await verify is True
    assert backend.cancelled == []
    assert backend.started == URLS[:2]
    assert ev.verifications[-1]["supported_by"] == URLS[0]


async def test_later_waves_start_only_after_no_page_of_the_earlier_wave_supports_it() -> None:
    backend = GatedBackend(passing={URLS[4]}, opened=True)
    ev = evaluator(backend)
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify("c", node, sources=URLS) is True
    assert backend.started == URLS and ev.verifications[-1]["supported_by"] == URLS[4]


@pytest.mark.parametrize(
    ("supporting", "failing", "verdict", "status"),
    [(1, 0, False, "error"), (0, 1, True, "passed")],
    ids=["before the supporting page: the leaf is error", "after it: the verdict stands"],
)
async def test_a_failing_check_of_a_wave_makes_the_run_incomplete(
    supporting: int, failing: int, verdict: bool, status: str
) -> None:
    backend = GatedBackend(
        passing={URLS[supporting]}, errors=frozenset({URLS[failing]}), opened=True
    )
    ev = evaluator(backend)
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify("c", node, sources=URLS[:2]) is verdict
    assert node.status == status and ev.status == "incomplete"
    assert [(e["target"], e["type"]) for e in ev.errors] == [("x", "InfraError")]


async def test_verifications_are_logged_in_the_order_they_start_not_finish() -> None:
    backend = GatedBackend(passing=set(URLS))
    ev = evaluator(backend)
    first = ev.verify("first", ev.add_leaf(id="x", desc="x"), sources=URLS[0])
    second = ev.verify("second", ev.add_leaf(id="y", desc="y"), sources=URLS[1])
    both = asyncio.gather(first, second)
    await settle()
    backend.gates[URLS[1]].set()
    await settle()
    backend.gates[URLS[0]].set()
    assert await both == [True, True]
    assert [entry["claim"] for entry in ev.verifications] == ["first", "second"]


def detaching(backend: GatedBackend, pages: dict[str, str | None] | None = None) -> Evaluator:
    """An evaluator as the runner drives it: wave partners detached, settled at the end."""
    ev = evaluator(backend)
    if pages is not None:
        ev.pages = DictPages(pages)
    ev.detach_partners = True
    return ev


async def test_a_supporting_page_decides_at_once_when_partners_are_detached() -> None:
    backend = GatedBackend(passing={URLS[0]})
    ev = detaching(backend)
    node = ev.add_leaf(id="x", desc="x")
    verify = asyncio.ensure_future(ev.verify("c", node, sources=URLS))
    await settle()
    backend.gates[URLS[0]].set()
    assert await asyncio.wait_for(verify, 5) is True  # its partner still runs
    assert node.status == "passed" and ev.verifications[-1]["supported_by"] == URLS[0]
    settling = asyncio.ensure_future(ev.settle_partners())
    await settle()
    assert not settling.done()  # the partner's call is made and waited for, never cancelled
    backend.gates[URLS[1]].set()
    await settling
    assert backend.started == URLS[:2] and backend.cancelled == []
    assert ev.status == "complete"


async def test_a_detached_partner_that_fails_leaves_the_verdict_and_makes_the_run_incomplete() -> (
    None
):
    backend = GatedBackend(passing={URLS[0]}, errors=frozenset({URLS[1]}))
    ev = detaching(backend)
    node = ev.add_leaf(id="x", desc="x")
    verify = asyncio.ensure_future(ev.verify("c", node, sources=URLS[:2]))
    await settle()
    backend.gates[URLS[0]].set()
    assert await asyncio.wait_for(verify, 5) is True
    backend.gates[URLS[1]].set()
    await ev.settle_partners()
    assert node.status == "passed" and node.score == 1.0  # what the judge went on with
    assert ev.status == "incomplete"
    (entry,) = ev.errors
    assert entry["operation"] == "verify" and entry["target"] == "x"
    assert (
        URLS[1] in entry["message"] and "LLM call for https://b.example/ failed" in entry["message"]
    )


async def test_a_partner_s_missing_page_is_noted_before_the_verdict_returns() -> None:
    backend = GatedBackend(passing={URLS[0]})
    ev = detaching(backend, pages={URLS[0]: "page a", URLS[1]: None})
    verify = asyncio.ensure_future(ev.verify("c", ev.add_leaf(id="x", desc="x"), sources=URLS[:2]))
    await settle()
    backend.gates[URLS[0]].set()
    assert await asyncio.wait_for(verify, 5) is True
    assert ev.missing_sources == [URLS[1]]
    backend.gates[URLS[1]].set()
    await ev.settle_partners()


async def test_a_failing_first_page_waits_for_its_detachable_partner() -> None:
    backend = GatedBackend(passing={URLS[1]})
    ev = detaching(backend)
    verify = asyncio.ensure_future(ev.verify("c", ev.add_leaf(id="x", desc="x"), sources=URLS[:2]))
    await settle()
    backend.gates[URLS[0]].set()
    await settle()
    assert not verify.done()
    backend.gates[URLS[1]].set()
    assert await verify is True
    assert ev.verifications[-1]["supported_by"] == URLS[1]


class UnreadablePage(DictPages):
    """Pages a to e, but reading `broken` fails (the page store's own error)."""

    def __init__(self, broken: str) -> None:
        super().__init__({url: f"page {url}" for url in URLS})
        self.broken = broken

    def get(self, url: str) -> str | None:
        if url == self.broken:
            raise OSError(f"the page store cannot read {url}")
        return super().get(url)


@pytest.mark.parametrize("detach", [False, True], ids=["waited for", "detached"])
async def test_a_partner_page_that_cannot_be_read_leaves_the_supporting_page_s_verdict(
    detach: bool,
) -> None:
    backend = GatedBackend(passing={URLS[0]}, opened=True)
    ev = evaluator(backend)
    ev.pages = UnreadablePage(URLS[1])
    ev.detach_partners = detach
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify("c", node, sources=URLS[:2]) is True  # as page by page: a decides
    await ev.settle_partners()
    assert node.status == "passed" and ev.verifications[-1]["supported_by"] == URLS[0]
    assert ev.status == "incomplete"
    (entry,) = ev.errors
    assert entry["target"] == "x" and entry["type"] == "OSError" and URLS[1] in entry["message"]


async def test_a_partner_page_that_cannot_be_read_is_the_leaf_s_error_when_no_earlier_page_supports_it() -> (
    None
):
    backend = GatedBackend(passing={URLS[1]}, opened=True)
    ev = evaluator(backend)
    ev.pages = UnreadablePage(URLS[1])
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify("c", node, sources=URLS[:2]) is False
    assert node.status == "error" and [e["type"] for e in ev.errors] == ["OSError"]
    assert backend.started == [URLS[0]]


async def test_a_first_page_that_cannot_be_read_is_the_leaf_s_error_and_no_partner_is_checked() -> (
    None
):
    backend = GatedBackend(passing={URLS[1]}, opened=True)
    ev = evaluator(backend)
    ev.pages = UnreadablePage(URLS[0])
    node = ev.add_leaf(id="x", desc="x")
    assert await ev.verify("c", node, sources=URLS[:2]) is False
    assert node.status == "error" and [e["type"] for e in ev.errors] == ["OSError"]
    assert backend.started == []
