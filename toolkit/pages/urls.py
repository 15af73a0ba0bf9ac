"""URL normalization and citation extraction: the one definition of "the same page".

Every key in the page store is `normalize_url(url)`, so a URL cited in an answer, a URL a
judge passes to `verify`, and a URL captured by `cache-pages` meet at the same row however
the agent decorated it. `match_key` is a looser form, used only as a lookup fallback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}

# Characters agents glue around a URL in prose or Markdown.
_WRAPPERS = {"<": ">", "(": ")", "[": "]", "{": "}", '"': '"', "'": "'", "`": "`"}
_TRAILING_PUNCT = ".,;:!?*_~'\"`"
_BRACKET_PAIRS = {")": "(", "]": "[", "}": "{", ">": "<"}
# Full-width punctuation that ends a URL in CJK prose.
_CJK_STOPS = "，。、；：！？（）「」『』《》【】"
_MARKDOWN_ESCAPE = re.compile(r"\\([_*\[\]()~`#.!-])")
_MARKDOWN_WHOLE = re.compile(r"^\[[^\]]*\]\(\s*<?([^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?\s*\)$")
_MARKDOWN_LINK = re.compile(
    r"\[(?P<label>[^\]]*)\]\(\s*<?(?P<url>https?://[^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?"
    r'(?:\s+"[^"]*")?\s*\)',
    re.IGNORECASE,
)
# "example.com/page" or "www.example.com": a host with a dot, then a path, query or nothing.
_SCHEMELESS_HOST = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?(?:[/?]|$)", re.IGNORECASE)
_BARE_URL = re.compile(rf"https?://[^\s<>\"'`{_CJK_STOPS}]+", re.IGNORECASE)


def _strip_wrappers(text: str) -> str:
    """Remove surrounding quotes/brackets/emphasis and trailing punctuation, keeping balanced ones."""
    previous = None
    while text != previous:
        previous = text
        text = text.strip().strip("*_")
        if len(text) >= 2 and _WRAPPERS.get(text[0]) == text[-1]:
            text = text[1:-1]
        elif text and text[0] in _WRAPPERS and _WRAPPERS[text[0]] not in text[1:]:
            text = text[1:]
        while text and text[-1] in _TRAILING_PUNCT:
            text = text[:-1]
        while text and text[-1] in _BRACKET_PAIRS:
            opener = _BRACKET_PAIRS[text[-1]]
            if text.count(opener) >= text.count(text[-1]):
                break
            text = text[:-1]
    return text


def normalize_url(url: str) -> str:
    """The store key of a cited URL: decorations stripped, scheme/host lowercased, no fragment.

    Also drops default ports and Markdown escapes, adds `/` for an empty path, reads a bare
    host (`example.com/page`) as https, and keeps the query as written. A string that is not
    an http(s) URL comes back only stripped.
    """
    text = url.strip()
    whole = _MARKDOWN_WHOLE.match(text)
    if whole:
        text = whole.group(1)
    text = _MARKDOWN_ESCAPE.sub(r"\1", _strip_wrappers(text))
    if text.startswith("//"):
        text = "https:" + text
    elif _SCHEMELESS_HOST.match(text):
        text = "https://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return text
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}" if userinfo else host
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def is_web_url(url: str) -> bool:
    """Whether `url` normalizes to an http(s) URL with a host."""
    parts = urlsplit(normalize_url(url))
    return parts.scheme in DEFAULT_PORTS and bool(parts.netloc)


def match_key(url: str) -> str:
    """A looser form for fallback lookups: decoded, https, no `www.`, no utm_*, no trailing `/`.

    Two URLs with the same match key are very likely the same page as cited by different
    agents (Mind2Web 2's store accepts the same surface variants).
    """
    normalized = normalize_url(url)
    if not is_web_url(normalized):
        return normalized
    parts = urlsplit(normalized)
    host = parts.netloc.removeprefix("www.")
    query = "&".join(p for p in parts.query.split("&") if p and not p.lower().startswith("utm_"))
    path = unquote(parts.path)
    if path.endswith("/"):
        path = path[:-1]
    return urlunsplit(("https", host, path, unquote(query), ""))


def extract_urls(text: str) -> list[str]:
    """Every http(s) URL cited in `text` (Markdown link targets and bare URLs), normalized.

    In order of first appearance, without duplicates. A Markdown link counts by its target;
    its label is not read as a second citation.
    """
    found: list[tuple[int, str]] = []
    masked = list(text)
    for match in _MARKDOWN_LINK.finditer(text):
        found.append((match.start(), match.group("url")))
        masked[match.start() : match.end()] = " " * (match.end() - match.start())
    for match in _BARE_URL.finditer("".join(masked)):
        found.append((match.start(), match.group(0)))
    urls: dict[str, None] = {}
    for _, raw in sorted(found, key=lambda item: item[0]):
        url = normalize_url(raw)
        if is_web_url(url):
            urls.setdefault(url, None)
    return list(urls)


def answer_files(root: Path) -> list[Path]:
    """The answer files under `root`: `<agent>/<task_id>/*.md` or a flat folder of `.md` files."""
    if root.is_file():
        return [root]
    return sorted(path for path in root.rglob("*.md") if path.is_file())


def cited_urls(files: Iterable[Path]) -> dict[str, list[Path]]:
    """Each URL cited in `files` (normalized, first-seen order) with the files that cite it."""
    citations: dict[str, list[Path]] = {}
    for path in files:
        for url in extract_urls(path.read_text(encoding="utf-8", errors="replace")):
            citations.setdefault(url, []).append(path)
    return citations
