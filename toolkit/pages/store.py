"""The page store: one SQLite file (WAL) mapping a normalized URL to its captured page.

Invariant: a failed capture is kept as a failure record (`status="failed"`, with the reason)
and is never served as page text. When the page itself failed (4xx/5xx, timeout, network,
not a PDF, unreadable PDF) `get` and `screenshot` answer None, exactly as for a page never
captured: the claim is unsupported, a verdict. When our side failed (`INFRA_FAILURES`: the
browser, the capture host's network, a site refusing the capture host, a consent dialog the
capture could not get past) they raise `InfraError`, so the evaluation is incomplete and
retried, never scored 0.
A store that cannot be read or written (a damaged file, a disk error, a lock held past the
busy timeout) raises `PageStoreError`, naming the file and the fix, never a bare SQLite error.
A failure never overwrites a page that was captured successfully and that reads serve, nor
hides one stored under another spelling of the same URL (`toolkit.urls.normalize_url`): reads
serve that page.
Reads are local and offline, so a rerun sees exactly the pages the first run saw.
A stored web page that is a wall under today's rules (`toolkit.pages.walls`: a bot check, a
sign-in or consent page, or the home, error or search page a deep link was sent to), stored by
a judgegen before the rule or imported, reads as the failure a capture records now: missing,
and captured again; a failure may replace it. So does one with nothing to judge (`JUDGEABLE`).
A page that only says it was not found (its title or main heading, which a row does not keep)
or that a cookie-consent dialog hides (its boxes) is told by the live page at capture; a record
captured before that rule (an older `version`, `stored_walls.RULE_VERSIONS`), or imported, has
its text tested by the rule's text counterpart (`stored_walls.stored_wall`), so a "Page not
found" text or a cookie banner an older judgegen stored is no page either: `not_found` (the
page's), or `consent_wall` (ours: reading it raises `InfraError`). A record of this version is
never tested so. `cache-pages --recheck` lists them, and with `--refresh` captures them again.
The rules read what a capture read, as the row keeps it: the URL asked for, the one the
browser ended on, and the page the first names (`linked_url`: where a short link pointed).
A short link stored without it (before schema 5) that ended on a home page on another site
may be an article since sent home: it reads as missing too (`walls.served_instead`).
`counts` and `records` say what reads serve: such a row is a failure there too (`not_served`
counts them), and `records(raw=True)` shows it as stored.
Keys keep a single-page app's hash route (`#/pricing`, `toolkit.urls`). A store written
before they did holds what was read for a route under the app's address (its home page, or
some route): a read of the route never finds it, so the route is missing and captured again
rather than served another page.
"""

from __future__ import annotations

import base64
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, Field

from toolkit.errors import NEWER_PAGES_FIX, PAGES_ACCESS_FIX, InfraError, PageStoreError
from toolkit.pages.stored_walls import (
    MAX_STORED_WALL_CHARS,
    needs_check,
    stored_wall,
)
from toolkit.pages.walls import (
    MAX_CHALLENGE_CHARS,
    ConsentChoice,
    Wall,
    linked_page,
    served_instead,
    short_link,
)
from toolkit.urls import canonical_url, near_page_key, normalize_url, same_page, url_spellings
from toolkit.util.hashing import sha256_bytes, sha256_text
from toolkit.util.sqlite_errors import sqlite_errors

PAGE_RECORD_VERSION = 4
"""2: `linked_url` (a version 1 record has none: not recorded).
3: `consent`, how the capture answered a cookie-consent dialog that hid the page (a record
before has none: none was answered, as capture did not answer one); a captured page passed
`walls.consent_wall`.
4: a captured page passed `walls.not_found_page` too (every rule reading the live page), an
imported one their text counterparts (`stored_walls.text_wall`). A stored web page of an
earlier version has its text tested by those its capture did not apply, at each read
(`stored_walls.stored_wall`); one of this version never is."""
STORE_FILENAME = "pages.sqlite"
SCHEMA_VERSION = 7
"""2: `match_key` holds `toolkit.urls.normalize_url` (version 1 had a looser key).
3: `screenshot_hash`, so checking that a result's screenshots are unchanged reads no image.
4: a URL ending in punctuation is stored with it encoded (`canonical_url`), and `match_key`
keeps an encoded slash (`a%2Fb` is not `a/b`).
5: `linked_url`, the page a captured URL names (where a short link pointed), so a read tells
a short link to a home page from one to an article since sent home; NULL in the rows stored
before (not recorded).
6: `consent`, how the capture answered a consent dialog that hid the page; NULL in the rows
stored before (none was: capture did not answer one).
7: `match_key` reads a punycode host as its Unicode name (`xn--bcher-kva` = `bücher`); a
store before keeps either as written, so its pages are found under the spelling captured."""
RECENT_READS = 64  # answers a read-only store keeps (judges check several claims per page)

PageKind = Literal["web", "pdf"]
INFRA_FAILURES = frozenset({"browser", "offline", "throttled", "consent_wall"})
"""Failure kinds caused by our side, not the page: reading them raises `InfraError`.
`browser`: Chromium failed; `offline`: the capture host's network did (no connection, its
proxy down, its DNS resolver down), so the page was never asked for; `throttled`: the site
refused our capture for now (HTTP 429, too many requests from the capture host), still after
a short wait: the page is likely there, and a claim checked against none would be found
unsupported for our capture's fault; `consent_wall`: a cookie-consent dialog still hid the page
after the capture answered it (`walls.consent_wall`): a reader who presses its button sees the
page, so the capture, not the page or the answer citing it, failed."""
JUDGEABLE = (
    "(CASE WHEN typeof(screenshot) != 'null' THEN 1"
    " ELSE trim(coalesce(text, ''), char(32, 9, 10, 13)) != '' END)"
)
"""SQL: a stored page holds something a judge can check (a screenshot, or some text). One
without either — a scanned PDF or a blank render stored by an older judgegen — counts as
missing (loud, and captured again), never as a page against which every claim fails unseen.
A web page's screenshot decides it alone: `typeof` reads the column's type, not its bytes,
and CASE stops there, so neither the screenshot nor the text is read for it (an OR reads
both: ~25% of a page-row query on the bench's store)."""
WALL_COLUMNS = (
    "rowid",
    "kind",
    "version",
    "origin",
    "requested_url",
    "final_url",
    "typeof(text)",
)
"""What telling a stored page from a wall (`_wall`) reads of its row besides a short text
(`PageStore._wall_text`)."""
MAX_CHALLENGE_BYTES = 4 * MAX_CHALLENGE_CHARS
"""The most bytes a text of `MAX_CHALLENGE_CHARS` characters takes in UTF-8: a stored text
longer than this is no bot check, told by its size alone."""
MAX_STORED_WALL_BYTES = 4 * MAX_STORED_WALL_CHARS
"""The same for the text counterparts of the live rules (`stored_walls`), read only for a
record stored before them (`stored_walls.needs_check`)."""
FailureKind = Literal[
    "http",
    "timeout",
    "network",
    "unsupported",
    "pdf",
    "empty",
    "blocked",
    "redirect_home",
    "not_found",
    "browser",
    "offline",
    "throttled",
    "consent_wall",
    "import",
]
FAILURE_KINDS = frozenset(get_args(FailureKind))
"""The failure kinds this judgegen knows; a row with another came from a newer one (reads
raise `InfraError`). Adding a kind: bump `SCHEMA_VERSION` too, so that older judgegens, which
read the records whole (`lookup`, `records`), refuse the store instead."""

_COLUMNS = (
    "url",
    "match_key",
    "version",
    "requested_url",
    "final_url",
    "status",
    "kind",
    "http_status",
    "content_type",
    "text",
    "screenshot",
    "pdf",
    "content_hash",
    "fetched_at",
    "error_kind",
    "error",
    "attempts",
    "origin",
)
_BLOBS = ("screenshot", "pdf")
_STORED = (*_COLUMNS, "screenshot_hash", "linked_url", "consent")  # the row as `put` writes it
_ADDED = ("linked_url", "consent")
"""Columns added since schema 4, which a store an older judgegen wrote and this one has only
read lacks (`PageStore._stored_column`)."""

# The large columns come last: SQLite reaches a column stored after them by walking their
# overflow pages, so a freshness check reading the hashes would read every image and text.
# (Stores created before schema 3 keep their order, with `screenshot_hash` added at the end,
# and those created before schema 5 or 6 with `linked_url` or `consent` added at the end: reads
# of a page read the first only for a short link, `PageStore._recorded_link`, and the second
# only for a whole record.)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY,
    match_key TEXT NOT NULL,
    version INTEGER NOT NULL,
    requested_url TEXT NOT NULL,
    final_url TEXT,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    kind TEXT,
    http_status INTEGER,
    content_type TEXT,
    content_hash TEXT,
    screenshot_hash TEXT,
    linked_url TEXT,
    consent TEXT,
    fetched_at TEXT NOT NULL,
    error_kind TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    origin TEXT NOT NULL,
    text TEXT,
    screenshot BLOB,
    pdf BLOB
);
CREATE INDEX IF NOT EXISTS pages_match_key ON pages (match_key);
PRAGMA user_version = {SCHEMA_VERSION};
"""


def content_hash(data: str | bytes) -> str:
    """`sha256:<hex>` of a page's text (web) or bytes (PDF); the prefix names the algorithm."""
    return sha256_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def _stored_text_hash(row: dict[str, Any], has_text: bool) -> str | None:
    """The row's stored hash of its text (`content_hash`, which `put` writes for a web page
    with text), or None when the text must be hashed (a PDF: its hash is of the bytes)."""
    if row["kind"] == "web" and row["content_hash"] and has_text:
        return str(row["content_hash"])
    return None


NOTHING_TO_JUDGE = "stored with no text and no screenshot: nothing in it can be checked"
"""The reason a stored page with nothing to judge (not `JUDGEABLE`) reads as a failure."""


@dataclass(frozen=True)
class NothingToJudge:
    """A stored page that holds nothing to judge, as the failure a capture records now: `empty`
    for a web page (a blank render), `pdf` for a PDF (no text layer)."""

    kind: Literal["empty", "pdf"]
    reason: str


def _wall(row: dict[str, Any], text: str | None, linked_url: str | None) -> Wall | None:
    """The wall a stored page `row` (its `WALL_COLUMNS`) showing `text` is under today's rules
    (`walls.served_instead`, from the URL asked for, the one the browser ended on and the page
    the first names as its capture recorded it, `linked_url`; and for a record stored before
    the rules reading the live page, their text counterparts, `stored_walls.stored_wall`), or
    None: a PDF, or the page. A page stored before a rule, or imported, may be one."""
    if row["kind"] != "web":
        return None
    cited, final = row["requested_url"], row["final_url"]
    wall = served_instead(cited, final, text, linked_url=linked_url)
    if wall is not None or not needs_check(row["version"]):
        return wall
    named = linked_url or linked_page(cited, final or cited)
    return stored_wall(named, text, row["version"], imported=row["origin"] != "capture")


def _served(row: dict[str, Any], text: str | None, linked_url: str | None) -> bool:
    """Whether reads serve the stored page `row` (`JUDGEABLE` and `WALL_COLUMNS` read) showing
    `text`, its URL naming `linked_url`: it holds something to judge, and is no wall."""
    return _not_served(row, text, linked_url) is None


def _not_served(
    row: dict[str, Any], text: str | None, linked_url: str | None
) -> Wall | NothingToJudge | None:
    """Why reads do not serve the stored page `row` (`JUDGEABLE` and `WALL_COLUMNS` read)
    showing `text`, its URL naming `linked_url`, as the failure a capture records now; None
    when they serve it."""
    if not row[JUDGEABLE]:
        return NothingToJudge("pdf" if row["kind"] == "pdf" else "empty", NOTHING_TO_JUDGE)
    return _wall(row, text, linked_url)


@dataclass(frozen=True)
class Recheck:
    """What `PageStore.recheck` finds in a store."""

    refused: list[PageRecord]
    """The stored pages reads refuse (a wall, or nothing to judge), each as the failure
    `lookup` gives: its kind and reason, without its content."""
    unchecked: int
    """Stored web pages reads serve that were stored before a rule reading the live page
    (`stored_walls.needs_check`): their text passed the rule's counterpart, the live page was
    never asked."""


@dataclass(frozen=True)
class StoredPage:
    """A stored page as a check reads it: text, screenshot (base64 JPEG, or None) and the
    hashes a result's fingerprint notes for them (`sha256_text` of the text, `sha256:` of the
    screenshot's bytes)."""

    text: str
    text_hash: str
    screenshot: str | None
    screenshot_hash: str | None


def _now() -> datetime:
    return datetime.now(UTC)


class PageRecord(BaseModel):
    """One URL's row in the page store: a captured page, or the reason its capture failed."""

    version: int = PAGE_RECORD_VERSION
    """Format version of this record."""
    url: str
    """The canonical URL (`toolkit.urls.canonical_url`): the store key."""
    requested_url: str
    """The URL as it was asked for (cited form, or the Mind2Web 2 index key on import)."""
    final_url: str | None = None
    """Where the browser ended up after redirects, when known."""
    linked_url: str | None = None
    """The page `requested_url` names, as a capture of a web page records it
    (`walls.linked_page`): itself, or for a short link the first page it reached on another
    site. None when not recorded (a record of version 1, an import): a stored short link that
    ended on a home page on another site then reads as missing (`walls.served_instead`)."""
    consent: ConsentChoice | None = None
    """How the capture answered a cookie-consent dialog that hid the page (`toolkit.pages.
    consent`): `rejected` (its choice agreeing to nothing), `accepted` (it offered no such
    choice); None when no dialog hid the page (a notice beside it is left alone)."""
    status: Literal["ok", "failed"]
    """`ok`: the page is stored; `failed`: only the failure is recorded."""
    kind: PageKind | None = None
    """`web` (text + screenshot) or `pdf` (bytes + extracted text); None for failures."""
    http_status: int | None = None
    """The HTTP status of the final response, when there was one."""
    content_type: str | None = None
    """The response's Content-Type header, when known."""
    text: str | None = None
    """The page's visible text (`document.body.innerText`) or the PDF's extracted text."""
    screenshot: bytes | None = Field(default=None, repr=False)
    """JPEG bytes of the rendered page (web pages only)."""
    pdf: bytes | None = Field(default=None, repr=False)
    """The PDF file as served (PDFs only)."""
    content_hash: str | None = None
    """`sha256:<hex>` of the text (web) or the PDF bytes."""
    fetched_at: datetime = Field(default_factory=_now)
    """When the capture (or the import's source file) was made, UTC."""
    error_kind: FailureKind | None = None
    """Why it failed: http (4xx/5xx), timeout, network, unsupported (a download that is
    not a PDF), pdf (unreadable), empty (no text), blocked (a bot check or a sign-in wall),
    redirect_home (a deep link sent to the site's home page), not_found (a not-found page
    served with a success status, a soft 404: saying so in its title or main heading, or the
    site's error or search page a deep link was sent to), browser (crashed), offline (our
    network, not the page's), throttled (HTTP 429 still after a retry), consent_wall (a
    cookie-consent dialog still hid the page after it was answered), import (Mind2Web 2
    failure record)."""
    error: str | None = None
    """A one-line reason for the failure."""
    attempts: int = 1
    """How many captures of this URL failed in a row (1 for a stored page)."""
    origin: Literal["capture", "m2w2"] = "capture"
    """Captured by `cache-pages`, or imported from a Mind2Web 2 page cache."""

    @classmethod
    def web(cls, requested_url: str, text: str, screenshot: bytes | None, **extra: Any) -> Self:
        """A captured web page (text and JPEG screenshot)."""
        return cls(
            url=canonical_url(requested_url),
            requested_url=requested_url,
            status="ok",
            kind="web",
            text=text,
            screenshot=screenshot,
            content_hash=content_hash(text),
            **extra,
        )

    @classmethod
    def pdf_document(cls, requested_url: str, pdf: bytes, text: str, **extra: Any) -> Self:
        """A captured PDF with the text extracted from it."""
        return cls(
            url=canonical_url(requested_url),
            requested_url=requested_url,
            status="ok",
            kind="pdf",
            text=text,
            pdf=pdf,
            content_hash=content_hash(pdf),
            **extra,
        )

    @classmethod
    def failure(cls, requested_url: str, error_kind: FailureKind, error: str, **extra: Any) -> Self:
        """A capture that failed; it holds the reason and never any page content."""
        return cls(
            url=canonical_url(requested_url),
            requested_url=requested_url,
            status="failed",
            error_kind=error_kind,
            error=error,
            **extra,
        )

    @property
    def ok(self) -> bool:
        """Whether a page is stored (not a failure)."""
        return self.status == "ok"

    def report(self) -> dict[str, Any]:
        """The record for reports and `--json`: blobs replaced by their sizes."""
        data = self.model_dump(mode="json", exclude=set(_BLOBS))
        data["text_chars"] = len(self.text) if self.text is not None else None
        data.pop("text")
        data["screenshot_bytes"] = len(self.screenshot) if self.screenshot else None
        data["pdf_bytes"] = len(self.pdf) if self.pdf else None
        return data


def _as_read(row: dict[str, Any]) -> PageRecord:
    """The record reads give for `row` (its `_COLUMNS`, or those but blobs, `JUDGEABLE`, and
    the `_ADDED` columns the store has): a stored page they do not serve (`_not_served`) is the
    failure a capture records now, with its kind and reason, and without the content."""
    record = PageRecord.model_validate(row)
    why = _not_served(row, row["text"], record.linked_url) if record.ok else None
    return record if why is None else _as_failure(record, why)


def _as_failure(record: PageRecord, why: Wall | NothingToJudge) -> PageRecord:
    """The stored page `record` as the failure reads give for it (`why`), without content."""
    content = dict.fromkeys(("kind", "text", "screenshot", "pdf", "content_hash"))
    return record.model_copy(
        update={"status": "failed", "error_kind": why.kind, "error": why.reason, **content}
    )


class PageStore:
    """Captured pages by normalized URL in `<directory>/pages.sqlite`; a `PageSource`.

    `get(url)` gives the page text, `screenshot(url)` a base64 JPEG, `stored_page(url)` both
    with their hashes (a claim check's read), `lookup(url)` the whole record (failures
    included). Lookups try the canonical URL, then any row for the same page
    (`toolkit.urls.normalize_url`, kept in the `match_key` column), a page before a failure.
    """

    def __init__(self, directory: str | Path, *, readonly: bool = False) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STORE_FILENAME
        self.readonly = readonly
        self._lock = threading.Lock()
        self._recent: OrderedDict[tuple[str, str], Any] = OrderedDict()
        if readonly:
            if not self.path.is_file():
                raise FileNotFoundError(
                    f"no page store at {self.path}; capture pages first with "
                    "`judgegen cache-pages --answers DIR --store DIR`"
                )
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._refuse_newer()
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._refuse_newer()
            with self._guard():
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._upgrade()
                self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA busy_timeout=5000")
        self._table: frozenset[str] | None = None  # the table's columns, once looked up

    def _refuse_newer(self) -> None:
        """Refuse a store a newer judgegen wrote: its rows may say what this one misreads (a
        failure kind it does not know read as a missing page, a claim failed), and opening it
        to write would mark it this schema, so the newer judgegen would redo its upgrades."""
        with self._guard():
            (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            self._db.close()
            raise PageStoreError(
                self.path,
                f"a newer judgegen wrote it (page store schema {version}; this judgegen reads "
                f"up to {SCHEMA_VERSION})",
                NEWER_PAGES_FIX,
            )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Serialize use of the connection; a damaged file, or a read or write that fails,
        becomes a `PageStoreError` naming the file and the fix."""
        with self._lock, sqlite_errors(PageStoreError, self.path, PAGES_ACCESS_FIX):
            yield

    def _upgrade(self) -> None:
        """Bring a store written by an older judgegen to this schema: recompute the same-page
        keys (before 2, 4 and 7), add and fill the screenshot hashes (before 3), re-spell the
        URLs that end in punctuation (before 4), add the linked pages (before 5), left NULL:
        not recorded, as the navigations they come from were not kept, and the consent answers
        (before 6), left NULL: that judgegen answered no consent dialog."""
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if not 0 < version < SCHEMA_VERSION:
            return
        with self._db:
            urls = [url for (url,) in self._db.execute("SELECT url FROM pages").fetchall()]
            if version < 4:
                urls = self._respell(urls)
            if version < 7:
                self._db.executemany(
                    "UPDATE pages SET match_key = ? WHERE url = ?",
                    [(normalize_url(url), url) for url in urls],
                )
            columns = self._table_columns()
            if "screenshot_hash" not in columns:
                self._db.execute("ALTER TABLE pages ADD COLUMN screenshot_hash TEXT")
            for column in _ADDED:
                if column not in columns:
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {column} TEXT")
            if version >= 3:
                return
            for url in urls:  # one image in memory at a time
                row = self._db.execute("SELECT screenshot FROM pages WHERE url = ?", (url,))
                (shot,) = row.fetchone()
                if shot:
                    self._db.execute(
                        "UPDATE pages SET screenshot_hash = ? WHERE url = ?",
                        (sha256_bytes(shot), url),
                    )

    def _respell(self, urls: list[str]) -> list[str]:
        """The stored `urls` as this judgegen spells them: each is the address that was
        fetched, taken whole (`canonical_url`: `…/Oklahoma!` read as prose is `…/Oklahoma`,
        another page). A row whose new spelling is already stored is the same address twice,
        and goes."""
        stored, kept = set(urls), list[str]()
        for url in urls:
            spelled = canonical_url(url, whole=True)
            if spelled != url:
                if spelled in stored:
                    self._db.execute("DELETE FROM pages WHERE url = ?", (url,))
                    continue
                self._db.execute("UPDATE pages SET url = ? WHERE url = ?", (spelled, url))
                stored.add(spelled)
            kept.append(spelled)
        return kept

    def _table_columns(self) -> frozenset[str]:
        """The columns the table has now. The caller holds the connection."""
        return frozenset(column[1] for column in self._db.execute("PRAGMA table_info(pages)"))

    def _stored_column(self, column: str) -> list[str]:
        """[`column`] when the table has it, else []: a store an older judgegen wrote and this
        one has only read lacks the columns added since (`_upgrade`). Looked up once. The
        caller holds the connection."""
        if self._table is None:
            self._table = self._table_columns()
        return [column] if column in self._table else []

    def _added_columns(self) -> list[str]:
        """Those of `_ADDED` the table has (`_stored_column`). The caller holds the
        connection."""
        return [column for name in _ADDED for column in self._stored_column(name)]

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """The connection (`_guard`) in one read transaction: what several statements read
        (a page's row, then its text's size) is one state of the store, whatever another
        process writes meanwhile."""
        with self._guard():
            begun = not self._db.in_transaction
            if begun:
                self._db.execute("BEGIN")
            try:
                yield
            finally:
                if begun:
                    self._db.execute("COMMIT")

    def _row(self, url: str, columns: tuple[str, ...]) -> dict[str, Any] | None:
        """`columns` of the row read for `url`: the first of its spellings (`url_spellings`:
        taken whole, then as prose) with a row stored for it (`_row_for`). The caller holds
        the connection (`_guard`)."""
        spellings = url_spellings(url) or [canonical_url(url)]
        select = ", ".join(("url", "status = 'ok'", *columns))
        row = next((found for key in spellings if (found := self._row_for(key, select))), None)
        return dict(zip(columns, row[2:], strict=True)) if row else None

    def _wall_text(self, row: dict[str, Any]) -> str | None:
        """The text of stored page `row` (its `WALL_COLUMNS`) when it is a web page's, short
        enough to be a wall: a bot check (`MAX_CHALLENGE_BYTES`), or for a record stored
        before the rules reading the live page one of their text counterparts
        (`MAX_STORED_WALL_BYTES`); else None. Its size is read from the row's header (a blob
        handle), so no long text is read for this: a read that serves no text (a page's hashes,
        its screenshot) reads none. The caller holds the connection."""
        if row["kind"] != "web" or row["typeof(text)"] != "text":
            return None
        limit = MAX_STORED_WALL_BYTES if needs_check(row["version"]) else MAX_CHALLENGE_BYTES
        with self._db.blobopen("pages", "text", row["rowid"], readonly=True) as text:
            if len(text) > limit:
                return None
            return text.read().decode("utf-8", errors="replace")

    def _recorded_link(self, row: dict[str, Any]) -> str | None:
        """The page stored page `row` (its `WALL_COLUMNS`) was asked for names, as its capture
        recorded it (`linked_url`; None: not recorded). Read only for a short link
        (`walls.short_link`: the rules need it for no other URL, which names itself), by rowid,
        as the column may lie after a store's images (`_upgrade` adds it at the end). The
        caller holds the connection."""
        if row["kind"] != "web" or not short_link(row["requested_url"]):
            return None
        if not self._stored_column("linked_url"):
            return None
        query = "SELECT linked_url FROM pages WHERE rowid = ?"
        (linked,) = self._db.execute(query, (row["rowid"],)).fetchone()
        return None if linked is None else str(linked)

    def _row_for(self, key: str, select: str) -> tuple[Any, ...] | None:
        """The row for canonical URL `key`: the page stored under it, else one stored under
        another spelling of the same page (`match_key`), else a failure (`key`'s first). A
        failure never hides a stored page: one spelling's capture can fail where another's
        succeeded. A row is another spelling only if its URL, read whole, has `key`'s same-page
        key now (a store not yet upgraded may hold keys an older judgegen computed)."""
        row = self._db.execute(f"SELECT {select} FROM pages WHERE url = ?", (key,)).fetchone()
        if row is not None and row[1]:
            return row
        page = normalize_url(key)
        for other in self._db.execute(
            f"SELECT {select} FROM pages WHERE match_key = ? ORDER BY status = 'ok' DESC, rowid",
            (page,),
        ):
            same = normalize_url(canonical_url(other[0], whole=True)) == page
            if same and (row is None or other[1]):
                return other
        return row

    def lookup(self, url: str) -> PageRecord | None:
        """The full record for `url` (a page or a failure), or None if it was never captured.
        A stored page reads do not serve (`_not_served`: a wall, or nothing to judge) is the
        failure a capture records now, with its kind and reason (the row itself is in
        `records(raw=True)`)."""
        with self._guard():
            row = self._row(url, (*_COLUMNS, *self._added_columns(), JUDGEABLE))
        return None if row is None else _as_read(row)

    def _content(self, url: str, column: str) -> Any:
        row = self._page_row(url, (column,))
        return None if row is None else row[column]

    def _page_row(self, url: str, columns: tuple[str, ...]) -> dict[str, Any] | None:
        """`columns` of the page stored for `url`; None when it is missing, is not served
        (`_not_served`: nothing to judge, or a wall) or its capture failed because of the page.
        Raises `InfraError` when it failed on our side (`INFRA_FAILURES`), or the stored page
        is one a capture failing so records now (a consent dialog hiding it)."""
        checks = ("status", "error_kind", "error", JUDGEABLE, *WALL_COLUMNS)
        with self._snapshot():
            row = self._row(url, (*checks, *columns))
            if row is None:
                return None
            kind, error = row["error_kind"], row["error"]
            if row["status"] == "ok":
                text = row["text"] if "text" in columns else self._wall_text(row)
                why = _not_served(row, text, self._recorded_link(row))
                if why is None:
                    return row
                kind, error = why.kind, why.reason
        if kind is not None and kind not in FAILURE_KINDS:
            raise InfraError(
                f"the capture of {canonical_url(url)} failed in a way this judgegen does not "
                f"know ({kind!r}: {error}), so it cannot tell whether the page or the capture "
                f"is at fault. Fix: {NEWER_PAGES_FIX}",
                kind="page_capture",
            )
        if kind in INFRA_FAILURES:
            raise InfraError(
                f"capturing {canonical_url(url)} failed on our side ({error}); "
                "capture it again with `judgegen cache-pages`",
                kind="page_capture",
            )
        return None

    def _recently(self, key: tuple[str, str], read: Callable[[], Any]) -> Any:
        """`read()`, remembered among the latest answers when the store is read-only (a run:
        the same page is read for each claim checked against it, and each read would query
        and re-encode the same text and screenshot). A raised error is not remembered."""
        if not self.readonly:
            return read()
        with self._lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return self._recent[key]
        value = read()
        with self._lock:
            self._recent[key] = value
            if len(self._recent) > RECENT_READS:
                self._recent.popitem(last=False)
        return value

    def get(self, url: str) -> str | None:
        """The page's text; None when it was never captured or the page failed to load.

        Raises `InfraError` when the capture failed on our side (the browser, our network),
        not because of the page.
        """
        return self._recently(("text", url), lambda: self._content(url, "text"))

    def text_hash(self, url: str) -> str | None:
        """`sha256_text` of what `get(url)` returns (None when it returns None), as a page
        read is fingerprinted: a web page's stored hash, written with its text by `put`, so
        checking that a page is unchanged reads no text; a PDF's text is hashed."""
        return self._hashes(url)[0]

    def screenshot_hash(self, url: str) -> str | None:
        """`sha256:` of the screenshot's bytes (what `screenshot(url)` encodes), None when
        it gives None: stored by `put`, so checking that a screenshot is unchanged reads no
        image (a store written before schema 3 and not opened for writing since hashes it)."""
        return self._hashes(url)[1]

    def _hashes(self, url: str) -> tuple[str | None, str | None]:
        """(`text_hash`, `screenshot_hash`) of `url`, from one row read; remembered like a
        read in a run (a page many results cite is looked up once per check)."""

        def read() -> tuple[str | None, str | None]:
            columns = ["kind", "content_hash", "typeof(text)", "typeof(screenshot)"]
            row = self._page_row(url, tuple(columns + self._screenshot_hash_column()))
            if row is None:
                return None, None
            text = _stored_text_hash(row, row["typeof(text)"] != "null")
            if text is None:
                page = self.get(url)
                text = None if page is None else sha256_text(page)
            if row["typeof(screenshot)"] == "null":
                return text, None
            if row.get("screenshot_hash"):
                return text, str(row["screenshot_hash"])
            shot = self._content(url, "screenshot")
            return text, sha256_bytes(shot) if shot else None

        return self._recently(("hashes", url), read)

    def stored_page(self, url: str) -> StoredPage | None:
        """The page's text and screenshot with their hashes, all from one row read (so each
        hash is of exactly what is served); None when `get(url)` gives None. What a claim
        checked against the page needs, without hashing or decoding either again."""

        def read() -> StoredPage | None:
            columns = (
                "kind",
                "content_hash",
                "text",
                "screenshot",
                *self._screenshot_hash_column(),
            )
            row = self._page_row(url, columns)
            if row is None or row["text"] is None:
                return None
            text = str(row["text"])
            shot: bytes | None = row["screenshot"] or None
            return StoredPage(
                text=text,
                text_hash=_stored_text_hash(row, True) or sha256_text(text),
                screenshot=base64.b64encode(shot).decode("ascii") if shot else None,
                screenshot_hash=(row.get("screenshot_hash") or sha256_bytes(shot))
                if shot
                else None,
            )

        return self._recently(("page", url), read)

    def _screenshot_hash_column(self) -> list[str]:
        """["screenshot_hash"] when the table has that column (an older store read-only
        may not), else []."""
        with self._guard():
            return self._stored_column("screenshot_hash")

    def screenshot(self, url: str) -> str | None:
        """The page's screenshot as base64 JPEG; None for PDFs, failures and missing pages."""

        def encoded() -> str | None:
            shot = self._content(url, "screenshot")
            return base64.b64encode(shot).decode("ascii") if shot else None

        return self._recently(("screenshot", url), encoded)

    def pdf(self, url: str) -> bytes | None:
        """The PDF bytes as served; None when the URL is not a stored PDF."""
        return self._content(url, "pdf")

    def has_page(self, url: str) -> bool:
        """Whether reads of `url` serve a page (not a failure, with something to judge and no
        wall: `_served`), stored under this spelling or another of the same page; if not,
        capture it (again)."""
        try:
            return self._page_row(url, ()) is not None
        except InfraError:  # a failure on our side: no page
            return False

    def near_misses(self, url: str, limit: int = 3) -> list[str]:
        """Up to `limit` URLs of stored pages reads serve that `url` nearly names
        (`toolkit.urls.near_page_key`) without being another spelling of them: a hint for a
        cited page the store misses, never a page served for it."""
        near = near_page_key(url)
        if not near:
            return []
        # A stored page's key starts with the near key but for the case of its path (which
        # LIKE ignores): SQLite narrows the candidates, so a store holding thousands of
        # pages of one site costs no key computed per page for each missing URL.
        prefix = "https://" + near
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._guard():
            rows = self._db.execute(
                "SELECT url FROM pages WHERE status = 'ok' AND match_key LIKE ? ESCAPE '\\'"
                " ORDER BY rowid",
                (escaped + "%",),
            ).fetchall()
        close = [u for (u,) in rows if near_page_key(u) == near and not same_page(u, url)]
        return [u for u in close if self.has_page(u)][:limit]

    def records(
        self, status: Literal["ok", "failed"] | None = None, *, raw: bool = False
    ) -> list[PageRecord]:
        """Every record (without screenshot and PDF bytes) as `lookup` gives it, oldest row
        first: a stored page reads do not serve (a wall, or nothing to judge) is its failure,
        so `ok` lists the pages reads serve. `raw`: the rows as stored, to inspect."""
        with self._guard():
            columns = (
                *(c for c in _COLUMNS if c not in _BLOBS),
                *self._added_columns(),
            )
            selected = columns if raw else (*columns, JUDGEABLE)
            query = f"SELECT {', '.join(selected)} FROM pages"
            params: tuple[str, ...] = ()
            if status is not None and (raw or status == "ok"):  # a page may read as a failure
                query, params = query + " WHERE status = ?", (status,)
            rows = self._db.execute(query + " ORDER BY rowid", params).fetchall()
        stored = [dict(zip(selected, r, strict=True)) for r in rows]
        if raw:
            return [PageRecord.model_validate(row) for row in stored]
        read = [_as_read(row) for row in stored]
        return [r for r in read if status is None or r.status == status]

    def counts(self) -> dict[str, int]:
        """What reads serve: pages (`ok`) and failures (`failed`), which include the stored
        pages reads do not serve (`not_served`: a wall, or nothing to judge; `cache-pages`
        captures them again), as `lookup` and `records` give them. `ok` + `failed` is the
        number of rows. No long text is read (`_wall_text`)."""
        columns = (JUDGEABLE, *WALL_COLUMNS)
        with self._snapshot():
            (failed,) = self._db.execute(
                "SELECT COUNT(*) FROM pages WHERE status = 'failed'"
            ).fetchone()
            rows = self._db.execute(
                f"SELECT {', '.join(columns)} FROM pages WHERE status = 'ok'"
            ).fetchall()
            pages = [dict(zip(columns, row, strict=True)) for row in rows]
            served = sum(
                _served(page, self._wall_text(page), self._recorded_link(page)) for page in pages
            )
        not_served = len(pages) - served
        return {"ok": served, "failed": failed + not_served, "not_served": not_served}

    def recheck(self) -> Recheck:
        """The stored pages reads refuse under today's rules (`_not_served`: a wall, or nothing
        to judge), each as the failure `lookup` gives, oldest row first, and how many pages
        reads serve were stored before a rule reading the live page (`stored_walls`): what
        `cache-pages --recheck` lists. No long text is read (`_wall_text`)."""
        columns = (
            *(c for c in _COLUMNS if c not in (*_BLOBS, "text")),
            *self._added_columns(),
            JUDGEABLE,
            *(c for c in WALL_COLUMNS if c not in _COLUMNS),
        )
        refused: list[PageRecord] = []
        unchecked = 0
        with self._snapshot():
            rows = self._db.execute(
                f"SELECT {', '.join(columns)} FROM pages WHERE status = 'ok' ORDER BY rowid"
            ).fetchall()
            for values in rows:
                row = dict(zip(columns, values, strict=True))
                why = _not_served(row, self._wall_text(row), self._recorded_link(row))
                if why is None:
                    unchecked += row["kind"] == "web" and needs_check(row["version"])
                    continue
                refused.append(_as_failure(PageRecord.model_validate(row), why))
        return Recheck(refused, unchecked)

    # -- writing ----------------------------------------------------------------------------

    def put(self, record: PageRecord) -> bool:
        """Store `record`; returns False when it is a failure and a page that reads serve is
        already stored (under this spelling or another of the same page).

        A page replaces whatever was there. A failure replaces an earlier failure (counting
        the attempt) but never a stored page that reads serve, which stays what readers see;
        nor is it stored beside one stored under another spelling, which readers see instead.
        A stored page reads never serve (`_served`: a wall, or nothing to judge) is known
        wrong: either replaces it, under any spelling of the page.
        """
        if self.readonly:
            raise PermissionError(f"page store {self.path} was opened read-only")
        values = record.model_dump()
        if record.kind == "web" and record.text is not None:
            values["content_hash"] = content_hash(record.text)  # what `text_hash` serves
        values["url"] = canonical_url(record.url)
        values["match_key"] = normalize_url(values["url"])
        values["fetched_at"] = record.fetched_at.isoformat()
        values["screenshot_hash"] = sha256_bytes(record.screenshot) if record.screenshot else None
        with self._guard(), self._db:
            self._db.execute("BEGIN IMMEDIATE")  # what is read here is what is replaced
            served, unserved = self._stored_pages(values["url"], values["match_key"])
            if record.status == "failed" and served:
                return False
            self._db.executemany("DELETE FROM pages WHERE url = ?", [(u,) for u in unserved])
            if record.status == "failed":
                previous = self._db.execute(
                    "SELECT attempts FROM pages WHERE url = ? AND status = 'failed'",
                    (values["url"],),
                ).fetchone()
                if previous:
                    values["attempts"] = previous[0] + 1
            placeholders = ", ".join("?" for _ in _STORED)
            self._db.execute(
                f"INSERT OR REPLACE INTO pages ({', '.join(_STORED)}) VALUES ({placeholders})",
                tuple(values[c] for c in _STORED),
            )
        return True

    def _stored_pages(self, url: str, match_key: str) -> tuple[bool, list[str]]:
        """Of the pages stored for `url` or another spelling of it (`match_key`): whether reads
        serve one, and the URLs of those they never serve (`_served`)."""
        columns = ("url", JUDGEABLE, *WALL_COLUMNS)
        rows = self._db.execute(
            f"SELECT {', '.join(columns)} FROM pages"
            " WHERE (url = ? OR match_key = ?) AND status = 'ok'",
            (url, match_key),
        ).fetchall()
        pages = [dict(zip(columns, row, strict=True)) for row in rows]
        unserved = [
            p["url"] for p in pages if not _served(p, self._wall_text(p), self._recorded_link(p))
        ]
        return len(unserved) < len(pages), unserved
