"""Importing a Mind2Web 2 page cache (`<root>/<agent>/<task>/index.json` + files) into a store.

Their layout: `index.json` maps each page's storage key (its URL with the fragment dropped,
percent-decoded, one trailing slash removed) to "web" or "pdf"; the page's files are named
by the hex MD5 of that key: `<md5>.txt` + `<md5>.jpg` for a web page, `<md5>.pdf` for a PDF.
A newer `failures.json` (storage key -> {"reason", ...}) lists failed captures; they become
failure records. A key is not a URL: it is re-encoded (`m2w2_address`) before it is stored.
Dropping the fragment files a single-page app's hash route (`#/pricing`) under the app's
address, another page in the store (`toolkit.urls`): it is imported under that address, so a
read of the route finds it missing (`cache-pages` captures it) rather than another page's
text. Entries of an older cache keyed by URL whose routes share one file are reported.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urldefrag

from pydantic import BaseModel

from toolkit.pages.pdf import PdfTextError, pdf_text
from toolkit.pages.store import PageRecord, PageStore
from toolkit.pages.stored_walls import text_wall
from toolkit.pages.walls import bot_check
from toolkit.urls import canonical_url, is_web_url, normalize_url

IMPORT_REPORT_VERSION = 1


def m2w2_storage_key(url: str) -> str:
    """The key Mind2Web 2 stores `url` under: no fragment, percent-decoded, one `/` less."""
    decoded = unquote(urldefrag(url)[0])
    if decoded.endswith("/") and len(decoded) > 1 and not decoded.endswith("://"):
        decoded = decoded[:-1]
    return decoded


# What percent-decoding produced that is never literal in a URL: whitespace, controls and
# the characters RFC 3986 excludes. Non-ASCII stays as is (stores keep it, as before).
_NOT_IN_URLS = re.compile(r'[\x00-\x20\x7f"<>\\^`{|}]')
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def m2w2_address(key: str) -> str:
    """The URL Mind2Web 2 fetched the page stored under storage key `key`, re-encoded.

    A decoded `%23` is a `#` that would cut the path at a fragment (C# filed as C), and a
    decoded `%20` a space that is no URL, so what decoding produced that cannot stand in a
    URL is encoded again; a key with a `#` or a `%xx` is re-encoded as Mind2Web 2's own
    `_address` does. A trailing `/` is kept as written: a key spelled as a URL ("/downloads/")
    stays that URL. Characters that are also URL structure (`+`, `&`, `=`, `?`, `/`) stay: a
    decoded `%2B` cannot be told from a literal `+` (a form-encoded space, as in
    `?q=new+york`), and keeping them keeps the far more common literal spelling right.
    """
    url = key
    if "#" in key or _ESCAPE.search(key):
        url = key.replace("%", "%25").replace("#", "%23") + ("/" if key.endswith("/") else "")
    return _NOT_IN_URLS.sub(lambda match: quote(match.group(0), safe=""), url)


def m2w2_file_stem(url: str) -> str:
    """The file name (without extension) of `url`'s cached files: MD5 hex of its storage key."""
    return hashlib.md5(m2w2_storage_key(url).encode("utf-8")).hexdigest()


class ImportProblem(BaseModel):
    """An index entry (or a whole index) that could not be imported, and why."""

    task_dir: str
    url: str | None = None
    reason: str


class ImportReport(BaseModel):
    """The result of `import_m2w2`, as `cache-pages --import-m2w2 --json` prints it."""

    version: int = IMPORT_REPORT_VERSION
    source: str
    store: str
    tasks: int = 0
    imported: int = 0
    """Pages (web or PDF) written to the store."""
    already_stored: int = 0
    """Entries whose URL already had a stored page (another agent or task cited it too)."""
    failures_imported: int = 0
    """Failure records taken from `failures.json` (never over a stored page)."""
    problems: list[ImportProblem] = []


def _stems(key: str) -> list[str]:
    """Candidate stems: MD5 of the key as written, then of its storage key (older writers)."""
    direct = hashlib.md5(key.encode("utf-8")).hexdigest()
    return list(dict.fromkeys([direct, m2w2_file_stem(key)]))


def _has_files(task_dir: Path, stem: str) -> bool:
    return any((task_dir / f"{stem}{ext}").is_file() for ext in (".txt", ".pdf"))


def _entry_url(task_dir: Path, key: str) -> str:
    """The URL of an index entry: its key re-encoded, or the key itself when the entry's
    files are named by the MD5 of the key's storage key (an older writer keyed by URL);
    taken whole, as Mind2Web 2 fetched it (a last `!` is the URL's, not punctuation)."""
    direct, older = hashlib.md5(key.encode("utf-8")).hexdigest(), m2w2_file_stem(key)
    if older != direct and not _has_files(task_dir, direct) and _has_files(task_dir, older):
        return canonical_url(key, whole=True)
    return canonical_url(m2w2_address(key), whole=True)


def _shared_files(task_dir: Path, urls: dict[str, str]) -> dict[str, str]:
    """The index keys (of `urls`: key -> its entry's URL) whose files an entry of another page
    reads too, each with that page's URL. An older writer, keyed by URL, named the files by
    the URL without its fragment, so an app's hash routes (`#/pricing`, `#/about`) and its
    home page share one file: which of them it holds is unknown."""
    stems: dict[str, str] = {}
    pages: dict[str, dict[str, str]] = {}  # stem -> same-page key -> URL
    for key, url in urls.items():
        stem = next((s for s in _stems(key) if _has_files(task_dir, s)), None)
        if stem is not None:
            stems[key] = stem
            pages.setdefault(stem, {}).setdefault(normalize_url(url), url)
    shared: dict[str, str] = {}
    for key, stem in stems.items():
        others = [url for page, url in pages[stem].items() if page != normalize_url(urls[key])]
        if others:
            shared[key] = others[0]
    return shared


def _fetched_at(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def _find(task_dir: Path, key: str, extension: str) -> Path | None:
    for stem in _stems(key):
        candidate = task_dir / f"{stem}{extension}"
        if candidate.is_file():
            return candidate
    return None


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _page_record(task_dir: Path, key: str, url: str, content_type: Any) -> PageRecord:
    """The record for the index entry `key` fetched from `url`; raises ValueError saying why
    it cannot be imported."""
    if not is_web_url(url):
        raise ValueError("not an http(s) URL")
    if content_type == "web":
        text_file = _find(task_dir, key, ".txt")
        if text_file is None:
            raise ValueError(f"text file {m2w2_file_stem(key)}.txt is missing")
        shot = text_file.with_suffix(".jpg")
        text = text_file.read_text(encoding="utf-8", errors="replace")
        challenge = bot_check(text)
        if challenge is not None:
            raise ValueError(f"the cached text is a bot check, not the page ('{challenge}')")
        wall = text_wall(url, text)  # no capture of ours read the page: its text is tested
        if wall is not None:
            raise ValueError(f"the cached text is not the page ({wall.kind}): {wall.reason}")
        if not text.strip() and not shot.is_file():  # reads would never serve it
            raise ValueError(
                "the cached text is empty and there is no screenshot: nothing to judge"
            )
        return PageRecord.web(
            url,
            text,
            shot.read_bytes() if shot.is_file() else None,
            origin="m2w2",
            fetched_at=_fetched_at(text_file),
        )
    if content_type == "pdf":
        pdf_file = _find(task_dir, key, ".pdf")
        if pdf_file is None:
            raise ValueError(f"PDF file {m2w2_file_stem(key)}.pdf is missing")
        data = pdf_file.read_bytes()
        try:
            text = pdf_text(data)
        except PdfTextError as exc:
            raise ValueError(str(exc)) from exc
        return PageRecord.pdf_document(
            url, data, text, origin="m2w2", fetched_at=_fetched_at(pdf_file)
        )
    raise ValueError(f"unknown content type {content_type!r} (expected 'web' or 'pdf')")


def _import_task(task_dir: Path, store: PageStore, report: ImportReport, refresh: bool) -> None:
    where = str(task_dir)
    try:
        index = _read_json(task_dir / "index.json")
    except (OSError, ValueError) as exc:
        report.problems.append(ImportProblem(task_dir=where, reason=f"index.json: {exc}"))
        return
    urls = {key: _entry_url(task_dir, key) for key in index}
    shared = _shared_files(task_dir, urls)
    for key, content_type in index.items():
        url = urls[key]
        if not refresh and store.has_page(url):
            report.already_stored += 1
            continue
        if key in shared:
            reason = (
                f"its files are also {shared[key]}'s (named by the URL without its #fragment): "
                "which page they hold is unknown; capture it with `judgegen cache-pages`"
            )
            report.problems.append(ImportProblem(task_dir=where, url=url, reason=reason))
            continue
        try:
            record = _page_record(task_dir, key, url, content_type)
        except (OSError, ValueError) as exc:
            report.problems.append(ImportProblem(task_dir=where, url=url, reason=str(exc)))
            continue
        store.put(record)
        report.imported += 1
    _import_failures(task_dir, store, report)


def _import_failures(task_dir: Path, store: PageStore, report: ImportReport) -> None:
    path = task_dir / "failures.json"
    if not path.is_file():
        return
    try:
        failures = _read_json(path)
    except (OSError, ValueError) as exc:
        report.problems.append(ImportProblem(task_dir=str(task_dir), reason=f"{path.name}: {exc}"))
        return
    for key, entry in failures.items():
        url = canonical_url(m2w2_address(key), whole=True)
        if not is_web_url(url):
            continue
        reason = entry.get("reason") if isinstance(entry, dict) else None
        record = PageRecord.failure(
            url,
            "import",
            f"Mind2Web 2 capture failed: {reason or 'no reason given'}",
            origin="m2w2",
        )
        if store.put(record):
            report.failures_imported += 1


def import_m2w2(root: str | Path, store: PageStore, *, refresh: bool = False) -> ImportReport:
    """Import every task folder (one with an `index.json`) under `root` into `store`.

    A URL that already has a stored page (under any spelling of it: `PageStore.has_page`)
    is left alone unless `refresh`. Entries that cannot be imported (missing or unreadable
    files, unknown type) are listed in `problems`.
    """
    root = Path(root)
    report = ImportReport(source=str(root), store=str(store.path))
    for index in sorted(root.rglob("index.json")):
        report.tasks += 1
        _import_task(index.parent, store, report, refresh)
    return report
