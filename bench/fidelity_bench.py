"""Fidelity of `judgegen import`: imported Mind2Web 2-style judges vs their native twins.

For every fixture judge (tests/fixtures/m2w2), answer and verdict pattern, runs the imported
judge and the natively written one on the same scripted backend, pages and maps, and prints
whether their rubric trees and final scores are identical, how many backend calls
(extract + verify) and tool calls each made, and the LLM calls (votes of 2 agreeing trials)
of the imported judge next to what Mind2Web 2's own toolkit spends on the same judge and
verdicts (bench/m2w2_cost.py). Targets: identical everywhere, imported calls <= native calls
(ideally equal), LLM calls <= Mind2Web 2's in every run.

Run: python bench/fidelity_bench.py [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from m2w2_cost import judgegen_calls, m2w2_calls, paid_extractions  # noqa: E402

from generator.importer import import_judge  # noqa: E402
from tests.fixtures.m2w2 import scenario  # noqa: E402


async def measure(out_dir: Path) -> list[dict]:
    """One row per (task, answer, pattern)."""
    rows = []
    for task in scenario.TASKS.values():
        report = import_judge(task.m2w2_judge, out_dir)
        if report.problems:
            raise SystemExit(f"{task.name}: import failed: {report.problems}")
        for answer in task.answers:
            for pattern in scenario.PATTERNS:
                mine = await scenario.run(task, Path(report.output), answer, pattern)
                native = await scenario.run(task, task.native_judge, answer, pattern)
                rows.append(
                    {
                        "task": task.name,
                        "answer": answer,
                        "pattern": pattern,
                        "tree_identical": mine.tree == native.tree,
                        "score_identical": mine.summary["final_score"]
                        == native.summary["final_score"],
                        "score": mine.summary["final_score"],
                        "imported_calls": mine.backend_calls,
                        "native_calls": native.backend_calls,
                        "imported_tool_calls": mine.tool_calls,
                        "native_tool_calls": native.tool_calls,
                        "llm_calls": judgegen_calls(mine.requests),
                        "m2w2_llm_calls": m2w2_calls(
                            mine.summary, paid_extractions(mine.requests), scenario.DictPages()
                        ),
                    }
                )
    return rows


def print_table(rows: list[dict]) -> None:
    header = (
        f"{'task':<20} {'answer':<22} {'pattern':<9} {'tree':<5} {'score':<5} "
        f"{'value':>6} {'calls imp/nat':>13} {'tools imp/nat':>13} {'LLM ours/m2w2':>13}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['task']:<20} {r['answer']:<22} {r['pattern']:<9} "
            f"{'same' if r['tree_identical'] else 'DIFF':<5} "
            f"{'same' if r['score_identical'] else 'DIFF':<5} {r['score']:>6.3f} "
            f"{r['imported_calls']:>6}/{r['native_calls']:<6} "
            f"{r['imported_tool_calls']:>6}/{r['native_tool_calls']:<6} "
            f"{r['llm_calls']:>6}/{r['m2w2_llm_calls']:<6}"
        )
    identical = sum(r["tree_identical"] and r["score_identical"] for r in rows)
    imported = sum(r["imported_calls"] for r in rows)
    native = sum(r["native_calls"] for r in rows)
    within = all(r["imported_calls"] <= r["native_calls"] for r in rows)
    above = sum(r["llm_calls"] > r["m2w2_llm_calls"] for r in rows)
    ours, theirs = sum(r["llm_calls"] for r in rows), sum(r["m2w2_llm_calls"] for r in rows)
    print(
        f"LLM calls (votes of 2): judgegen {ours} vs Mind2Web 2 {theirs}; "
        f"runs where judgegen makes more: {above}"
    )
    print(
        f"\nidentical trees and scores: {identical}/{len(rows)}; backend calls imported "
        f"{imported} vs native {native} (imported <= native in every run: {within})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        rows = asyncio.run(measure(Path(out)))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
