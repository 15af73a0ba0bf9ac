"""URLs as agents cite them: the one notion of "the same page", and citation extraction.

Two forms, both built from the same parse (`_web_parts`, which unwraps Markdown links,
`<url>`, quotes, emphasis and trailing punctuation and reads a bare `example.com/page` as
https):
- `canonical_url`: the address to fetch and the page store's primary key; only the spelling
  is normalized (scheme and host case, default port, an anchor fragment, empty path).
- `normalize_url`: the same-page key; two URLs with equal keys show the same page
  (http = https, a punycode host = its Unicode name, no "www."/"m.", no tracking parameters,
  sorted query, no trailing slash; an encoded slash stays one, `a%2Fb` ≠ `a/b`).
Trailing punctuation is a URL's own when something delimits it (a Markdown link's target,
an `<autolink>`, `whole=True`): `/wiki/Oklahoma!` is the musical, `/wiki/Oklahoma` the
state. Only a URL glued into prose loses it, and the page store reads a judge's source
both ways, whole first (`url_spellings`).
Both keep a fragment that is a single-page app's hash route (`#/pricing`, hashbang
`#!/about`): the route names the page the app shows, so two routes are two pages. Any other
fragment (`#top`, `#section-2`, `#:~:text=`) is a place within the page and is dropped.
The page store's fallback lookup, `checks.same_url` and the Evaluator's de-duplication of
a judge's cited sources all use `normalize_url` (through `same_page`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_PORTS",
    "Citation",
    "canonical_url",
    "citations",
    "extract_urls",
    "is_web_url",
    "near_page_key",
    "normalize_url",
    "page_url",
    "same_page",
    "unicode_host",
    "url_spellings",
    "web_host",
]

DEFAULT_PORTS = {"http": 80, "https": 443}
_SPACE = re.compile(r"\s")

# Characters agents glue around a URL in prose or Markdown.
_WRAPPERS = {
    "<": ">",
    "(": ")",
    "[": "]",
    "{": "}",
    '"': '"',
    "'": "'",
    "`": "`",
    "“": "”",
    "‘": "’",
    "«": "»",
    "‹": "›",
}
_TRAILING_PUNCT = ".,;:!?*_~'\"`”’»›…\u200b"
_BRACKET_PAIRS = {")": "(", "]": "[", "}": "{", ">": "<"}
# Full-width punctuation that ends a URL in CJK prose.
_CJK_STOPS = "，。、；：！？（）「」『』《》【】"
# Typographic quotes, guillemets, the ellipsis and the zero-width space that end a URL in
# prose; `’` followed by a letter is an apostrophe inside it ("Ender’s_Game").
_PROSE_STOPS = "“”‘’«»‹›…\u200b"
_AUTHORITY_BACKSLASH = re.compile(r"^(https?://[^/?#\\]*)\\", re.IGNORECASE)
_MARKDOWN_ESCAPE = re.compile(r"\\([_*\[\]()~`#.!-])")
_MARKDOWN_WHOLE = re.compile(r"^\[[^\]]*\]\(\s*<?([^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?\s*\)$")
_MARKDOWN_LINK = re.compile(
    r"\[(?P<label>[^\]]*)\]\(\s*<?(?P<url>https?://[^()\s>]+(?:\([^()\s]*\)[^()\s>]*)*)>?"
    r'(?:\s+"[^"]*")?\s*\)',
    re.IGNORECASE,
)
_AUTOLINK = re.compile(r"<(?P<url>https?://[^<>\s]+)>", re.IGNORECASE)
# "example.com/page", "www.example.com" or "localhost:3000/x": a host, then a path, query or nothing.
_SCHEMELESS_HOST = re.compile(
    r"^(?:localhost|(?:[a-z0-9-]+\.)+[a-z]{2,})(?::\d+)?(?:[/?#]|$)", re.IGNORECASE
)
# A comma, semicolon, bar or dash right before another URL separates two citations glued
# together ("https://a.com/x,https://b.com/y"); elsewhere they may be part of a URL (an en
# dash in a Wikipedia title).
_GLUED = r"(?![,;|\u2013\u2014]https?://)"
_BARE_URL = re.compile(
    rf"https?://(?:{_GLUED}(?:[^\s<>\"'`{_CJK_STOPS}{_PROSE_STOPS}]|’(?=\w)))+", re.IGNORECASE
)
# Characters a route's key keeps as they are: a path's, and a query's within the route.
_ROUTE_SAFE = "/:@!$&'()*+,;=~-._?"
# An encoded slash is part of a path segment ("a%2Fb", one name), not a separator: many
# servers (GitLab's API, Apache by default) answer `a%2Fb` and `a/b` differently.
_ENCODED_SLASH = re.compile("%2F", re.IGNORECASE)
_TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_ga"}
)


def _strip_wrappers(text: str) -> str:
    """Remove surrounding quotes/brackets/emphasis and trailing punctuation, keeping balanced
    ones; inside `<...>` nothing more (`<https://x.org/Oklahoma!>` ends with its `!`)."""
    previous = None
    while text != previous:
        previous = text
        text = text.strip().strip("*_\u200b")
        if len(text) >= 2 and text[0] == "<" and text[-1] == ">":
            return text[1:-1].strip()  # an autolink spells its URL out whole
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


def _unwrap(url: str, whole: bool = False) -> str:
    """The URL inside a Markdown link, angle brackets, quotes or emphasis, unescaped (Markdown
    escapes, and `&amp;`, which HTML-escaped text puts where a URL has `&`). A Markdown link's
    target, an `<autolink>` and a `whole` string are the URL to its last character: only a
    URL glued into prose may end with the prose's punctuation."""
    text = url.strip().replace("&amp;", "&")
    if not whole:
        markdown = _MARKDOWN_WHOLE.match(text)
        text = markdown.group(1) if markdown else _strip_wrappers(text)
    return _MARKDOWN_ESCAPE.sub(r"\1", text)


def _web_parts(url: object, whole: bool = False) -> SplitResult | None:
    """The parts of an http(s) URL with a host, or None when `url` is not one."""
    return _parse_web_url(url, whole) if isinstance(url, str) else None


@lru_cache(maxsize=4096)
def _parse_web_url(url: str, whole: bool) -> SplitResult | None:
    # Cached: an evaluation looks up the same cited URLs again and again (page text,
    # screenshot, each extraction and verification), and parsing is pure.
    text = _unwrap(url, whole)
    if not text or _SPACE.search(text):
        return None
    if text.startswith("//"):
        text = "https:" + text
    elif _SCHEMELESS_HOST.match(text):
        text = "https://" + text
    # Browsers end an http(s) host at a backslash as at a slash: "https://evil.com\@good.com/"
    # opens evil.com, where urlsplit would read "evil.com\" as user info and good.com as host.
    text = _AUTHORITY_BACKSLASH.sub(r"\1/", text, count=1)
    try:
        parts = urlsplit(text)
        _ = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts


def _route(parts: SplitResult) -> str:
    """The fragment when it is a hash route (`/pricing`, `!/about`): it names the page an app
    shows. "" for an anchor within the page (`top`), which shows the same page; an anchor
    within the route's page (`/pricing#faq`) is dropped from it likewise."""
    fragment = parts.fragment
    return fragment.partition("#")[0] if fragment[:1] in ("/", "!") else ""


def _netloc(host: str, port: int | None, scheme: str) -> str:
    if ":" in host:
        host = f"[{host}]"
    return host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"


def canonical_url(url: str, *, whole: bool = False) -> str:
    """The address to fetch and the page store's key: decorations stripped, scheme and host
    lower-cased, default port and an anchor (`#top`) dropped, `/` for an empty path.

    Keeps what could make a different page on some server (http vs https, "www.", the query
    as written) or in the browser (a hash route, `#/pricing` or `#!/about`, as written). A
    string that is not an http(s) URL comes back unwrapped and stripped only.
    Trailing punctuation is prose's (dropped) unless the URL is spelled out whole: a Markdown
    link's target, an `<autolink>`, or any string with `whole`. A last character kept that
    way is percent-encoded (`/wiki/Oklahoma!` → `/wiki/Oklahoma%21`), so the canonical URL
    reads back as itself wherever it is canonicalized again.
    """
    parts = _web_parts(url, whole)
    if parts is None:
        return _unwrap(url, whole)
    scheme = parts.scheme.lower()
    netloc = _netloc((parts.hostname or "").lower(), parts.port, scheme)
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        netloc = f"{userinfo}@{netloc}"
    return _kept_whole(urlunsplit((scheme, netloc, parts.path or "/", parts.query, _route(parts))))


def _kept_whole(url: str) -> str:
    """`url` with its last character percent-encoded when reading it as prose would drop it
    as punctuation; servers decode `%21` as `!`, so it is the same address."""
    if _strip_wrappers(url) == url:
        return url
    return url[:-1] + "".join(f"%{byte:02X}" for byte in url[-1].encode("utf-8"))


def url_spellings(url: str) -> list[str]:
    """The canonical URLs `url` may name, most literal first: the string taken whole (its
    last `!` or `.` part of the URL), then read as prose (`canonical_url`). A judge's source
    is a URL it copied from the answer, where a Markdown link may have spelled it out whole."""
    spellings = [canonical_url(url, whole=True), canonical_url(url)]
    return [s for s in dict.fromkeys(spellings) if is_web_url(s)]


def web_host(url: object, *, as_written: bool = False) -> str | None:
    """The lower-case host of an http(s) URL without dots at either end, and without a
    leading "www."/"m." unless `as_written`."""
    parts = _web_parts(url)
    return None if parts is None else _clean_host(unquote(parts.hostname or ""), as_written)


def unicode_host(host: str) -> str:
    """`host` as browsers show it: each punycode label (`xn--bcher-kva`) decoded (`bücher`),
    the name in NFC, lower-case. An agent cites either form of one name and the capture stored
    one. Decoded only, never mapped as IDNA 2003 would (`straße` → `strasse`, another domain
    under IDNA 2008, which browsers resolve); a label that does not decode stays as written."""
    name = ".".join(_decoded_label(label) for label in host.split("."))
    return unicodedata.normalize("NFC", name).lower()


def _decoded_label(label: str) -> str:
    if label[:4].lower() != "xn--":
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        return label


def _clean_host(host: str, as_written: bool = False) -> str:
    host = host.lower().lstrip("*").strip(".")
    for prefix in () if as_written else ("www.", "m."):
        if host.startswith(prefix) and host.count(".") >= 2:
            host = host[len(prefix) :]
    return host


def normalize_url(url: str | None) -> str:
    """A comparison key for `url`: two URLs with the same key show the same page.

    Lower-cases scheme and host, treats http as https, reads a punycode host as the name it
    encodes ("xn--bcher-kva.de" = "bücher.de"), drops "www." and "m." prefixes,
    default ports, user info, an anchor (`#top`), a trailing slash, tracking parameters
    (utm_*, fbclid, gclid, ...) and surrounding punctuation or angle brackets; sorts the query
    parameters and normalises percent-encoding ("Caf%C3%A9" = "Café"). A URL without a
    scheme ("example.com/a") is read as https. Path case is kept ("/Page" ≠ "/page").
    A hash route is kept, read like a path (encoding normalised, no trailing slash), so
    `#/pricing` and `#/about` are two pages and the root route (`#/`, `#!/`) is the app's
    home page.

    Example: "HTTP://www.Example.com:80/a/b/?utm_source=x&z=1&a=2#top" →
    "https://example.com/a/b?a=2&z=1". Returns "" for None, non-http(s) schemes
    ("mailto:...") and text that is not a URL.
    """
    parts = _web_parts(url)
    if parts is None:
        return ""
    host = _clean_host(unicode_host(unquote(parts.hostname or "")))
    netloc = _netloc(host, parts.port, parts.scheme.lower())
    path = "%2F".join(
        quote(unquote(piece), safe="/:@!$&'()*+,;=~-._")
        for piece in _ENCODED_SLASH.split(parts.path)
    )
    path = re.sub(r"/{2,}", "/", path).rstrip("/")
    query = sorted(
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if not key.lower().startswith("utm_") and key.lower() not in _TRACKING_PARAMS
    )
    route = _route(parts)
    if route:
        route = quote(unquote(route), safe=_ROUTE_SAFE).rstrip("/")
        route = "" if route == "!" else route
    return urlunsplit(("https", netloc, path, urlencode(query, quote_via=quote), route))


def near_page_key(url: str | None) -> str:
    """A looser key than `normalize_url`, for hints only and never to serve a page: host and
    path, the path lower-cased and without the punctuation prose leaves at its end, no query
    or fragment. A cited URL the page store misses whose key a stored page shares was likely
    written in another spelling (`/wiki/ada_lovelace` for `/wiki/Ada_Lovelace`), or names a
    sibling page (`?id=3` for `?id=2`): the user decides which. "" when `url` is no URL."""
    key = normalize_url(url)
    if not key:
        return ""
    parts = urlsplit(key)
    return f"{parts.netloc}{parts.path.lower().rstrip(_TRAILING_PUNCT)}"


def same_page(a: str | None, b: str | None) -> bool:
    """True when `a` and `b` are both URLs with the same `normalize_url` key."""
    key = normalize_url(a)
    return bool(key) and key == normalize_url(b)


def page_url(url: object, call: str = "ev.pages.get") -> str:
    """`url` as a judge named it to its page source's `call`, a string: anything else (None
    from an extraction that found no URL) is the judge's bug, a `TypeError` raised to it, the
    same in process and sandboxed; never a page that is missing, nor the store's failure."""
    if isinstance(url, str):
        return url
    shown = repr(url) if len(repr(url)) <= 80 else f"a {type(url).__name__}"
    raise TypeError(
        f"{call}(url) takes the page's URL as a string, got {shown}: check that the judge "
        "found a URL (e.g. its extraction's field is not None) before reading its page"
    )


def is_web_url(url: str) -> bool:
    """Whether `url` (possibly decorated) is an http(s) URL with a host."""
    return _web_parts(url) is not None


class Citation(NamedTuple):
    """Where one URL is cited in a text, as character offsets (`citations`)."""

    start: int
    """The URL's first character as written."""
    end: int
    """One past its last; a bare URL's trailing prose punctuation is the prose's, left out."""
    outer_start: int
    """The whole citation's first character: a Markdown link's `[`, an autolink's `<`, or
    `start` for a bare URL."""
    outer_end: int
    """One past the whole citation's last character."""
    label: str
    """A Markdown link's label ("" otherwise): what remains when the citation is removed."""


def _cited(text: str) -> list[tuple[re.Match[str], bool]]:
    """Each citation's match in `text` (offsets are `text`'s), in order, and whether it
    spells its URL out whole: Markdown links and autolinks, then bare URLs outside them."""
    found: list[tuple[re.Match[str], bool]] = []
    masked = list(text)
    for pattern in (_MARKDOWN_LINK, _AUTOLINK):
        for match in pattern.finditer("".join(masked)):
            found.append((match, True))
            masked[match.start() : match.end()] = " " * (match.end() - match.start())
    found += [(match, False) for match in _BARE_URL.finditer("".join(masked))]
    return sorted(found, key=lambda item: item[0].start())


def citations(text: str) -> list[Citation]:
    """Every http(s) URL cited in `text` where it is written, in order, each occurrence: the
    spans `extract_urls` reads, so text changed outside them cites the same pages."""
    found = []
    for match, whole in _cited(text):
        if whole:
            start, end = match.span("url")
            label = match.groupdict().get("label") or ""
            found.append(Citation(start, end, match.start(), match.end(), label))
            continue
        raw, start = match.group(0), match.start()
        kept = _strip_wrappers(raw)
        end = start + len(kept) if kept and raw.startswith(kept) else match.end()
        found.append(Citation(start, end, start, end, ""))
    return found


def extract_urls(text: str) -> list[str]:
    """Every http(s) URL cited in `text` (Markdown link targets and bare URLs), canonical.

    In order of first appearance, one per page (`normalize_url`), each in the spelling it
    was first cited with. A Markdown link counts by its target; its label is not read as a
    second citation.
    """
    urls: dict[str, str] = {}
    for match, whole in _cited(text):
        url = canonical_url(match.group("url") if whole else match.group(0), whole=whole)
        key = normalize_url(url)
        if key:
            urls.setdefault(key, url)
    return list(urls.values())
