"""Prints how long scoring a 603-node, 6-level rubric tree takes (target: ≤ 2 ms).

Also times building and scoring the same tree through the Evaluator with a zero-latency
scripted backend, so the per-node overhead of the judge API is visible.
Run: python bench/tree_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from toolkit.backends import ScriptedBackend, Verdict, VerifyRequest
from toolkit.evaluator import Evaluator
from toolkit.tree import VerificationNode

FANOUT = (3, 3, 4, 4)  # 1 + 3 + 9 + 36 + 144 internal nodes, then 410 leaves: 603 nodes


def _verdict(request: VerifyRequest) -> Verdict:
    return Verdict(passed=sum(map(ord, request.claim)) % 23 != 0, reasoning="bench")


async def build_and_verify() -> Evaluator:
    """Build the 603-node tree through the Evaluator, verifying every leaf."""
    ev = Evaluator.create(
        task_id="bench",
        task_description="bench",
        answer="",
        backend=ScriptedBackend(verify=_verdict),
    )
    level_nodes = [ev.root]
    for depth, fanout in enumerate(FANOUT):
        next_level = []
        for i, parent in enumerate(level_nodes):
            for j in range(fanout):
                add = ev.add_sequential if (i + j + depth) % 3 == 0 else ev.add_parallel
                critical = parent.critical or (j == 0 and depth % 2 == 1)
                next_level.append(
                    add(id=f"n{depth}_{i}_{j}", desc="group", parent=parent, critical=critical)
                )
        level_nodes = next_level
    leaves = []
    for i, parent in enumerate(level_nodes):
        for j in range(2 if i % 7 == 0 or i == 1 else 3):
            critical = parent.critical or j == 0
            leaves.append(
                ev.add_leaf(id=f"leaf_{i}_{j}", desc="leaf", parent=parent, critical=critical)
            )
    for leaf in leaves:
        await ev.verify(claim=leaf.id, node=leaf)
    return ev


def count(root: VerificationNode) -> tuple[int, int]:
    stats = {"nodes": 0, "depth": 0}
    stack = [(root, 1)]
    while stack:
        node, level = stack.pop()
        stats["nodes"] += 1
        stats["depth"] = max(stats["depth"], level)
        stack.extend((c, level + 1) for c in node.children)
    return stats["nodes"], stats["depth"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()

    ev = asyncio.run(build_and_verify())
    nodes, levels = count(ev.root)
    score_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        ev.root.compute_score(mutate=True)
        score_times.append(time.perf_counter() - start)
    build_times = []
    for _ in range(max(5, args.repeat // 10)):
        start = time.perf_counter()
        built = asyncio.run(build_and_verify())
        built.get_summary()
        build_times.append(time.perf_counter() - start)
    median_score_ms = statistics.median(score_times) * 1000
    print(f"tree: {nodes} nodes, {levels} levels, root score {ev.score():.4f}")
    print(
        f"score (compute_score, median of {args.repeat}): {median_score_ms:.3f} ms  (target ≤ 2 ms)"
    )
    print(
        f"build + verify + summary through Evaluator, zero-latency scripted backend "
        f"(median of {len(build_times)}): {statistics.median(build_times) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
