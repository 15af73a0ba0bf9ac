"""Workloads for the runner bench: published-style judges, answers, cited pages, and the
schedule each evaluation needs (its longest chain of dependent LLM calls) and what Mind2Web 2
would spend on it.

The judges follow the shape of the published Mind2Web 2 judges (tests/fixtures/m2w2): one
extraction from the answer, then item after item — a critical check of the item against all
its cited pages (several URLs, the first sometimes missing from the page store), an
extraction from its page, two detail checks — and two final checks at once. Every `await`
depends on the one before, so an evaluation is one long chain of LLM calls (~7 per item).
"""

from __future__ import annotations

import asyncio
import json
import selectors
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JUDGE = '''"""Bench judge {task_id}: published-style sequential checks, item after item."""

from pydantic import BaseModel, Field

from toolkit import Evaluator, VerificationNode

TASK_ID = "{task_id}"
TASK_DESCRIPTION = """Find {items} places for task {task_id}. For each give its name, the year it
opened and the URLs of pages that support it."""


class Item(BaseModel):
    name: str | None = None
    year: int | None = None
    urls: list[str] = Field(default_factory=list)


class ItemList(BaseModel):
    items: list[Item] = Field(default_factory=list)


class PageFacts(BaseModel):
    year: int | None = None
    official: bool | None = None


async def check_item(ev: Evaluator, parent: VerificationNode, item: Item, index: int) -> None:
    node = ev.add_sequential(id=f"item_{{index}}", desc=f"Item {{index}} meets the task", parent=parent)
    ev.add_custom_node(
        result=bool(item.name and item.urls),
        id=f"item_{{index}}_given",
        desc=f"Item {{index}} has a name and a source",
        parent=node,
        critical=True,
    )
    exists = ev.add_leaf(id=f"item_{{index}}_exists", desc="The item exists", parent=node, critical=True)
    await ev.verify(claim=f"{{item.name}} is a place that matches the task.", node=exists, sources=item.urls)
    facts = await ev.extract(
        prompt=f"From this page about {{item.name}}, extract the year it opened.",
        template_class=PageFacts,
        extraction_name=f"item_{{index}}_page",
        source=item.urls[-1] if item.urls else None,
    )
    details = ev.add_parallel(id=f"item_{{index}}_details", desc="Details are right", parent=node)
    ev.add_custom_node(
        result=facts.year is not None and facts.year == item.year,
        id=f"item_{{index}}_year_matches",
        desc="The year matches the page",
        parent=details,
        critical=False,
    )
    year = ev.add_leaf(id=f"item_{{index}}_year", desc="The year is supported", parent=details)
    await ev.verify(
        claim=f"{{item.name}} opened in {{item.year}}.",
        node=year,
        sources=item.urls[-1] if item.urls else None,
    )
    fits = ev.add_leaf(id=f"item_{{index}}_fits", desc="The item fits the request", parent=details)
    await ev.verify(claim=f"{{item.name}} is what the task asks for.", node=fits)


async def evaluate(ev: Evaluator) -> None:
    found = await ev.extract(
        prompt="Extract every place the answer gives: name, year opened, cited URLs.",
        template_class=ItemList,
        extraction_name="items",
    )
    group = ev.add_parallel(id="items", desc="Every item meets the task")
    for index, item in enumerate(found.items[:{items}]):
        await check_item(ev, group, item, index)
    overall = ev.add_parallel(id="overall", desc="The answer as a whole")
    distinct = ev.add_leaf(id="distinct", desc="The items are distinct", parent=overall)
    focused = ev.add_leaf(id="focused", desc="The answer stays on the task", parent=overall)
    names = ", ".join(item.name or "unnamed" for item in found.items)
    await ev.batch_verify(
        [
            (f"The places {{names}} are all different places.", None, distinct, None),
            (f"The places {{names}} are what the task asks for.", None, focused, "Be lenient."),
        ]
    )
'''


@dataclass(frozen=True)
class Workload:
    """`tasks` judges × `answers` answers each, `items` items per answer."""

    name: str
    tasks: int
    answers: int
    items: int

    @property
    def evaluations(self) -> int:
        return self.tasks * self.answers


def item_urls(task_id: str, answer: int, index: int) -> list[str]:
    """The URLs an answer cites for one item: three, the first missing for every third item."""
    base = f"https://example.org/{task_id}/a{answer}/item{index}"
    return [f"{base}/{which}" for which in ("review", "official", "wiki")]


def missing(url: str) -> bool:
    """Whether the page store lacks this URL (a missing page is a verdict, never a call)."""
    return url.endswith("/review") and int(url.split("/item")[1].split("/")[0]) % 3 == 1


def build(root: Path, workload: Workload, page_chars: int, screenshot_bytes: int) -> None:
    """Write judges, answers (with the data the scripted model extracts) and the page store."""
    from latency_model import DATA_MARK

    from toolkit.pages import PageRecord, PageStore

    (root / "judges").mkdir(parents=True)
    filler = ("Opening hours, history and visitor information. " * (page_chars // 48 + 1))[
        :page_chars
    ]
    shot = b"\xff\xd8\xff\xe0" + bytes(range(256)) * (screenshot_bytes // 256)
    with PageStore(root / "pages") as store:
        for t in range(workload.tasks):
            task_id = f"{workload.name}_{t:03d}"
            source = JUDGE.format(task_id=task_id, items=workload.items)
            (root / "judges" / f"{task_id}.py").write_text(source)
            for a in range(1, workload.answers + 1):
                items = []
                for i in range(workload.items):
                    urls = item_urls(task_id, a, i)
                    year = 1950 + (t * 7 + a * 3 + i) % 70
                    items.append(
                        {"name": f"Place {i} of {task_id}/{a}", "year": year, "urls": urls}
                    )
                    for url in urls:
                        if not missing(url):
                            text = f"Place {i} of {task_id}/{a}. Year: {year}. {filler}"
                            store.put(PageRecord.web(url, text, shot))
                data = json.dumps({"items": items}, sort_keys=True)
                path = root / "answers" / "bench_agent" / task_id / f"answer_{a}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"My answer lists {workload.items} places.\n\n{DATA_MARK}{data}\n")


# -- the schedule each evaluation needs ------------------------------------------------------


class _VirtualSelector(selectors.DefaultSelector):
    """Never sleeps: a wait for a timer advances the loop's virtual clock instead."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            return super().select(None)
        self.now += timeout
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose `time()` is virtual: `asyncio.sleep(L)` costs no wall time, and a
    coroutine's virtual duration is exactly the sum of the latencies on its critical path."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


@dataclass
class Schedule:
    """What the evaluations of a workload need, independent of the machine."""

    chains: list[int]
    calls: list[int]
    m2w2_calls: list[int]
    shared_steps: int | None = None
    """Latencies the whole workload takes at zero overhead when all evaluations share one LLM
    concurrency limit (the run's, same policy): the floor of a real run, which a burst of
    calls over the limit makes longer than the longest chain."""
    scores: dict[str, float | None] = field(default_factory=dict)
    """Each evaluation's final score ("agent/task/answer"), judged in process here: what every
    timed run must write too, so a change that is faster because it judges differently (a
    page check skipped, a vote lost) shows as a mismatch, never as a speed-up."""


def schedule(root: Path, latency: float, concurrency: int | None = None) -> Schedule:
    """Run every evaluation at once, in process, with unlimited LLM concurrency on a virtual
    clock, through the real LLMBackend and LLM client (cache off): each evaluation's virtual
    duration / latency is its longest chain of dependent calls under this implementation.
    With `concurrency`, run them all again through one client with that limit, for
    `shared_steps`."""
    loop = VirtualClockLoop()
    try:
        found = loop.run_until_complete(_schedule(root, latency))
        if concurrency is not None:
            found.shared_steps = loop.run_until_complete(_shared(root, latency, concurrency))
        return found
    finally:
        loop.close()


def _provider() -> Any:
    """The bench's scripted model, keeping no log of its requests where it can."""
    from latency_model import respond

    from toolkit.llm import ScriptedProvider

    try:
        return ScriptedProvider(respond, record=False)
    except TypeError:  # a checkout from before `record` (runner_bench.py --repo)
        return ScriptedProvider(respond)


def _inputs(root: Path, latency: float) -> tuple[Any, list[Any], dict[str, Any]]:
    """The workload's page store, answers and judges, with the scripted model's latency set."""
    import os

    from latency_model import LATENCY_ENV

    from toolkit.pages import PageStore
    from toolkit.runner.inputs import discover_answers
    from toolkit.runner.loader import load_judge

    os.environ[LATENCY_ENV] = str(latency)
    judges = {p.stem: load_judge(p) for p in (root / "judges").glob("*.py")}
    return PageStore(root / "pages", readonly=True), discover_answers(root / "answers"), judges


async def _shared(root: Path, latency: float, concurrency: int) -> int:
    """Virtual latencies from the first evaluation's start to the last one's end, every
    evaluation started at once and sharing one client limited to `concurrency` calls."""
    from toolkit.backends import LLMBackend
    from toolkit.llm import LLMClient

    store, inputs, judges = _inputs(root, latency)
    backend = LLMBackend(LLMClient(_provider(), concurrency=concurrency), model="o4-mini")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(
        *(
            judges[item.task_id].run(backend=backend, answer=item.text or "", pages=store)
            for item in inputs
        )
    )
    store.close()
    return round((loop.time() - started) / latency)


async def _schedule(root: Path, latency: float) -> Schedule:
    from latency_model import respond
    from m2w2_cost import m2w2_calls

    from toolkit.backends import LLMBackend
    from toolkit.llm import LLMClient, ScriptedProvider

    store, inputs, judges = _inputs(root, latency)

    async def one(item: Any) -> tuple[int, int, int, float | None]:
        provider = ScriptedProvider(respond)
        backend = LLMBackend(LLMClient(provider, concurrency=1_000_000), model="o4-mini")
        loop = asyncio.get_running_loop()
        started = loop.time()
        summary, _ = await judges[item.task_id].run(
            backend=backend, answer=item.text or "", pages=store
        )
        chain = round((loop.time() - started) / latency)
        paid = sum(1 for r in provider.calls if r.metadata.purpose == "extract")
        score = summary.get("final_score")
        return chain, len(provider.calls), m2w2_calls(summary, paid, store), score

    rows = await asyncio.gather(*(one(item) for item in inputs))
    store.close()
    return Schedule(
        chains=[r[0] for r in rows],
        calls=[r[1] for r in rows],
        m2w2_calls=[r[2] for r in rows],
        scores={
            f"{item.agent_name}/{item.task_id}/{item.answer_name}": r[3]
            for item, r in zip(inputs, rows, strict=True)
        },
    )


if __name__ == "__main__":  # `python runner_workload.py ROOT [CONCURRENCY]`: ROOT's schedule
    import sys
    from dataclasses import asdict

    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps(asdict(schedule(Path(sys.argv[1]), 1.0, limit))))
