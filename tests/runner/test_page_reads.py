"""Which pages an evaluation read: each read noted with the hash of the text it returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.pages import PageRecord, PageStore
from toolkit.runner import page_reads
from toolkit.runner.fingerprint import PageReads, pages_unchanged
from toolkit.runner.page_reads import RecordingPages, recording_page_reads
from toolkit.sources import read_page
from toolkit.util.hashing import sha256_text


class Source:
    """A page source answering with whatever `texts` holds now (the same object each time)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def get(self, url: str) -> str | None:
        return self.texts.get(url)


async def test_a_page_read_again_is_hashed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[str] = []
    monkeypatch.setattr(page_reads, "sha256_text", lambda t: hashed.append(t) or sha256_text(t))
    source = Source()
    source.texts["https://a"] = "page text " * 1000
    pages = RecordingPages(source)
    with recording_page_reads() as log:
        for _ in range(3):
            await pages.get("https://a")
    assert len(hashed) == 1
    assert log.reads().read == {"https://a": sha256_text("page text " * 1000)}


async def test_a_page_that_changed_is_noted_with_the_hash_of_its_new_text() -> None:
    source = Source()
    pages = RecordingPages(source)
    source.texts["https://a"] = "first version"
    with recording_page_reads():
        await pages.get("https://a")
    source.texts["https://a"] = "second version"
    with recording_page_reads() as log:
        await pages.get("https://a")
    assert log.reads().read == {"https://a": sha256_text("second version")}


async def test_a_page_store_read_is_noted_with_its_stored_hashes_without_hashing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web("https://a.org/", "Page A", b"\xff\xd8jpeg-a"))
        writer.put(PageRecord.web("https://b.org/", "Page B", None))
    store = PageStore(tmp_path / "pages", readonly=True)
    with recording_page_reads() as separately:
        for url in ("https://a.org/", "https://b.org/", "https://gone.org/"):
            await read_separately(RecordingPages(store), url)

    def no_hashing(value: object) -> str:
        raise AssertionError("hashed a page the store served with its hash")

    monkeypatch.setattr(page_reads, "sha256_text", no_hashing)
    monkeypatch.setattr(page_reads, "screenshot_digest", no_hashing)
    pages = RecordingPages(store)
    with recording_page_reads() as at_once:
        served = [await read_page(pages, url) for url in ("https://a.org/", "https://b.org/")]
        assert await read_page(pages, "https://gone.org/") == (None, [])
    assert served == [
        ("Page A", [store.screenshot("https://a.org/")]),
        ("Page B", []),
    ]
    assert at_once.reads() == separately.reads()
    store.close()


async def read_separately(pages: RecordingPages, url: str) -> None:
    """Read `url` as a source without `read_page` is read: text, then its screenshot."""
    if await pages.get(url) is not None:
        await pages.screenshot(url)


async def test_a_hash_route_read_as_its_apps_home_page_leaves_the_result_stale(
    tmp_path: Path,
) -> None:
    """A result judged before routes were kept read `#/pricing` as the app's home page: the
    route is missing now, so the result is redone once the route is captured."""
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web("https://app.example.com/", "Welcome to the app", None))
    reads = PageReads(read={"https://app.example.com/#/pricing": sha256_text("Welcome to the app")})
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert not await pages_unchanged(reads, store)
