"""Capturing cited pages with Playwright driving the system Chromium, into a `PageStore`.

Never downloads a browser: Chromium is launched from `executable_path` (Debian's
`/usr/bin/chromium` by default), headless, with background networking off. Each URL gets
its own browser context and a per-page deadline; a 4xx/5xx, a timeout, a network error, a
page that shows no text (`empty`; an image alone is judged by its screenshot), a bot check or
a sign-in page served instead of the page, a deep link sent to the site's home page
(`redirect_home`), or a not-found page served with a success status (`not_found`, a soft 404:
one saying so in its title or main heading with little else, or the site's error or search
page a deep link was sent to) (`walls.py`) is stored as a failure record with its reason,
never as the page. A failure of our own network (`OUR_NETWORK_ERRORS`, or every URL of a batch
unresolved) is stored as `offline`, ours: reading it raises `InfraError`; so is a page a
cookie-consent dialog still hides once answered (`consent_wall`).

A page is read as a reader finds it, not as it first drew: after network idle the capture
waits for what the page has set to happen in the next seconds (its timers, a meta refresh,
its fetches still answering), scrolls through it so content loaded on view comes in, and
shows what a click would (closed `<details>`, hidden tab panels, sections drawn only on view);
the text of its frames and shadow roots is kept with its own. Read early, a claim the page
supports would be checked against a shell or a placeholder and found unsupported, silently
and for our capture's fault. So would one checked against a cookie-consent dialog hiding the
page: it is answered (`consent.py`), with its choice that agrees to nothing, else, when it
offers none, with Accept, and the page's record says which (`PageRecord.consent`); a notice
beside the page is left alone. A 429 or 503 asking for a short wait is asked again once, after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel

from toolkit.errors import InfraError
from toolkit.pages.consent import ANSWERS, answer_consent, most_agreed, read_consent
from toolkit.pages.pdf import PdfTextError, looks_like_pdf, pdf_text
from toolkit.pages.store import FailureKind, PageKind, PageRecord, PageStore
from toolkit.pages.walls import (
    ConsentChoice,
    NotFoundShown,
    consent_wall,
    linked_page,
    not_found_page,
    served_instead,
)
from toolkit.urls import canonical_url, is_web_url

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Request, Response

CAPTURE_REPORT_VERSION = 2
"""2: each outcome says how a consent dialog that hid the page was answered (`consent`)."""
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ENV = "JUDGEGEN_CHROMIUM"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
_INNER_TEXT = "() => document.body ? document.body.innerText : ''"
_NESTED_TEXT = """(child) => {
  const parts = [];
  if (child && document.body && window.innerWidth > 0 && window.innerHeight > 0) {
    parts.push(document.body.innerText);
  }
  const visit = (root) => {
    for (const element of root.querySelectorAll("*")) {
      const shadow = element.shadowRoot;
      if (!shadow) continue;
      for (const child of shadow.children) {
        if (["STYLE", "SCRIPT", "TEMPLATE", "LINK"].includes(child.tagName)) continue;
        if (child.innerText) parts.push(child.innerText);
      }
      visit(shadow);
    }
  };
  if (document.body) visit(document.body);
  return parts;
}"""
"""The texts a frame shows outside its document's `innerText`: its open shadow roots' and, for
a child frame drawn at some size, its own (a hidden frame's `innerText` is its source)."""
_NOT_FOUND_SHOWN = """(headings) => {
  const found = {title: document.title || "", headings: [], main: 0};
  if (!document.body) return found;
  const CHROME = 'nav, header, footer, aside, [role="navigation"], [role="banner"], ' +
    '[role="contentinfo"], [role="complementary"]';
  const drawn = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  };
  const text = (el) => (el.innerText || "").trim();
  found.headings = [...document.body.querySelectorAll("h1, h2")]
    .filter(drawn).map(text).filter(Boolean).slice(0, headings);
  const landmarks = [...document.body.querySelectorAll('main, article, [role="main"]')]
    .filter(drawn);
  if (landmarks.length) {
    found.main = Math.max(...landmarks.map((el) => text(el).length));
  } else {
    let chrome = 0;
    for (const el of document.body.querySelectorAll(CHROME)) {
      if (!el.parentElement || !el.parentElement.closest(CHROME)) chrome += text(el).length;
    }
    found.main = Math.max(text(document.body).length - chrome, 0);
  }
  return found;
}"""
"""What the page shows that tells a not-found page (`walls.NotFoundShown`): its title, its
first `headings` drawn `h1` and `h2`, and the length of its main text (its longest drawn
`main` or `article`, else its text outside its menus)."""
NOT_FOUND_HEADINGS = 3
"""Headings of a page read for `walls.not_found_page`: a not-found page's say it at once."""
_SCHEDULED_KEY = 'Symbol.for("judgegen.scheduled")'
_PENDING_KEY = 'Symbol.for("judgegen.pending")'
_TIMER_REGISTRY = (
    """(() => {
  const due = new Map();
  window.setTimeout = new Proxy(window.setTimeout, {
    apply(target, self, args) {
      const delay = Number(args[1]) || 0;
      const callback = args[0];
      const tracked = delay > 0 && typeof callback === "function";
      let id;
      if (tracked) {
        args = [function () {
          due.delete(id);
          return Reflect.apply(callback, this, arguments);
        }, ...args.slice(1)];
      }
      id = Reflect.apply(target, self, args);
      if (delay > 0) due.set(id, { at: performance.now() + delay, tracked });
      return id;
    },
  });
  window.clearTimeout = new Proxy(window.clearTimeout, {
    apply(target, self, args) {
      due.delete(args[0]);
      return Reflect.apply(target, self, args);
    },
  });
  const refreshAt = () => {
    const meta = document.querySelector('meta[http-equiv="refresh" i]');
    const found = /^\\s*(\\d+(?:\\.\\d*)?)\\s*[;,]\\s*(?:url\\s*=\\s*)?['"]?([^'"]+)/i
      .exec(meta ? meta.content : "");
    if (!found || new URL(found[2].trim(), document.baseURI).href === location.href) return 0;
    const timing = performance.getEntriesByType("navigation")[0];
    const loaded = timing && timing.loadEventEnd ? timing.loadEventEnd : performance.now();
    return loaded + Number(found[1]) * 1000;
  };
  Object.defineProperty(window, """
    + _SCHEDULED_KEY
    + """, {
    value: (within) => {
      const now = performance.now();
      let last = 0;
      const ids = [];
      for (const [id, { at, tracked }] of due) {
        if (at <= now && !tracked) due.delete(id);
        else if (at - now <= within) {
          last = Math.max(last, at - now);
          if (tracked) ids.push(id);
        }
      }
      const refresh = refreshAt() - now;
      return [refresh > 0 && refresh <= within ? Math.max(last, refresh) : last, ids];
    },
  });
  Object.defineProperty(window, """
    + _PENDING_KEY
    + """, {
    value: (ids) => ids.filter((id) => due.has(id)).length,
  });
})();"""
)
"""Run in every document before its own scripts: notes when each pending `setTimeout` falls
due, and when one of a function has run (the native timers, wrapped, still run them), so a
read can wait for the page's own timers, which no network event announces, even where they
run late, behind a busy page. `_SCHEDULED` and `_PENDING` read it."""
_SCHEDULED = (
    f"(within) => {{ const due = window[{_SCHEDULED_KEY}]; return due ? due(within) : [0, []]; }}"
)
"""[milliseconds until the last of the page's timers due within `within` ms, or its meta
refresh to another page (counted from `load`, as the browser does), fires (0 if none), the
ids of those timers, overdue ones not yet run included]."""
_PENDING = f"(ids) => {{ const left = window[{_PENDING_KEY}]; return left ? left(ids) : 0; }}"
"""How many of the timers `ids` have neither run nor been cleared."""
TRAFFIC_TYPES = frozenset({"fetch", "xhr"})
"""Resource types of the requests a page's scripts make for content: a page with one still
answering is not read yet (within `CaptureOptions.script_wait`)."""
_AFTER_WAIT = 0.1
"""Seconds left to a page after a timer of its fired or its last fetch answered, for what
they set off (a fetch begun, the answer drawn) to happen before it is read."""
_TRAFFIC_POLL = 0.05
"""Seconds between checks for the page's fetches still answering."""
_TWO_FRAMES = """(cap) => new Promise((done) => {
  const late = setTimeout(() => done(false), cap);
  requestAnimationFrame(() => requestAnimationFrame(() => {
    clearTimeout(late);
    done(true);
  }));
})"""
"""Let two frames draw (intersection observers report on a frame), for at most `cap` ms (its
timer cleared, so the page's timers are not waited for it): whether they drew in time."""
_SCROLL = f"""async (y) => {{
  window.scrollTo(0, y);
  const drawn = await ({_TWO_FRAMES})(100);
  const root = document.scrollingElement || document.documentElement;
  return [window.scrollY + window.innerHeight, root ? root.scrollHeight : 0, drawn];
}}"""
"""Scroll to `y` and let two frames draw (`_TWO_FRAMES`, at most 100 ms); gives (the bottom
of the view, the page's height, whether the frames drew in time)."""
_SLOW_FRAMES_MS = 1000
"""How long two frames are waited for at the end of a page whose frames were too slow for
`_SCROLL` (a busy page, a loaded machine) before it is taken to have come to its end."""
_TOP = "() => window.scrollTo(0, 0)"
_REVEAL = """() => {
  for (const details of document.querySelectorAll("details:not([open])")) {
    details.removeAttribute("name");
    details.open = true;
  }
  for (const panel of document.querySelectorAll('[role="tabpanel"]')) {
    if (panel.checkVisibility && !panel.checkVisibility()) {
      panel.hidden = false;
      panel.style.setProperty("display", "block", "important");
    }
  }
  const sheet = new CSSStyleSheet();
  sheet.replaceSync("* { content-visibility: visible !important; }");
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}"""
"""Show what the page holds behind a click or a scroll, which `innerText` leaves out: closed
`<details>` (opened, each out of its exclusive group so all stay open), hidden tab panels, and
sections not drawn until they come into view (`content-visibility`, `hidden=until-found`)."""
RETRIED_STATUSES = frozenset({429, 503})
"""Statuses that say "not now": asked again once, after the wait the site asks for
(`Retry-After`, else `RETRY_PAUSE`) when it is at most `MAX_RETRY_AFTER` seconds."""
RETRY_PAUSE = 1.0
MAX_RETRY_AFTER = 5.0
PLACEHOLDER_CHARS = 64
"""Text shorter than this when the network is idle may be a placeholder ("Loading…") that a
script is about to replace: it is watched for a change before it is stored."""
_WATCH_INTERVAL = 0.25
"""Seconds between reads of a placeholder-size text while it is watched for a change."""
_QUIET = 0.5
"""Seconds a changing text is left alone before it is read again (as network idle's 500 ms):
two reads that agree across it are the rendered text."""
READS = 3
"""Reads of a page that navigates while it is read (a JS redirect as the waits end) before
its capture fails as `timeout`: it never settled into one page to store."""
NOTHING_RENDERED = (
    "the page shows no text (blank, or its scripts did not render it): nothing in it can be checked"
)
_PAGE_HEIGHT = (
    "() => Math.max(document.documentElement ? document.documentElement.scrollHeight : 0,"
    " document.body ? document.body.scrollHeight : 0)"
)
OUR_NETWORK_ERRORS = frozenset(
    {
        "ERR_PROXY_CONNECTION_FAILED",  # HTTP(S)_PROXY set but not answering
        "ERR_PROXY_AUTH_UNSUPPORTED",
        "ERR_PROXY_AUTH_REQUESTED",
        "ERR_PROXY_CERTIFICATE_INVALID",
        "ERR_MANDATORY_PROXY_CONFIGURATION_FAILED",
        "ERR_SOCKS_CONNECTION_FAILED",  # a SOCKS proxy not answering
        "ERR_INTERNET_DISCONNECTED",
        "ERR_NETWORK_CHANGED",
        "ERR_NETWORK_ACCESS_DENIED",
        "ERR_NETWORK_IO_SUSPENDED",
        "ERR_NAME_RESOLUTION_FAILED",  # the resolver itself failed (not "no such name")
    }
)
"""Chromium's `net::` errors that say the capture host's network failed, not the page's
server: the page was never asked for, so its failure is ours (`offline`)."""
NAME_NOT_RESOLVED = "ERR_NAME_NOT_RESOLVED"
"""A dead domain (the page's failure) or our resolver down (ours): `capture_pages` decides
from the whole batch."""
_NET_ERROR = re.compile(r"net::(ERR_[A-Z0-9_]+)")
_NOT_REACHED: frozenset[FailureKind] = frozenset({"browser", "offline", "timeout"})
"""Failure kinds that do not show the URL's host name resolved (a lookup can hang). Not all
of `INFRA_FAILURES`: a `throttled` or `consent_wall` page was answered by its site."""


def default_chromium() -> str:
    """The Chromium to launch: `$JUDGEGEN_CHROMIUM`, else Debian's `/usr/bin/chromium`."""
    return os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM


@dataclass(frozen=True)
class CaptureOptions:
    """How pages are captured; every limit is per page."""

    chromium: str = DEFAULT_CHROMIUM
    concurrency: int = 4
    timeout: float = 30.0
    """Seconds allowed for one URL, from navigation to screenshot."""
    idle_wait: float = 2.0
    """Seconds to wait for network idle after `load`, so JS-rendered text appears."""
    render_wait: float = 2.0
    """Seconds at most, after network idle, to wait for a placeholder-size text to be replaced
    or a changing text to hold still; a page still changing then is stored as last read."""
    script_wait: float = 3.0
    """Seconds at most, after network idle, to wait for what the page set to happen by then
    (`_await_scheduled`): its timers, a meta refresh to another page, its fetches answering."""
    max_scroll_height: int = 20000
    """Pixels of the page scrolled through before it is read, so content loaded as it comes
    into view (a lazy section, an infinite list) is in its text."""
    viewport_width: int = 1280
    viewport_height: int = 800
    max_screenshot_height: int = 8000
    jpeg_quality: int = 70


class CaptureOutcome(BaseModel):
    """What happened to one URL in a capture run."""

    url: str
    result: Literal["captured", "failed", "skipped"]
    kind: PageKind | None = None
    http_status: int | None = None
    error_kind: FailureKind | None = None
    error: str | None = None
    kept_previous: bool = False
    """A failed refresh left the earlier capture in place."""
    consent: ConsentChoice | None = None
    """How a cookie-consent dialog that hid the page was answered (`PageRecord.consent`)."""


class CaptureReport(BaseModel):
    """The result of `capture_pages`, as `cache-pages --json` prints it."""

    version: int = CAPTURE_REPORT_VERSION
    store: str
    captured: int = 0
    failed: int = 0
    skipped: int = 0
    outcomes: list[CaptureOutcome] = []


ProgressFn = Callable[[int, int, CaptureOutcome], None]
CaptureFn = Callable[[str], Awaitable[PageRecord]]


def _outcome(record: PageRecord, kept_previous: bool = False) -> CaptureOutcome:
    return CaptureOutcome(
        url=record.url,
        result="captured" if record.ok else "failed",
        kind=record.kind,
        http_status=record.http_status,
        error_kind=record.error_kind,
        error=record.error,
        kept_previous=kept_previous,
        consent=record.consent,
    )


async def capture_pages(
    urls: Iterable[str],
    store: PageStore,
    options: CaptureOptions,
    *,
    refresh: bool = False,
    progress: ProgressFn | None = None,
    capture: CaptureFn | None = None,
) -> CaptureReport:
    """Capture every URL whose page is not already stored, under any spelling of it
    (`PageStore.has_page`); all of them with `refresh`, where a failure keeps a stored page
    that reads serve (one they do not, such as a wall stored by an older judgegen, it replaces).

    URLs are canonicalized and de-duplicated; strings that are not http(s) URLs are ignored.
    Pages are captured by a local Chromium, or by `capture` (e.g. on a cluster's nodes) at
    most `options.concurrency` at a time; either way this process alone writes the store.
    A URL whose host name did not resolve is stored last: as `offline` (ours) when no URL
    captured reached its site and two hosts or more did not resolve, else as the page's
    `network` (a dead domain).
    Raises `InfraError` when Chromium cannot start.
    """
    wanted = list(dict.fromkeys(canonical_url(u) for u in urls if is_web_url(u)))
    report = CaptureReport(store=str(store.path))
    todo = [u for u in wanted if refresh or not store.has_page(u)]
    pending = set(todo)
    unresolved: list[PageRecord] = []
    reached = 0  # URLs whose failure (or page) shows their host name resolved
    done = 0

    def finish(outcome: CaptureOutcome) -> None:
        nonlocal done
        done += 1
        report.outcomes.append(outcome)
        if progress is not None:
            progress(done, len(wanted), outcome)

    for url in wanted:
        if url not in pending:
            finish(CaptureOutcome(url=url, result="skipped"))
    if todo:
        async with contextlib.AsyncExitStack() as stack:
            if capture is None:
                browser = await stack.enter_async_context(chromium_session(options))

                async def capture(url: str) -> PageRecord:
                    return await capture_page(browser, url, options)

            semaphore = asyncio.Semaphore(max(1, options.concurrency))

            async def one(url: str) -> None:
                nonlocal reached
                assert capture is not None
                async with semaphore:
                    record = await capture(url)
                if record.error_kind == "network" and net_error(record.error) == NAME_NOT_RESOLVED:
                    unresolved.append(record)  # ours or the page's: known once all are done
                    return
                if record.error_kind not in _NOT_REACHED:
                    reached += 1
                finish(_outcome(record, kept_previous=not store.put(record)))

            await asyncio.gather(*(one(url) for url in todo))
    if not reached and len({urlsplit(r.url).hostname for r in unresolved}) >= 2:
        unresolved = [_ours_unresolved(record) for record in unresolved]  # our resolver is down
    for record in unresolved:
        finish(_outcome(record, kept_previous=not store.put(record)))
    order = {url: i for i, url in enumerate(wanted)}
    report.outcomes.sort(key=lambda o: order[o.url])
    for outcome in report.outcomes:
        setattr(report, outcome.result, getattr(report, outcome.result) + 1)
    return report


def net_error(message: str | None) -> str | None:
    """The Chromium `net::ERR_...` code named in an error message, if any."""
    found = _NET_ERROR.search(message or "")
    return found.group(1) if found else None


def _ours_unresolved(record: PageRecord) -> PageRecord:
    """`record`, a host name that did not resolve, as our failure: no site of its batch was
    reached and several names failed, so our resolver is down, not every one of those domains
    (a single name alone stays the page's failure: a dead domain looks the same)."""
    error = f"our DNS resolver seems down (no cited site was reached): {record.error}"
    return record.model_copy(update={"error_kind": "offline", "error": error})


def require_chromium(chromium: str) -> Path:
    """The Chromium executable at `chromium`; `InfraError` naming the fix when it is absent."""
    path = Path(chromium)
    if not path.is_file():
        raise InfraError(
            f"Chromium not found at {path}; install Debian's `chromium` package or pass "
            f"--chromium PATH (or set ${CHROMIUM_ENV})",
            kind="browser",
        )
    return path


@contextlib.asynccontextmanager
async def chromium_session(options: CaptureOptions) -> AsyncIterator[Browser]:
    """Playwright plus one headless system Chromium (fresh temporary profile), closed on exit."""
    from playwright.async_api import Error, async_playwright

    path = require_chromium(options.chromium)
    async with async_playwright() as playwright:
        try:
            browser = await playwright.chromium.launch(
                executable_path=str(path), headless=True, args=list(CHROMIUM_ARGS)
            )
        except Error as exc:
            raise InfraError(f"Chromium at {path} failed to start: {exc}", kind="browser") from exc
        try:
            yield browser
        finally:
            await browser.close()


class _Deadline:
    """The time left for one URL; later steps keep a reserve so the page is not lost at the end."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.reserve = min(5.0, seconds / 4)

    def ms(self, cap: float | None = None, *, keep_reserve: bool = True) -> float:
        """Milliseconds for the next step (never 0, which Playwright reads as "no limit")."""
        left = self.end - time.monotonic() - (self.reserve if keep_reserve else 0.0)
        if cap is not None:
            left = min(left, cap)
        return max(left, 0.001) * 1000

    def spent(self) -> bool:
        """Whether only the reserve is left: no time for a step that may be skipped."""
        return time.monotonic() >= self.end - self.reserve

    def final_ms(self) -> float:
        """Milliseconds for the last step once the page has loaded: what is left, or the reserve."""
        return max(self.end - time.monotonic(), self.reserve) * 1000


async def capture_page(browser: Browser, url: str, options: CaptureOptions) -> PageRecord:
    """Capture one URL in a fresh context: a web page, a PDF, or a failure record.

    A failure is `browser` (ours: Chromium or its renderer died), `offline` (ours: our
    network, `OUR_NETWORK_ERRORS`), `throttled` (ours: a 429 still after a retry),
    `consent_wall` (ours: a consent dialog still hides the page once answered) or the page's
    own (`http`, `timeout`, `network`, `unsupported`, `pdf`, `empty`, `blocked`,
    `redirect_home`, `not_found`).
    """
    from playwright.async_api import Error
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    context: BrowserContext | None = None
    try:
        context = await browser.new_context(
            viewport={"width": options.viewport_width, "height": options.viewport_height},
            user_agent=_user_agent(browser),
            service_workers="block",
        )
        await context.add_init_script(script=_TIMER_REGISTRY)
        deadline = _Deadline(options.timeout)
        # Playwright's own limits (from `deadline`) fire first; this net catches anything else.
        async with asyncio.timeout(options.timeout + 2 * deadline.reserve):
            return await _visit(context, url, options, deadline)
    except (TimeoutError, PlaywrightTimeout):
        return PageRecord.failure(url, "timeout", f"no complete page within {options.timeout:g}s")
    except Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if not browser.is_connected() or "crash" in message.lower():
            return PageRecord.failure(url, "browser", f"Chromium failed: {message}")
        if net_error(message) in OUR_NETWORK_ERRORS:
            return PageRecord.failure(url, "offline", f"our network failed: {message}")
        return PageRecord.failure(url, "network", message)
    finally:
        if context is not None:
            with contextlib.suppress(Error):
                await context.close()


def _user_agent(browser: Browser) -> str:
    """A desktop Chrome user agent (without "HeadlessChrome", which many sites refuse)."""
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{browser.version} Safari/537.36"
    )


async def _visit(
    context: BrowserContext, url: str, options: CaptureOptions, deadline: _Deadline
) -> PageRecord:
    from playwright.async_api import Error

    page = await context.new_page()
    hops = _navigations(page)
    traffic = _Traffic(page)
    try:
        response = await _open(page, url, deadline)
        pause = await _retry_pause(response, deadline)
        if pause is not None:  # "not now": once more, after the wait the site asked for
            await asyncio.sleep(pause)
            response = await _open(page, url, deadline)
    except Error as exc:
        if "download is starting" in str(exc).lower():
            return await _fetch_document(context, url, deadline)
        raise
    if response is None:
        return PageRecord.failure(url, "network", "navigation produced no response")
    content_type = await response.header_value("content-type")
    if looks_like_pdf(content_type):
        return await _fetch_document(context, url, deadline)
    if response.status >= 400:
        return _http_failure(url, response.status, response.status_text, content_type)
    body = await _body_or_empty(response)  # a PDF served under any type, text/html included
    if looks_like_pdf(None, body[:1024]):
        return _pdf_record(url, body, response.status, content_type, page.url)
    return await _web_record(page, response, url, content_type, options, deadline, hops, traffic)


async def _open(page: Page, url: str, deadline: _Deadline) -> Response | None:
    """Navigate `page` to `url`, up to its document's content loaded."""
    return await page.goto(
        url, timeout=deadline.ms(keep_reserve=False), wait_until="domcontentloaded"
    )


async def _retry_pause(response: Response | None, deadline: _Deadline) -> float | None:
    """Seconds to wait before asking for the page again when `response` says "not now"
    (`RETRIED_STATUSES`) and the wait it asks for is short (`MAX_RETRY_AFTER`) and leaves time
    to load it; None when it is not asked again."""
    if response is None or response.status not in RETRIED_STATUSES:
        return None
    pause = _retry_after(await response.header_value("retry-after"))
    if pause is None or pause > min(MAX_RETRY_AFTER, deadline.ms() / 2000):
        return None
    return pause


def _retry_after(value: str | None) -> float | None:
    """The seconds a `Retry-After` header asks to wait (a number or an HTTP date), or
    `RETRY_PAUSE` when there is none; None when it cannot be read."""
    if value is None:
        return RETRY_PAUSE
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - time.time(), 0.0)


class _Traffic:
    """The requests for content (`TRAFFIC_TYPES`) a page's scripts have out, in any frame."""

    def __init__(self, page: Page) -> None:
        self._out: set[Request] = set()
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, request: Request) -> None:
        if request.resource_type in TRAFFIC_TYPES:
            self._out.add(request)

    def _ended(self, request: Request) -> None:
        self._out.discard(request)

    def out(self) -> frozenset[Request]:
        """Those out now."""
        return frozenset(self._out)

    def any_out(self, requests: frozenset[Request]) -> bool:
        """Whether one of `requests` is still out."""
        return not self._out.isdisjoint(requests)


def _navigations(page: Page) -> list[str]:
    """The URLs `page`'s main frame is sent to from now on, in order: each HTTP redirect's
    and each script's (filled in as the page loads). Where a cited short link pointed is
    the first of them on another site (`walls.linked_page`), which the page's record keeps."""
    hops: list[str] = []

    def on_request(request: Request) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            hops.append(request.url)

    page.on("request", on_request)
    return hops


async def _body_or_empty(response: Response) -> bytes:
    from playwright.async_api import Error

    try:
        return await response.body()
    except Error:
        return b""


async def _web_record(
    page: Page,
    response: Response,
    url: str,
    content_type: str | None,
    options: CaptureOptions,
    deadline: _Deadline,
    hops: list[str],
    traffic: _Traffic,
) -> PageRecord:
    image = (content_type or "").lower().startswith("image/")
    read = await _settled_read(page, traffic, options, deadline, image=image)
    if read is None:
        return PageRecord.failure(
            url,
            "timeout",
            f"the page kept navigating while it was read ({READS} times): no settled page",
            http_status=response.status,
            content_type=content_type,
        )
    text = _with_nested(read.text, await _nested_text(page))  # its frames' and shadow roots'
    linked_url = linked_page(url, read.url, hops)  # what a read of the page needs of `hops`
    extra: dict[str, Any] = {
        "http_status": response.status,
        "content_type": content_type,
        "final_url": read.url,
        "linked_url": linked_url,
        "consent": read.consent,
    }
    # No text, judged, would fail every claim unseen: a blank page, or an app whose scripts
    # failed, draws as a blank screenshot. Only an image is its screenshot.
    if not (text or "").strip() and (read.shot is None or not image):
        return PageRecord.failure(url, "empty", NOTHING_RENDERED, **extra)
    # likewise a bot check, the sign-in or consent page the site sent the browser to, the
    # home, error or search page a removed page is redirected to, a page saying it was not
    # found (a soft 404), or a consent dialog that still hides the page
    wall = served_instead(url, read.url, text, linked_url=linked_url)
    if wall is None:
        wall = not_found_page(linked_url, await _not_found_shown(page))
    if wall is None:
        wall = consent_wall((await read_consent(page))[0], text, read.consent)
    if wall is not None:
        return PageRecord.failure(url, wall.kind, wall.reason, **extra)
    return PageRecord.web(url, text, read.shot, **extra)


async def _not_found_shown(page: Page) -> NotFoundShown:
    """What `page` shows that tells a not-found page (`_NOT_FOUND_SHOWN`); nothing when it
    cannot be read (a page that navigated away: no sign is no wall)."""
    from playwright.async_api import Error

    try:
        found = await page.evaluate(_NOT_FOUND_SHOWN, NOT_FOUND_HEADINGS)
    except Error:
        return NotFoundShown()
    return NotFoundShown(
        title=str(found.get("title") or ""),
        headings=tuple(str(h) for h in found.get("headings") or ()),
        main_chars=int(found.get("main") or 0),
    )


@dataclass(frozen=True)
class _Read:
    """A settled page as `_settled_read` read it: its text, its screenshot, its URL, and how
    the capture answered a consent dialog that hid it (`_settle`)."""

    text: str
    shot: bytes | None
    url: str
    consent: ConsentChoice | None


async def _settled_read(
    page: Page,
    traffic: _Traffic,
    options: CaptureOptions,
    deadline: _Deadline,
    *,
    image: bool = False,
) -> _Read | None:
    """The page once it has settled and rendered (`_settle`, `_rendered_text`; an `image`
    shows no text to wait for); None if it navigated during each of `READS` reads.
    A page that navigates as it is read (a JS redirect) is waited for and read again: its old
    document's text stored under the new URL, or an "execution context was destroyed" error
    stored as the page's failure, would both be wrong."""
    from playwright.async_api import Error, Frame

    begun = committed = 0  # main-frame navigations begun, and new documents in place

    def on_request(request: Request) -> None:
        nonlocal begun
        if request.is_navigation_request() and request.frame == page.main_frame:
            begun += 1

    def on_navigated(frame: Frame) -> None:
        nonlocal committed
        if frame == page.main_frame:
            committed += 1

    page.on("request", on_request)
    page.on("framenavigated", on_navigated)
    consent: ConsentChoice | None = None
    try:
        for _ in range(READS):
            consent = most_agreed(consent, await _settle(page, traffic, options, deadline))
            before = (page.url, begun, committed)
            try:
                text = await _inner_text(page)
                shot = await _screenshot(page, options, deadline)
                rendered = await _rendered_text(page, text, options, deadline, image=image)
                if rendered != text:  # the screenshot showed the earlier text: draw it again
                    text, shot = rendered, await _screenshot(page, options, deadline)
            except Error as exc:
                if "context was destroyed" not in str(exc):
                    raise
            else:
                if (page.url, begun, committed) == before:
                    return _Read(text, shot, before[0], consent)
            if committed == before[2]:  # a navigation begun: let its document replace this one
                with contextlib.suppress(Error):
                    await page.wait_for_event(
                        "framenavigated",
                        predicate=lambda frame: frame == page.main_frame,
                        timeout=deadline.ms(options.idle_wait),
                    )
        return None
    finally:
        page.remove_listener("request", on_request)
        page.remove_listener("framenavigated", on_navigated)


async def _inner_text(page: Page) -> str:
    """The text the page's document shows (`innerText` of its body)."""
    return str(await page.evaluate(_INNER_TEXT) or "")


async def _rendered_text(
    page: Page, text: str, options: CaptureOptions, deadline: _Deadline, *, image: bool
) -> str:
    """The page's text once it has rendered, given `text`, read as the network went idle.

    Network idle is not rendered: an app may fill in its content later from a timer, a
    hydration step or an animation frame, without a request, or still be appending to it;
    stored early, its placeholder would fail every claim checked against it, never retried.
    A page reading the same once more (after the screenshot, which takes a while) is taken as
    it is, unless its text is placeholder-size: that is watched until it changes. A changed
    text is read again, after the network settles and a quiet pause, until two reads agree.
    Both within `options.render_wait` and the deadline: a page that never stops changing
    (a clock, a ticker) is stored as last read.
    """
    from playwright.async_api import Error

    latest = await _inner_text(page)
    placeholder = not image and len(text.strip()) < PLACEHOLDER_CHARS
    if latest == text and not placeholder:
        return text
    end = time.monotonic() + deadline.ms(options.render_wait) / 1000
    while latest == text and time.monotonic() < end:  # a placeholder: wait for its content
        await asyncio.sleep(min(_WATCH_INTERVAL, max(end - time.monotonic(), 0.0)))
        latest = await _inner_text(page)
    previous = text
    while latest != previous and time.monotonic() < end:
        previous = latest
        with contextlib.suppress(Error):  # content that came late may fetch more
            await page.wait_for_load_state(
                "networkidle", timeout=deadline.ms(end - time.monotonic())
            )
        await asyncio.sleep(min(_QUIET, max(end - time.monotonic(), 0.0)))
        latest = await _inner_text(page)
    return latest


async def _nested_text(page: Page) -> list[str]:
    """The texts a page shows outside its document's own `innerText`, which leaves out open
    shadow roots (web components) and frames (`_NESTED_TEXT`): an article embedded in a frame
    or drawn by a web component, beside the page's own menus, is part of what it shows."""
    from playwright.async_api import Error

    parts: list[str] = []
    for frame in page.frames:
        with contextlib.suppress(Error):
            found = await frame.evaluate(_NESTED_TEXT, frame != page.main_frame)
            parts += [part for part in found if isinstance(part, str)]
    return parts


async def _page_text(page: Page) -> str:
    """All the text the page shows: its document's, its frames' and its shadow roots'."""
    return _with_nested(await _inner_text(page), await _nested_text(page))


def _with_nested(text: str, parts: list[str]) -> str:
    """`text` followed by each of `parts` it does not already hold (a shadow root's slotted
    content is in both)."""
    for part in parts:
        part = part.strip()
        if part and part not in text:
            text = f"{text}\n{part}" if text.strip() else part
    return text


async def _settle(
    page: Page, traffic: _Traffic, options: CaptureOptions, deadline: _Deadline
) -> ConsentChoice | None:
    """Wait for `load` and network idle, scroll through the page (`_scroll_through`), wait for
    what it set to happen soon (`_await_scheduled`), answer a consent dialog that hides it
    (`consent.answer_consent`; then all of these again, up to `consent.ANSWERS` times), and
    show what it hides behind a click (`_REVEAL`): a slow image, a page that keeps polling,
    content loaded on view, drawn by a timer or a slow fetch, or held back until a consent
    dialog is answered, is in its text by the end of these. Gives how the dialog was answered
    (the answer agreeing to most, `consent.most_agreed`), None if none was."""
    from playwright.async_api import Error

    answered: ConsentChoice | None = None
    for answers in range(ANSWERS + 1):
        with contextlib.suppress(Error):
            await page.wait_for_load_state("load", timeout=deadline.ms())
        with contextlib.suppress(Error):
            await page.wait_for_load_state("networkidle", timeout=deadline.ms(options.idle_wait))
        await _scroll_through(page, traffic, options, deadline)
        await _await_scheduled(page, traffic, options.script_wait, deadline)
        if answers == ANSWERS or deadline.spent():
            break
        answer = await answer_consent(page, lambda: _page_text(page))
        if answer is None:
            break
        answered = most_agreed(answered, answer)
    with contextlib.suppress(Error):
        await page.evaluate(_REVEAL)
    return answered


async def _await_scheduled(
    page: Page, traffic: _Traffic, within: float, deadline: _Deadline
) -> None:
    """Wait, up to `within` seconds, for what the page set to happen by then: its timers
    due within them and a meta refresh to another page to fire (`_SCHEDULED`), then the
    fetches it has out to answer (`_Traffic`; not those it starts meanwhile, as a page full of
    ads and beacons never stops). Network idle says nothing of a timer (content drawn a second
    after load, a redirect set for later), and gives up on a fetch answering slowly."""
    from playwright.async_api import Error

    end = time.monotonic() + deadline.ms(within) / 1000
    try:
        due_ms, timers = await page.evaluate(_SCHEDULED, within * 1000) or (0, [])
    except (Error, TypeError, ValueError):
        due_ms, timers = 0, []
    due = float(due_ms) / 1000
    waited = due > 0 or bool(timers)
    if waited:
        await asyncio.sleep(min(due + _AFTER_WAIT, max(end - time.monotonic(), 0.0)))
    while timers and time.monotonic() < end:
        if not await _timers_pending(page, timers):
            break
        await asyncio.sleep(_TRAFFIC_POLL)  # due, but run late behind a busy page
    out = traffic.out()
    while traffic.any_out(out) and time.monotonic() < end:
        waited = True
        await asyncio.sleep(_TRAFFIC_POLL)
    if waited:
        await asyncio.sleep(min(_AFTER_WAIT, max(end - time.monotonic(), 0.0)))


async def _timers_pending(page: Page, timers: list[int]) -> bool:
    """Whether any of the page's timers `timers` has neither run nor been cleared."""
    from playwright.async_api import Error

    try:
        return bool(await page.evaluate(_PENDING, timers))
    except Error:
        return False


async def _scroll_through(
    page: Page, traffic: _Traffic, options: CaptureOptions, deadline: _Deadline
) -> None:
    """Scroll down the page a view at a time, to `options.max_scroll_height`, then back to
    the top: a section loaded as it comes into view, or the next items of an endless list,
    come in (each time the end is reached, what it set off is waited for briefly, and the
    page scrolled on if it grew)."""
    from playwright.async_api import Error

    y = 0
    with contextlib.suppress(Error):
        while y < options.max_scroll_height and not deadline.spent():
            y = min(y + options.viewport_height, options.max_scroll_height)
            bottom, height, drawn = await page.evaluate(_SCROLL, y)
            if bottom < height:
                continue
            if not drawn:  # what the end coming into view sets off is not started yet
                await page.evaluate(_TWO_FRAMES, _SLOW_FRAMES_MS)
            await _await_scheduled(page, traffic, _QUIET, deadline)
            if not await _grew(page, height) and not await _grew_on_a_second_look(
                page, traffic, height, deadline
            ):
                break  # the end, and nothing more came
        if y:
            await page.evaluate(_TOP)


async def _grew(page: Page, height: int) -> bool:
    """Whether the page is now taller than `height`."""
    return int(await page.evaluate(_PAGE_HEIGHT) or 0) > height


async def _grew_on_a_second_look(
    page: Page, traffic: _Traffic, height: int, deadline: _Deadline
) -> bool:
    """Whether the page grew past `height` after two more frames and what they set to happen.
    An intersection observer reports in a task of its own, which a busy renderer (a loaded
    machine) may run after the frames that saw the end come into view: one look would take
    an endless list for its end and store it cut short."""
    await page.evaluate(_TWO_FRAMES, _SLOW_FRAMES_MS)
    await _await_scheduled(page, traffic, _QUIET, deadline)
    return await _grew(page, height)


async def _screenshot(page: Page, options: CaptureOptions, deadline: _Deadline) -> bytes | None:
    """A full-page JPEG, cut at `max_screenshot_height`; None if the page cannot be drawn."""
    from playwright.async_api import Error

    try:
        height = int(await page.evaluate(_PAGE_HEIGHT) or 0)
        clip_height = min(max(height, options.viewport_height), options.max_screenshot_height)
        return await page.screenshot(
            type="jpeg",
            quality=options.jpeg_quality,
            full_page=True,
            clip={"x": 0, "y": 0, "width": options.viewport_width, "height": clip_height},
            timeout=deadline.final_ms(),
        )
    except Error:
        return None


async def _fetch_document(context: BrowserContext, url: str, deadline: _Deadline) -> PageRecord:
    """Fetch a document the browser would download or show in its viewer (PDFs) as bytes."""
    response = await context.request.get(
        url, timeout=deadline.ms(keep_reserve=False), fail_on_status_code=False
    )
    content_type = response.headers.get("content-type")
    if response.status >= 400:
        return _http_failure(url, response.status, response.status_text, content_type)
    body = await response.body()
    if not looks_like_pdf(content_type, body[:1024]):
        return PageRecord.failure(
            url,
            "unsupported",
            f"a download that is not a PDF (content-type {content_type or 'unknown'})",
            http_status=response.status,
            content_type=content_type,
        )
    return _pdf_record(url, body, response.status, content_type, response.url)


def _pdf_record(
    url: str, body: bytes, status: int, content_type: str | None, final_url: str
) -> PageRecord:
    extra: dict[str, Any] = {
        "http_status": status,
        "content_type": content_type,
        "final_url": final_url,
    }
    try:
        text = pdf_text(body)
    except PdfTextError as exc:
        return PageRecord.failure(url, "pdf", str(exc), **extra)
    return PageRecord.pdf_document(url, body, text, **extra)


def _http_failure(url: str, status: int, reason: str, content_type: str | None) -> PageRecord:
    error = f"HTTP {status} {reason}".strip()
    if status in RETRIED_STATUSES:  # the page may well be there: say so
        error += (
            ": the site said not now (too many requests, or unavailable for a while), "
            "still after a short wait or asking for a long one; capture it again later"
        )
    return PageRecord.failure(
        url,
        "throttled" if status == 429 else "http",  # 429: the site refused us, not the page
        error,
        http_status=status,
        content_type=content_type,
    )
