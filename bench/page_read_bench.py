"""Prints what the parent's thread spends on the first read of a cited page during `judgegen
run`: the text and the screenshot a claim is checked against, and the hashes of both that the
result's fingerprint notes, through the run's `RecordingPages` over a read-only `PageStore`.

Two ways, side by side in one run, on the same store:
- at once: `toolkit.sources.read_page`, as `run` reads a page — one row read giving the
  text, the base64 screenshot and the hashes the store keeps beside them;
- separately: `get`, then `screenshot`, each hashed as read (the screenshot decoded from
  base64 first) — what a page source without `stored_page` costs, and what `run` did before.
And what a rerun's freshness check spends on a page a result read: `text_hash` and
`screenshot_hash` (`toolkit.runner.fingerprint.pages_unchanged`), one row read, no text.

Pages: 30 KB of text, with screenshots of 40 KB (the runner bench's) and of 1 MB (a
full-page capture). Each page is read once, as a new page is when an evaluation first cites
it. Figures: µs of wall per page, median over `--repeat` runs, every run listed.
With `--redirected`, each page is stored as reached from its URL by a redirect (to `www.`
and a trailing slash), so every read also applies the redirect rules of `toolkit.pages.walls`
(a page that ended where it was sent skips them).

Run: python bench/page_read_bench.py [--pages 200] [--repeat 5] [--redirected]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolkit.pages import PageRecord, PageStore
from toolkit.runner.page_reads import RecordingPages, recording_page_reads
from toolkit.sources import read_page

PAGE_CHARS = 30_000
SCREENSHOTS = {"40 KB": 40_000, "1 MB": 1_000_000}


def build(directory: Path, pages: int, screenshot_bytes: int, redirected: bool) -> list[str]:
    """A store of `pages` pages with random text and screenshot bytes (each `redirected` to
    another address of the page, or not); their URLs."""
    rng = random.Random(7)
    urls = [f"https://example.org/page/{index}" for index in range(pages)]
    with PageStore(directory) as store:
        for url in urls:
            text = "".join(rng.choices("abcdefghij klmnop\n", k=PAGE_CHARS))
            final = url.replace("//", "//www.", 1) + "/" if redirected else None
            store.put(PageRecord.web(url, text, rng.randbytes(screenshot_bytes), final_url=final))
    return urls


async def at_once(pages: RecordingPages, url: str) -> None:
    await read_page(pages, url)


async def separately(pages: RecordingPages, url: str) -> None:
    if await pages.get(url) is not None:
        await pages.screenshot(url)


async def checked(pages: RecordingPages, url: str) -> None:
    assert isinstance(pages.inner, PageStore)
    pages.inner.text_hash(url)
    pages.inner.screenshot_hash(url)


WAYS = {"at once": at_once, "separately": separately, "checked": checked}


async def per_page(directory: Path, urls: list[str], way: str) -> float:
    """µs of wall per first read of a page, through a fresh store (nothing remembered)."""
    read = WAYS[way]
    with PageStore(directory, readonly=True) as store:
        pages = RecordingPages(store)
        with recording_page_reads():
            started = time.perf_counter()
            for url in urls:
                await read(pages, url)
            return (time.perf_counter() - started) / len(urls) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200, help="pages per store")
    parser.add_argument("--repeat", type=int, default=5, help="runs; medians are printed")
    parser.add_argument(
        "--redirected", action="store_true", help="store each page as reached by a redirect"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for label, size in SCREENSHOTS.items():
            directory = Path(scratch) / label.replace(" ", "")
            urls = build(directory, args.pages, size, args.redirected)
            runs: dict[str, list[float]] = {way: [] for way in WAYS}
            for _ in range(args.repeat):
                for way, times in runs.items():
                    times.append(asyncio.run(per_page(directory, urls, way)))
            once, apart, check = (statistics.median(runs[way]) for way in WAYS)
            print(
                f"first read of a page, 30 KB text + {label} screenshot: at once {once:,.0f} µs, "
                f"separately {apart:,.0f} µs ({apart / once:.1f}x); runs at once "
                f"{', '.join(f'{t:,.0f}' for t in runs['at once'])}, separately "
                f"{', '.join(f'{t:,.0f}' for t in runs['separately'])}"
            )
            print(
                f"freshness check of a page, 30 KB text + {label} screenshot: {check:,.0f} µs; "
                f"runs {', '.join(f'{t:,.0f}' for t in runs['checked'])}"
            )


if __name__ == "__main__":
    main()
