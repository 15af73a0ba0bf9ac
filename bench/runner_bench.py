"""Runner scheduling bench: how close a run gets to the ideal schedule, and what a rerun costs.

N synthetic judges × A answers; each judge makes one extraction, then WIDTH verifications at
once, then one final verification (a dependent chain of 3 calls). The scripted backend sleeps
a fixed latency per call behind a concurrency limit, like a rate-limited LLM. Prints the wall
time, the ideal schedule max(chain × latency, calls × latency / concurrency), their ratio
(target ≤ 1.2), the calls made, and the calls an immediate rerun makes (target 0).

    python bench/runner_bench.py [--judges 20] [--answers 3] [--latency 0.05] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.runner.inputs import discover_answers
from toolkit.runner.scheduler import RunOptions, run_evaluations

CHAIN = 3
JUDGE = '''"""Synthetic judge {task_id}: extract, {width} verifications at once, one final check."""

import asyncio

from pydantic import BaseModel, Field

from toolkit import Evaluator

TASK_ID = "{task_id}"
TASK_DESCRIPTION = "Synthetic task {task_id}."


class Items(BaseModel):
    items: list[str] = Field(default_factory=list)


async def evaluate(ev: Evaluator) -> None:
    found = await ev.extract(prompt="List the items.", template_class=Items, extraction_name="items")
    group = ev.add_parallel(id="items", desc="Every item is supported")
    leaves = [ev.add_leaf(id=f"item_{{i}}", desc=f"Item {{i}}", parent=group) for i in range({width})]
    await asyncio.gather(
        *(ev.verify(claim=f"Item '{{v}}' holds", node=leaf) for leaf, v in zip(leaves, found.items))
    )
    final = ev.add_leaf(id="consistent", desc="The answer is consistent")
    await ev.verify(claim="The answer is consistent", node=final)
'''


class LatencyBackend:
    """Answers after `latency` seconds, at most `concurrency` calls at a time; counts calls."""

    model = "bench-latency"

    def __init__(self, latency: float, concurrency: int, width: int) -> None:
        self.latency = latency
        self.width = width
        self.slots = asyncio.Semaphore(concurrency)
        self.calls = 0

    async def _wait(self) -> None:
        self.calls += 1
        async with self.slots:
            await asyncio.sleep(self.latency)

    async def extract(self, request: ExtractRequest) -> dict[str, Any]:
        await self._wait()
        return {"items": [f"item {i}" for i in range(self.width)]}

    async def verify(self, request: VerifyRequest) -> Verdict:
        await self._wait()
        return Verdict(passed=True, reasoning="bench")


def build_inputs(root: Path, judges: int, answers: int, width: int) -> None:
    """Write the synthetic judges and answers under `root`."""
    (root / "judges").mkdir()
    for j in range(judges):
        task_id = f"synthetic_{j:03d}"
        (root / "judges" / f"{task_id}.py").write_text(JUDGE.format(task_id=task_id, width=width))
        for a in range(1, answers + 1):
            path = root / "answers" / "bench_agent" / task_id / f"answer_{a}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"Answer {a} to {task_id}: items 0..{width - 1}.\n")


async def timed_run(root: Path, backend: LatencyBackend, jobs: int, sandbox: bool) -> float:
    """One run over the bench inputs; returns the wall time in seconds."""
    options = RunOptions(
        judges_dir=root / "judges",
        results_dir=root / "results",
        reviews_dir=root / "reviews",
        include_unreviewed=True,
        jobs=jobs,
    )
    inputs = discover_answers(root / "answers")
    started = time.perf_counter()
    if sandbox:
        from toolkit.runner.metering import MeteredBackend
        from toolkit.sandbox.pool import WorkerPool

        metered = MeteredBackend(backend)
        async with WorkerPool(jobs, None, metered) as pool:
            started = time.perf_counter()
            await run_evaluations(inputs, backend=metered, options=options, executor=pool)
    else:
        await run_evaluations(inputs, backend=backend, options=options)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--answers", type=int, default=3)
    parser.add_argument("--width", type=int, default=4, help="Verifications run at once.")
    parser.add_argument("--latency", type=float, default=0.05, help="Seconds per call.")
    parser.add_argument("--concurrency", type=int, default=16, help="Calls in flight at most.")
    parser.add_argument("--jobs", type=int, default=64, help="Evaluations in flight at most.")
    parser.add_argument("--sandbox", action="store_true", help="Use the sandboxed worker pool.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_inputs(root, args.judges, args.answers, args.width)
        backend = LatencyBackend(args.latency, args.concurrency, args.width)
        wall = asyncio.run(timed_run(root, backend, args.jobs, args.sandbox))
        calls = backend.calls
        rerun_wall = asyncio.run(timed_run(root, backend, args.jobs, args.sandbox))
        rerun_calls = backend.calls - calls
    evaluations = args.judges * args.answers
    ideal = max(CHAIN * args.latency, calls * args.latency / args.concurrency)
    mode = "sandboxed workers" if args.sandbox else "in-process"
    print(f"runner bench ({mode}): {args.judges} judges x {args.answers} answers")
    print(f"  evaluations            {evaluations}")
    print(f"  calls made             {calls} ({calls / evaluations:.0f} per evaluation)")
    print(f"  latency / concurrency  {args.latency * 1000:.0f} ms / {args.concurrency}")
    print(f"  longest chain          {CHAIN} calls = {CHAIN * args.latency:.3f} s")
    print(f"  ideal schedule         {ideal:.3f} s")
    print(f"  measured wall time     {wall:.3f} s")
    print(f"  ratio (target <= 1.2)  {wall / ideal:.3f}")
    print(f"  rerun calls (target 0) {rerun_calls}  (rerun wall {rerun_wall:.3f} s)")


if __name__ == "__main__":
    main()
