"""Which pages an evaluation read: each read noted with the hash of the text it returned."""

from __future__ import annotations

import pytest

from toolkit.runner import page_reads
from toolkit.runner.page_reads import RecordingPages, recording_page_reads
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
