"""Cited sources: where pages come from, and how one claim is checked against them.

One source per request (the verifier sees one page at a time). With several cited pages the
claim holds if any supports it; pages are checked in small concurrent waves, in order, and no
later wave starts once a page supports the claim. A wave's checks are all made (only a
failure cancels its partner), so the calls an evaluation makes, its recorded counts and its
spend are the same on every run, sandboxed, in process or on a cluster. But a claim need not
wait for them: once a page supports it, the verdict is that page's whatever its partners
say, so a checker that may `detach` returns at once and leaves the partners' checks running
(`DetachedCheck`), their provider calls deferred behind calls someone waits on
(`toolkit.llm.concurrency`); whoever detached them settles them before taking the
evaluation's outcome, so their cost is metered, unless the judge raised or left a
verification running (incomplete already, to be redone): then they are cancelled, in process
and sandboxed alike, their calls accounted as abandoned ones (`toolkit.llm.abandoned`). A
partner that fails after the verdict leaves the verdict (and so the tree the judge built on
it) as it is, in process, sandboxed or on a cluster, and adds an error entry
(`partner_error`) that makes the evaluation incomplete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from toolkit.awaitables import resolve
from toolkit.backends import ExtractRequest, JudgingBackend, Verdict, VerifyRequest
from toolkit.llm.concurrency import Deferral, start_deferred
from toolkit.urls import normalize_url
from toolkit.util.redact import redact

# Cited pages checked at once for one claim. The chain of a claim whose k-th page supports it
# is ceil(k/2) checks instead of k; the price is at most one extra page check per claim (the
# wave partner of a supporting page), still never more than Mind2Web 2, which checks every
# cited page. Cancelling that partner instead would save a call only when it happens to be
# slower, make call counts depend on timing, and leave a request the provider may still bill
# out of the ledger.
SOURCE_WAVE = 2


class PageSource(Protocol):
    """Where cited pages come from: `get(url)` gives the page text, or None when missing.

    `get` may be sync or async. A source may also offer `screenshot(url)` (base64 JPEG).
    """

    def get(self, url: str) -> Any: ...


class NoPages:
    """The page source of an evaluation without a page store: every page is missing."""

    def get(self, url: str) -> None:
        return None


def normalize_sources(sources: str | Sequence[str] | None) -> list[str]:
    """The cited URLs as a list, one per page (`toolkit.urls.normalize_url`), first spelling kept."""
    if sources is None:
        return []
    if isinstance(sources, str):
        return [sources]
    if isinstance(sources, (list, tuple)):
        pages: dict[str, str] = {}
        for source in sources:
            if isinstance(source, str) and source:
                pages.setdefault(normalize_url(source) or source, source)
        return list(pages.values())
    raise TypeError(f"sources must be None, a URL or a list of URLs, got {type(sources).__name__}")


class DetachedCheck(NamedTuple):
    """A cited page's check that a claim's verdict no longer waits for (see the module):
    the page at `url`, cited for the claim of the evaluation's `target` (a leaf id, or the
    claim's start when it has no leaf)."""

    task: asyncio.Task[Verdict]
    deferral: Deferral
    url: str
    target: str


def partner_error(target: str, url: str, exc: BaseException) -> dict[str, Any]:
    """The evaluation's error entry (`Evaluator.errors` shape) for the check of the page at
    `url` that failed after another page had supported the claim of `target`."""
    message = (
        f"the check of the cited page {url} failed after another cited page had supported "
        f"the claim, whose verdict stands: {type(exc).__name__}: {exc}"
    )
    return {
        "operation": "verify",
        "target": target,
        "type": type(exc).__name__,
        "kind": getattr(exc, "kind", None) or "exception",
        "message": redact(message)[:2000],
    }


async def settle(checks: Sequence[DetachedCheck]) -> list[dict[str, Any]]:
    """Wait for detached `checks`, their calls no longer deferred; the error entries of
    those that failed (`partner_error`). Cancelled with them if the wait is."""
    for check in checks:
        check.deferral.promote()
    results = await asyncio.gather(*(check.task for check in checks), return_exceptions=True)
    return [
        partner_error(check.target, check.url, result)
        for check, result in zip(checks, results, strict=True)
        if isinstance(result, BaseException)
    ]


class SourceChecker:
    """Checks claims against the pages of one evaluation; appends the cited pages the store
    lacks to `missing` (the evaluation's list, shared).

    A page source whose store lives elsewhere (the sandbox's, in the parent) offers
    `verify_sources` / `extract_page`: the request travels with the URLs only, and the
    parent attaches the pages and checks the waves itself, with this same class, so a
    sandboxed judge makes exactly the calls an in-process one makes. With `detach`, `decide`
    returns once a page supports the claim and leaves its wave partners' checks in
    `detached`, for the caller to `settle`; without, it waits for them and puts the error
    entries of those that failed in `partner_errors`, for the caller to record.
    """

    def __init__(
        self,
        backend: JudgingBackend,
        pages: PageSource,
        missing: list[str],
        *,
        detach: bool = False,
    ) -> None:
        self.backend, self.pages, self.missing = backend, pages, missing
        self.detach = detach
        self.detached: list[DetachedCheck] = []
        self.partner_errors: list[dict[str, Any]] = []

    def _note(self, url: str, missing: bool) -> None:
        if missing and url not in self.missing:
            self.missing.append(url)

    async def extract(self, request: ExtractRequest, url: str) -> Any:
        """The backend's extraction of `request` from the page at `url` (its raw result)."""
        remote = getattr(self.pages, "extract_page", None)
        if remote is not None:
            raw, missing = await remote(request, url)
        else:
            raw, missing = await extract_from_page(self.backend, self.pages, request, url)
        self._note(url, missing)
        return raw

    async def decide(
        self, plain: VerifyRequest, urls: list[str], target: str = ""
    ) -> tuple[Verdict, str | None]:
        """The verdict on `plain` and the URL that supported it (None for a plain check or
        when no cited page supports the claim); `target` names the claim in the error entry
        of a wave partner that fails after the verdict (`partner_error`)."""
        if not urls:
            return await self.backend.verify(plain), None
        target = target or plain.claim[:80]
        remote = getattr(self.pages, "verify_sources", None)
        if remote is not None:
            verdict, used, missing, failed = await remote(plain, urls, target)
            for url in missing:
                self._note(url, True)
            self.partner_errors += failed
            return verdict, used
        if len(urls) == 1:
            verdict = await self.check(plain, urls[0])
            return verdict, urls[0] if verdict.passed else None
        unread: list[str] = []
        decided = await self._waves(plain, urls, target, unread)
        for url in unread:  # only with a verdict: a failed claim's reply carries none
            self._note(url, True)
        return decided

    async def _waves(
        self, plain: VerifyRequest, urls: list[str], target: str, unread: list[str]
    ) -> tuple[Verdict, str | None]:
        """`decide` over several cited pages, wave by wave; the pages read and found missing
        are added to `unread` (a detached partner's too, before the verdict returns)."""
        verdict = Verdict(passed=False, reasoning="no source supports the claim")
        for start in range(0, len(urls), SOURCE_WAVE):
            wave = urls[start : start + SOURCE_WAVE]
            read = await asyncio.gather(
                *(read_page(self.pages, url) for url in wave), return_exceptions=True
            )
            unread += [
                url
                for url, page in zip(wave, read, strict=True)
                if not isinstance(page, BaseException) and page[0] is None
            ]
            if isinstance(read[0], BaseException):
                raise read[0]  # as page by page: no later page of it is checked
            first = asyncio.ensure_future(self._check_read(plain, wave[0], read[0]))
            partners = [
                start_deferred(self._check_read(plain, url, page))
                for url, page in zip(wave[1:], read[1:], strict=True)
            ]
            try:
                verdict = await first
                for index, (task, deferral) in enumerate(partners):
                    if verdict.passed:
                        rest = [
                            DetachedCheck(task, deferral, url, target)
                            for (task, deferral), url in zip(
                                partners[index:], wave[index + 1 :], strict=True
                            )
                        ]
                        if self.detach:
                            self.detached += rest
                        else:
                            self.partner_errors += await settle(rest)
                        return verdict, wave[index]
                    deferral.promote()
                    verdict = await task
            except BaseException:  # a failed check stops its partners
                await _cancel([first, *(task for task, _ in partners)])
                raise
            if verdict.passed:
                return verdict, wave[-1]
        return verdict, None

    async def _check_read(
        self,
        plain: VerifyRequest,
        url: str,
        page: tuple[str | None, list[str]] | BaseException,
    ) -> Verdict:
        """`plain` checked against the page at `url` as read (`page`); a page that could not
        be read fails its own check, as the check of a page read one after another would, so
        a partner's unreadable page never takes the verdict of a page that supports it."""
        if isinstance(page, BaseException):
            raise page
        return await verify_read(self.backend, plain, url, *page)

    async def check(self, plain: VerifyRequest, url: str) -> Verdict:
        """`plain` checked against the page at `url` (one source per request)."""
        verdict, missing = await verify_on_page(self.backend, self.pages, plain, url)
        self._note(url, missing)
        return verdict


async def read_page(pages: PageSource, url: str) -> tuple[str | None, list[str]]:
    """The text and screenshots of `url`, or (None, []) when the store lacks it; through the
    source's own `read_page` when it offers one (a recording page store: one read for both)."""
    whole = getattr(pages, "read_page", None)
    if callable(whole):
        return await resolve(whole(url))
    text = await resolve(pages.get(url))
    if text is None:
        return None, []
    shot = getattr(pages, "screenshot", None)
    image = await resolve(shot(url)) if shot else None
    return text, [image] if image else []


async def verify_on_page(
    backend: JudgingBackend, pages: PageSource, plain: VerifyRequest, url: str
) -> tuple[Verdict, bool]:
    """(the backend's verdict on `plain` with the page at `url` attached, whether the page
    is missing)."""
    text, images = await read_page(pages, url)
    return await verify_read(backend, plain, url, text, images), text is None


async def verify_read(
    backend: JudgingBackend, plain: VerifyRequest, url: str, text: str | None, images: list[str]
) -> Verdict:
    """The backend's verdict on `plain` with the page at `url` attached, read already."""
    update = {"sources": [url], "page_texts": [text], "images": images}
    return await backend.verify(plain.model_copy(update=update))


async def extract_from_page(
    backend: JudgingBackend, pages: PageSource, request: ExtractRequest, url: str
) -> tuple[Any, bool]:
    """(the backend's extraction for `request` with the page at `url` attached, whether the
    page is missing)."""
    text, images = await read_page(pages, url)
    update = {"source": url, "source_text": text, "images": images}
    return await backend.extract(request.model_copy(update=update)), text is None


async def _cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the checks still running (a later page once an earlier one decided, or all of
    them when one failed) and wait for them, so none outlives the verification."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
