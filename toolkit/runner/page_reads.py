"""Recording which cited pages each evaluation read, for its result's fingerprint.

`RecordingPages` wraps the run's page source once; every `get` and `screenshot` is noted in
the log of the evaluation it serves, found through a context variable that the scheduler sets
around each evaluation (`recording_page_reads`). Broker calls of a sandboxed judge are
answered in tasks started from that evaluation, so they inherit the variable like the usage
meter does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any

from toolkit.awaitables import resolve
from toolkit.pages.store import StoredPage
from toolkit.runner.fingerprint import PageReads, screenshot_digest
from toolkit.runner.results import ResultHead
from toolkit.urls import page_url
from toolkit.util.hashing import sha256_text
from toolkit.util.scoped import scoped


class PageReadLog:
    """The pages one evaluation asked for: text hash by URL, the hash of each screenshot read
    (None: the page had none), and the URLs that were missing."""

    def __init__(self) -> None:
        self._read: dict[str, str] = {}
        self._shots: dict[str, str | None] = {}
        self._missing: set[str] = set()

    def note(self, url: str, text: Any, digest: str | None = None) -> None:
        """Record one answer of the page source (None: the page is missing); `digest` is its
        hash when the caller has it already."""
        if text is None:
            self._missing.add(url)
        else:
            self._read[url] = digest or sha256_text(str(text))

    def note_shot(self, url: str, digest: str | None) -> None:
        """Record the hash of the screenshot a read of `url` gave (None: it had none)."""
        self._shots[url] = digest

    def merge(self, reads: PageReads) -> None:
        """Add what another process noted for this evaluation (a cluster node's own log)."""
        self._read.update(reads.read)
        self._shots.update(reads.shots)
        self._missing.update(reads.missing)

    def reads(self, also_missing: Iterable[str] = ()) -> PageReads:
        """What was read, plus `also_missing` (the evaluator's own list of missing sources)."""
        missing = (self._missing | set(also_missing)) - set(self._read)
        return PageReads(
            read=dict(sorted(self._read.items())),
            shots=dict(sorted(self._shots.items())),
            missing=tuple(sorted(missing)),
        )


HASHED_PAGES = 64  # texts and screenshots whose hash is kept (identity proves it is current)

current_page_reads: ContextVar[PageReadLog | None] = ContextVar("judgegen_page_reads", default=None)


def recording_page_reads() -> AbstractContextManager[PageReadLog]:
    """Note the page reads made in this context (one evaluation) in a fresh log."""
    return scoped(current_page_reads, PageReadLog())


class RecordingPages:
    """A page source over `inner` (or over nothing: every page missing) that notes each read
    in the current evaluation's `PageReadLog`; offers `screenshot` when `inner` does, and
    `read_page` (text and screenshot at once) when `inner` is a page store (`stored_page`).
    A read that fails on the infrastructure's side is noted in the evaluation's meter."""

    def __init__(self, inner: Any | None) -> None:
        self.inner = inner
        # (what, url) -> (the value read, its hash)
        self._hashed: OrderedDict[tuple[str, str], tuple[str, str | None]] = OrderedDict()
        screenshot = getattr(inner, "screenshot", None)
        if callable(screenshot):
            self._inner_screenshot = screenshot
            self.screenshot = self._screenshot
        stored_page = getattr(inner, "stored_page", None)
        if callable(stored_page):  # a page store: text, screenshot and hashes in one read
            self._inner_stored_page = stored_page
            self.read_page = self._read_page

    async def get(self, url: str) -> str | None:
        """The inner source's text for `url` (None when missing or without a source); a `url`
        that is not a string is the judge's bug (`page_url`)."""
        url = page_url(url)
        text = None if self.inner is None else await _served(self.inner.get, url)
        log = current_page_reads.get()
        if log is not None:
            digest = self._digest("text", url, text, sha256_text) if isinstance(text, str) else None
            log.note(url, text, digest)
        return text

    async def _read_page(self, url: str) -> tuple[str | None, list[str]]:
        """The text and screenshots of `url` ((None, []) when missing), noted like `get` and
        `screenshot` would, with the hashes the store served them with in the same read:
        neither is hashed, nor the screenshot decoded, here."""
        url = page_url(url, "ev.pages.read_page")
        page = await _served(self._inner_stored_page, url)
        log = current_page_reads.get()
        if page is None:
            if log is not None:
                log.note(url, None)
            return None, []
        if log is not None:
            log.note(url, page.text, page.text_hash)
            log.note_shot(url, page.screenshot_hash)
        return page.text, [page.screenshot] if page.screenshot else []

    async def _screenshot(self, url: str) -> str | None:
        """The inner source's screenshot of `url` (base64), noted with the bytes' hash."""
        url = page_url(url, "ev.pages.screenshot")
        image = await _served(self._inner_screenshot, url)
        log = current_page_reads.get()
        if log is not None:
            shot = self._digest("shot", url, image, screenshot_digest) if image else None
            log.note_shot(url, shot)
        return image

    def _digest(
        self, what: str, url: str, value: str, compute: Callable[[str], str | None]
    ) -> str | None:
        """`compute(value)`, done once while the source keeps answering with the very same
        object (a store's remembered read) for `url`."""
        key = (what, url)
        known = self._hashed.get(key)
        if known is not None and known[0] is value:
            self._hashed.move_to_end(key)
            return known[1]
        digest = compute(value)
        self._hashed[key] = (value, digest)
        self._hashed.move_to_end(key)
        if len(self._hashed) > HASHED_PAGES:
            self._hashed.popitem(last=False)
        return digest


async def stored_page(pages: Any, url: str) -> StoredPage | None:
    """`url` as a page store serves it to a check (None where `get` gives None): through the
    source's own `stored_page` when it has one (one read), else its `get`, then `screenshot`,
    hashed as `RecordingPages` notes them. Either way the hashes are of exactly what is served;
    what a broker answers a node's `page_stored` call with."""
    whole = getattr(pages, "stored_page", None)
    if callable(whole):
        page: StoredPage | None = await resolve(whole(url))
        return page
    text = await resolve(pages.get(url))
    if text is None:
        return None
    shot = getattr(pages, "screenshot", None)
    image = (await resolve(shot(url)) if callable(shot) else None) or None
    return StoredPage(
        text=str(text),
        text_hash=sha256_text(str(text)),
        screenshot=image,
        screenshot_hash=screenshot_digest(image),
    )


def missing_pages(results: Iterable[ResultHead]) -> dict[str, list[str]]:
    """Cited pages each judged answer could not read, by `agent/task/answer` (none: left out)."""
    return {_answer(head): list(head.missing_pages) for head in results if head.missing_pages}


def clipped_pages(results: Iterable[ResultHead]) -> dict[str, list[str]]:
    """Cited pages each judged answer read only the beginning of (longer than the backend's
    page limit), by `agent/task/answer` (none: left out)."""
    return {_answer(head): list(head.clipped_pages) for head in results if head.clipped_pages}


def _answer(head: ResultHead) -> str:
    return f"{head.agent_name}/{head.task_id}/{head.answer_name}"


async def _served(read: Callable[[str], Any], url: str) -> Any:
    """`read(url)`, awaited if need be; a read that fails (an `InfraError`, or any other
    exception of the page source: a missing page is None, never an exception) is noted in
    the evaluation's meter on its way to the judge."""
    try:
        return await resolve(read(url))
    except Exception as exc:
        from toolkit.runner.metering import note_infra  # a fresh rerun loads no LLM layer

        note_infra(exc, "backend")
        raise
