"""Prints the parent process's CPU and wall time per LLM call on the judging path of
`judgegen run`: `MeteredBackend` → `LLMBackend` (prompt, vote) → `MeteredClient` → `LLMClient`
(ledger, response cache with its writer thread, concurrency limit, budget) → the scripted
`latency_model` provider at zero latency, so only the layer's own cost shows.

Run: python bench/llm_call_bench.py [--requests 400] [--repeat 5] [--parallel 1] [--repo PATH]

Paths timed, each on cache misses, then again in a fresh backend where every call is a hit:
- plain verifications (no source; the two agreeing trials of a 3-vote are two calls);
- page verifications (30 KB page text and a 40 KB base64 screenshot, each page cited by
  three claims, the text and screenshot being the same objects for every read, as the page
  store's recent reads are);
- extractions (from a 2 KB answer, with a small template).
Figures: µs of process CPU per call (`time.process_time`, the cache writer thread included)
and µs of wall per call, medians over `--repeat` runs (and the least CPU of any run: on a
shared machine the median moves with the neighbours' load). `--repo` puts another checkout first on
the import path (e.g. main's), so "before" and "after" come from the same script.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGE_CHARS = 30_000
SCREENSHOT_BYTES = 30_000  # ~40 KB of base64
ANSWER_CHARS = 2_000
CLAIMS_PER_PAGE = 3


def _import_path(repo: Path | None) -> None:
    """The checkout to measure first on sys.path, then its bench/ (the scripted provider)."""
    root = (repo or HERE.parent).resolve()
    for path in (root / "bench", root):
        sys.path.insert(0, str(path))


def _backend() -> Any:
    """The judging backend exactly as `judgegen run` builds it (cache and ledger under cwd)."""
    from generator.cli.run_backend import RunBackend
    from toolkit.llm.settings import LLMSettings

    settings = LLMSettings.from_env_and_file(provider="scripted:latency_model:respond")
    return RunBackend(None, settings)


class Workload:
    """The requests of one pass; built once, so the rerun asks exactly the same."""

    def __init__(self, requests: int, tag: str) -> None:
        from pydantic import BaseModel

        from toolkit.backends import ExtractRequest, VerifyRequest

        class PageFacts(BaseModel):
            year: int | None = None
            official: bool | None = None

        rng = random.Random(tag)
        filler = "Opening hours, history and visitor information. " * (PAGE_CHARS // 48 + 1)
        pages: list[tuple[str, str, str]] = []
        for index in range(requests // CLAIMS_PER_PAGE + 1):
            url = f"https://example.org/{tag}/page{index}"
            text = f"Place {index} of {tag}. Year: {1950 + index % 70}. {filler}"[:PAGE_CHARS]
            shot = base64.b64encode(rng.randbytes(SCREENSHOT_BYTES)).decode("ascii")
            pages.append((url, text, shot))
        self.plain = [
            VerifyRequest(claim=f"Claim {i} of {tag}: the place opened in {1900 + i}.")
            for i in range(requests)
        ]
        self.page = []
        for i in range(requests):
            url, text, shot = pages[i // CLAIMS_PER_PAGE]
            self.page.append(
                VerifyRequest(
                    claim=f"Page claim {i} of {tag} is supported.",
                    sources=[url],
                    page_texts=[text],
                    images=[shot],
                )
            )
        answer = ("The answer lists places and the years they opened. " * 60)[:ANSWER_CHARS]
        self.extract = [
            ExtractRequest.for_template(
                PageFacts,
                prompt=f"Extract the year of place {i} of {tag}.",
                source_text=f"{answer} Year: {1950 + i % 70}.",
            )
            for i in range(requests)
        ]


async def _timed(
    calls: list[Callable[[], Awaitable[Any]]], parallel: int, ledger: Any
) -> tuple[float, float, int]:
    """(CPU s, wall s, LLM calls) for running `calls`, `parallel` at a time."""
    rows = ledger.summary().calls
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(calls), parallel):
        await asyncio.gather(*(call() for call in calls[start : start + parallel]))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, ledger.summary().calls - rows


async def _pass(work: Workload, parallel: int) -> dict[str, tuple[float, float]]:
    """One backend answering every path of `work`: µs CPU and wall per LLM call by path."""
    run = _backend()
    backend = run.build()
    ledger = run.client.inner.ledger
    figures: dict[str, tuple[float, float]] = {}
    try:
        paths = {
            "plain verify": [lambda r=r: backend.verify(r) for r in work.plain],
            "page verify": [lambda r=r: backend.verify(r) for r in work.page],
            "extract": [lambda r=r: backend.extract(r) for r in work.extract],
        }
        for name, calls in paths.items():
            cpu, wall, count = await _timed(calls, parallel, ledger)
            figures[name] = (cpu / count * 1e6, wall / count * 1e6)
    finally:
        await run.aclose()
    return figures


async def _warm_up() -> None:
    """A first pass in a throwaway directory: imports, template compilation, validators."""
    await _pass(Workload(6, "warm"), 1)


def _run(requests: int, parallel: int, tag: str) -> dict[str, dict[str, tuple[float, float]]]:
    work = Workload(requests, tag)
    return {"miss": asyncio.run(_pass(work, parallel)), "hit": asyncio.run(_pass(work, parallel))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per path and pass")
    parser.add_argument("--repeat", type=int, default=5, help="runs; medians are printed")
    parser.add_argument("--parallel", type=int, default=1, help="requests in flight at once")
    parser.add_argument("--repo", type=Path, default=None, help="checkout to measure")
    args = parser.parse_args()
    _import_path(args.repo)
    os.environ["JUDGEGEN_BENCH_LATENCY"] = "0"
    for name in ("JUDGEGEN_CACHE_PATH", "JUDGEGEN_LEDGER_PATH", "JUDGEGEN_CACHE_MODE"):
        os.environ.pop(name, None)
    runs: list[dict[str, dict[str, tuple[float, float]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        asyncio.run(_warm_up())
        for index in range(args.repeat):
            runs.append(_run(args.requests, args.parallel, f"run{index}"))
    import toolkit

    print(f"checkout: {Path(toolkit.__file__).resolve().parent.parent}")
    print(
        f"{args.requests} requests per path, {args.parallel} in flight, "
        f"median of {args.repeat} runs; µs per LLM call"
    )
    print(f"{'path':<14}{'pass':<6}{'CPU µs':>10}{'min':>8}{'wall µs':>10}   (CPU of each run)")
    for kind in ("miss", "hit"):
        for path in runs[0][kind]:
            cpus = [run[kind][path][0] for run in runs]
            walls = [run[kind][path][1] for run in runs]
            each = " ".join(f"{c:.0f}" for c in cpus)
            print(
                f"{path:<14}{kind:<6}{statistics.median(cpus):>10.0f}{min(cpus):>8.0f}"
                f"{statistics.median(walls):>10.0f}   ({each})"
            )


if __name__ == "__main__":
    main()
