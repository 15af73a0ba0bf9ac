"""Deterministic checks a judge can use instead of an LLM call where the check is mechanical.

Every function returns a plain value and never raises: None, empty or unparseable input gives
False (or None for the `parse_*` and `url_domain` functions, "" for `normalize_url`). Use a
check's result directly: `ev.add_custom_node(result=checks.same_date(a, b), id=..., desc=...)`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from numbers import Real
from types import MappingProxyType
from typing import Any
from urllib.parse import (
    SplitResult,
    parse_qsl,
    quote,
    unquote,
    urlencode,
    urlsplit,
    urlunsplit,
)

__all__ = [
    "contains_all",
    "contains_any",
    "normalize_url",
    "number_in_range",
    "page_contains",
    "parse_date",
    "parse_number",
    "same_date",
    "same_name",
    "same_number",
    "same_url",
    "url_domain",
    "url_in_domain",
]

# -- text folding ---------------------------------------------------------------------------

_PUNCT_FOLD = MappingProxyType(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00ad": "",
        "\u200b": "",
        "\u200c": "",
        "\u200d": "",
        "\ufeff": "",
    }
)
_PUNCT_TABLE = str.maketrans(dict(_PUNCT_FOLD))
_WHITESPACE = re.compile(r"\s+")


def _fold(text: str) -> str:
    """Case-fold, strip accents (NFKD) and unify quotes, dashes and odd spaces."""
    text = text.translate(_PUNCT_TABLE)
    if text.isascii():
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.casefold()


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    return None


# -- dates ----------------------------------------------------------------------------------

_MONTHS = MappingProxyType(
    {
        "jan": 1,
        "january": 1,
        "feb": 2,
        "february": 2,
        "mar": 3,
        "march": 3,
        "apr": 4,
        "april": 4,
        "may": 5,
        "jun": 6,
        "june": 6,
        "jul": 7,
        "july": 7,
        "aug": 8,
        "august": 8,
        "sep": 9,
        "sept": 9,
        "september": 9,
        "oct": 10,
        "october": 10,
        "nov": 11,
        "november": 11,
        "dec": 12,
        "december": 12,
    }
)
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![a-z])\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?(?![\d])"
_YEAR = r"(?P<year>\d{4})(?!\d)"
_DATE_PATTERNS = (
    # December 7, 2023 / Dec. 7th 2023 / Thursday, Dec 7, 2023
    re.compile(r"(?<![a-z])" + _MONTH + r"\s*" + _DAY + r"(?:\s*,\s*|\s+)(?:of\s+)?" + _YEAR),
    # 7 December 2023 / 7th of Dec, 2023 / 07-Dec-2023
    re.compile(r"(?<![\d])" + _DAY + r"(?:\s+of)?[\s-]*" + _MONTH + r"(?:\s*,\s*|[\s-]+)" + _YEAR),
    # 2023 Dec 7 / 2023-Dec-07
    re.compile(r"(?<![\d])" + _YEAR + r"[\s,-]+" + _MONTH + r"[\s-]*" + _DAY),
    # 2023-12-07 / 2023/12/07 / 2023.12.07 / 2023-12-07T10:00:00Z
    re.compile(
        r"(?<![\d.])(?P<year>\d{4})(?P<sep>[-/.])(?P<month>\d{1,2})(?P=sep)(?P<day>\d{1,2})(?!\d)"
    ),
)
_NUMERIC_DATE = re.compile(
    r"(?<![\d./-])(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)"
    r"(?P<year>\d{4}|(?<=/)\d{2})(?![\d]|[./-]\d)"
)


def _make_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_number(token: str) -> int:
    return int(token) if token.isdigit() else _MONTHS[token.rstrip(".")]


def _numeric_date(match: re.Match[str], dayfirst: bool) -> date | None:
    first, second = int(match["a"]), int(match["b"])
    year = int(match["year"])
    if len(match["year"]) == 2:
        year += 2000 if year < 69 else 1900
    preferred = (year, second, first) if dayfirst else (year, first, second)
    fallback = (year, first, second) if dayfirst else (year, second, first)
    return _make_date(*preferred) or _make_date(*fallback)


def parse_date(text: str | date | None, *, dayfirst: bool = False) -> date | None:
    """The first full calendar date (year, month and day) written in `text`, or None.

    Reads month-name forms ("Dec 7, 2023", "December 7th, 2023", "Dec. 7 2023", "7 Dec 2023",
    "7th of December, 2023", "07-Dec-2023", "Thursday, December 7, 2023"), ISO forms
    ("2023-12-07", "2023/12/07", "2023-12-07T10:30:00Z") and numeric forms ("12/07/2023",
    "12-07-2023", "12.07.2023", "12/07/23"). Case is ignored and the date may sit inside a
    longer sentence ("It was released on Dec 7, 2023 at noon."); the earliest date wins.

    Month-name and ISO forms are unambiguous. Numeric day/month forms are read US-style
    (month first: "12/07/2023" is December 7) unless `dayfirst=True` (then July 12); when
    only one reading is a valid date ("25/12/2023") that reading is used. Two-digit years
    are only read with slashes: 00-68 → 2000s, 69-99 → 1900s.

    Returns None for partial dates ("December 2023", "Dec 7"), impossible dates
    ("Feb 30, 2023"), None or non-text input. A `date` or `datetime` is returned as a date.
    """
    if isinstance(text, datetime):
        return text.date()
    if isinstance(text, date):
        return text
    if not isinstance(text, str) or not text:
        return None
    folded = _fold(text)
    found: list[tuple[int, int, date]] = []
    for pattern in (*_DATE_PATTERNS, _NUMERIC_DATE):
        for match in pattern.finditer(folded):
            if pattern is _NUMERIC_DATE:
                parsed = _numeric_date(match, dayfirst)
            else:
                month = _month_number(match["month"])
                parsed = _make_date(int(match["year"]), month, int(match["day"]))
            if parsed is not None:
                found.append((match.start(), -len(match[0]), parsed))
                break
    return min(found)[2] if found else None


def same_date(a: str | date | None, b: str | date | None, *, dayfirst: bool = False) -> bool:
    """True when `a` and `b` name the same calendar day, whatever their formats.

    Each side is read with `parse_date` (strings, `date` or `datetime`), so
    "Dec 7, 2023", "December 7th, 2023", "2023-12-07", "7 Dec 2023" and "12/07/2023" all
    match each other; with `dayfirst=True`, "07/12/2023" matches them instead. False when
    either side has no full date ("December 2023", "", None) or the days differ.
    """
    left, right = parse_date(a, dayfirst=dayfirst), parse_date(b, dayfirst=dayfirst)
    return left is not None and left == right


# -- numbers --------------------------------------------------------------------------------

_SCALE_WORDS = MappingProxyType(
    {
        "thousand": Decimal(10) ** 3,
        "million": Decimal(10) ** 6,
        "mln": Decimal(10) ** 6,
        "billion": Decimal(10) ** 9,
        "bn": Decimal(10) ** 9,
        "trillion": Decimal(10) ** 12,
        "tn": Decimal(10) ** 12,
    }
)
_SCALE_LETTERS = MappingProxyType(
    {
        "k": Decimal(10) ** 3,
        "K": Decimal(10) ** 3,
        "M": Decimal(10) ** 6,
        "B": Decimal(10) ** 9,
        "T": Decimal(10) ** 12,
    }
)
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-+])?(?:(?:[$€£¥₹₩]|[A-Z]{1,3}\$|[A-Z]{3})\s?)?(?P<sign2>[-+])?"
    r"(?P<num>"
    r"\d{1,3}(?:\.\d{3})+,\d+(?![\d,])"  # 1.234,56 (decimal comma)
    r"|\d+,\d{1,2}(?![\d,])"  # 3,5 (decimal comma)
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # 1234.5, 1.5e6
    r"|\.\d+"  # .5
    r")"
    r"(?:(?P<letter>[kKMBT])(?![A-Za-z])"
    r"|\s?(?P<word>(?i:thousand|million|mln|billion|bn|trillion|tn))\b)?",
)


def _decimal_of(token: str) -> Decimal | None:
    if re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d+", token) or re.fullmatch(r"\d+,\d{1,2}", token):
        token = token.replace(".", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    try:
        return Decimal(token)
    except InvalidOperation:
        return None


def parse_number(text: str | float | None) -> float | None:
    """The first number written in `text` as a float, or None when there is none.

    Understands thousands commas ("1,234,567.89" → 1234567.89), currency symbols and codes
    ("$1,200" → 1200, "€ 3.50" → 3.5, "US$5" → 5), signs ("-42", "−42", "-$5" → -5),
    percentages ("45%" → 45.0: the sign is dropped, not divided by 100), units after the
    number ("12.5 km", "300 MB" → 12.5, 300: the unit is ignored), multipliers ("1.2k" →
    1200, "3.4 million" → 3400000, "$2B" / "2 bn" → 2e9, "5M" → 5e6; lower-case "m" is a
    unit, metres, not a million), scientific notation ("1.5e6") and decimal commas
    ("1.234,56" → 1234.56, "3,5" → 3.5; a comma before exactly three digits groups
    thousands). A hyphen right after a letter or digit is not a minus sign ("COVID-19" → 19,
    "2020-2021" → 2020). Numbers written in words ("five") are not read.

    An int or float passes through (bool does not); None, NaN, infinity and text without
    digits give None.
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, Real):
        value = float(text)
        return value if math.isfinite(value) else None
    if not isinstance(text, str):
        return None
    match = _NUMBER.search(text.translate(_PUNCT_TABLE))
    if match is None:
        return None
    value_dec = _decimal_of(match["num"])
    if value_dec is None:
        return None
    if match["letter"]:
        value_dec *= _SCALE_LETTERS[match["letter"]]
    elif match["word"]:
        value_dec *= _SCALE_WORDS[match["word"].lower()]
    signs = (match["sign"] or "") + (match["sign2"] or "")
    if signs.count("-") % 2 == 1:
        value_dec = -value_dec
    value = float(value_dec)
    return value if math.isfinite(value) else None


def same_number(
    a: str | float | None, b: str | float | None, *, abs_tol: float = 0.0, rel_tol: float = 0.0
) -> bool:
    """True when `a` and `b` are the same number, within the given tolerances.

    Each side is read with `parse_number`, so "$1,200", "1.2k", "1200 USD" and 1200 all
    match. With no tolerance the numbers must be equal (up to float rounding, 1e-9
    relative). `abs_tol=0.5` accepts |a - b| <= 0.5; `rel_tol=0.05` accepts a difference up
    to 5% of the larger magnitude ("10.4 million" matches 10_000_000 with rel_tol=0.05). The
    two tolerances are alternatives: either one being met is enough. False when either side
    has no number.
    """
    left, right = parse_number(a), parse_number(b)
    if left is None or right is None:
        return False
    try:
        return math.isclose(
            left, right, rel_tol=max(float(rel_tol), 1e-9), abs_tol=max(float(abs_tol), 0.0)
        )
    except (TypeError, ValueError):
        return False


def number_in_range(
    value: str | float | None, low: str | float | None = None, high: str | float | None = None
) -> bool:
    """True when the number in `value` lies between `low` and `high`, both ends included.

    `value` is read with `parse_number` ("$1.2 million" → 1200000); so are the bounds, which
    may be numbers or text. A bound of None leaves that side open: `number_in_range(x, 0,
    None)` means x >= 0. False when `value` has no number or a given bound cannot be read.
    """
    number = parse_number(value)
    if number is None:
        return False
    for bound, below in ((low, True), (high, False)):
        if bound is None:
            continue
        limit = parse_number(bound)
        if limit is None or (number < limit if below else number > limit):
            return False
    return True


# -- person names ---------------------------------------------------------------------------

_TITLES = frozenset(
    {"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sir", "dame", "lord", "lady"}
)
_GENERATIONS = frozenset({"jr", "sr", "ii", "iii", "iv"})
_HONORIFIC_SUFFIXES = frozenset({"phd", "md", "esq", "obe", "mbe", "cbe", "kbe", "dds", "jd"})


def _name_tokens(text: str) -> tuple[list[str], str | None]:
    """Given names plus surname as tokens (surname last), and a generation suffix if any."""
    folded = re.sub(r"\([^)]*\)|\"[^\"]*\"", " ", _fold(text)).replace("'", "").replace("`", "")
    parts = [p for p in folded.split(",") if p.strip()]
    generation: str | None = None
    kept: list[list[str]] = []
    for part in parts:
        tokens = re.findall(r"[^\W\d_]+", part)
        rest = []
        for token in tokens:
            if token in _GENERATIONS:
                generation = token
            elif token not in _HONORIFIC_SUFFIXES:
                rest.append(token)
        if rest:
            kept.append(rest)
    if len(kept) == 2:
        kept = [kept[1], kept[0]]
    tokens = [token for part in kept for token in part]
    while len(tokens) > 1 and tokens[0] in _TITLES:
        tokens = tokens[1:]
    return tokens, generation


def _compatible(x: str, y: str) -> bool:
    if x == y:
        return True
    return (len(x) == 1 and y.startswith(x)) or (len(y) == 1 and x.startswith(y))


def _aligns(short: list[str], long: list[str]) -> bool:
    """Every token of `short` matches, in order, a distinct token of `long`."""
    position = 0
    for token in short:
        while position < len(long) and not _compatible(token, long[position]):
            position += 1
        if position == len(long):
            return False
        position += 1
    return True


def _given_names_match(a: list[str], b: list[str]) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return False
    if _compatible(short[0], long[0]) and _aligns(short[1:], long[1:]):
        return True
    return len(long[0]) == 1 and _aligns(short, long[1:]) and _compatible(short[0], long[1])


def same_name(a: str | None, b: str | None) -> bool:
    """True when `a` and `b` can name the same person.

    Ignores case, accents ("José" = "Jose"), punctuation, titles ("Dr."), honorifics
    ("PhD"), parenthesised or quoted asides ("John Kennedy (politician)", 'William "Bill"
    Clinton') and the "Last, First" order. The surnames (last word) must be equal; the first
    given names must agree, either in full or by initial; middle names may be present on
    one side and absent on the other, or given as initials. Hyphens split words, so
    "Jean-Paul Sartre" = "Jean Paul Sartre" = "J.-P. Sartre".

    Matches: "John F. Kennedy" = "John Kennedy" = "Kennedy, John F." =
    "JOHN FITZGERALD KENNEDY" = "J. Kennedy" = "J. F. Kennedy"; "F. Scott Fitzgerald" =
    "Scott Fitzgerald"; "Gabriel García Márquez" = "Gabriel Garcia Marquez".
    Does not match: "Jane Kennedy" vs "John Kennedy" (different first name), "John A.
    Kennedy" vs "John F. Kennedy" (conflicting middle initial), "Kennedy" vs "John Kennedy"
    (a surname alone never matches a full name), "John Kennedy Jr." vs "John Kennedy Sr."
    (a generation suffix must agree when both sides give one). Nicknames ("Bill" for
    "William") and reordered Eastern names ("Xi Jinping" vs "Jinping Xi") do not match.
    """
    left_text, right_text = _as_text(a), _as_text(b)
    if not left_text or not right_text:
        return False
    left, left_gen = _name_tokens(left_text)
    right, right_gen = _name_tokens(right_text)
    if not left or not right:
        return False
    if left_gen and right_gen and left_gen != right_gen:
        return False
    if len(left) == 1 or len(right) == 1:
        return left == right
    if left[-1] != right[-1]:
        return False
    return _given_names_match(left[:-1], right[:-1])


# -- URLs -----------------------------------------------------------------------------------

_TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_ga"}
)
_SECOND_LEVELS = frozenset(
    {"co", "com", "org", "net", "gov", "edu", "ac", "go", "or", "ne", "gob", "govt", "mil", "nic"}
)
_SHARED_HOSTS = frozenset(
    {
        "github.io",
        "gitlab.io",
        "blogspot.com",
        "wordpress.com",
        "substack.com",
        "medium.com",
        "herokuapp.com",
        "netlify.app",
        "vercel.app",
        "pages.dev",
        "appspot.com",
        "readthedocs.io",
    }
)
_DEFAULT_PORTS = MappingProxyType({"http": 80, "https": 443})


def _split_url(url: Any) -> SplitResult | None:
    """`urlsplit` of a trimmed URL (scheme added when missing), or None when it has no host."""
    if not isinstance(url, str):
        return None
    text = url.strip().strip("<>\"'").rstrip(".,;:!?")
    while text.endswith(")") and text.count("(") < text.count(")"):
        text = text[:-1]
    if not text or any(ch.isspace() for ch in text):
        return None
    has_scheme = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) is not None
    if not has_scheme:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d)", text):
            return None
        text = "https://" + text.removeprefix("//")
    try:
        parts = urlsplit(text)
        _ = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if not has_scheme and "." not in parts.hostname and parts.hostname != "localhost":
        return None
    return parts


def _clean_host(host: str) -> str:
    host = host.lower().lstrip("*").strip(".")
    for prefix in ("www.", "m."):
        if host.startswith(prefix) and host.count(".") >= 2:
            host = host[len(prefix) :]
    return host


def normalize_url(url: str | None) -> str:
    """A comparison key for `url`: two URLs with the same key show the same page.

    Lower-cases scheme and host, treats http as https, drops "www." and "m." prefixes,
    default ports, user info, the #fragment, a trailing slash, tracking parameters (utm_*,
    fbclid, gclid, ...) and surrounding punctuation or angle brackets; sorts the query
    parameters and normalises percent-encoding ("Caf%C3%A9" = "Café"). A URL without a
    scheme ("example.com/a") is read as https. Path case is kept ("/Page" ≠ "/page").

    Example: "HTTP://www.Example.com:80/a/b/?utm_source=x&z=1&a=2#top" →
    "https://example.com/a/b?a=2&z=1". Returns "" for None, non-http(s) schemes
    ("mailto:...") and text that is not a URL.
    """
    parts = _split_url(url)
    if parts is None:
        return ""
    scheme = parts.scheme.lower()
    host = _clean_host(unquote(parts.hostname or ""))
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = quote(unquote(parts.path), safe="/:@!$&'()*+,;=~-._")
    path = re.sub(r"/{2,}", "/", path).rstrip("/")
    query = sorted(
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if not key.lower().startswith("utm_") and key.lower() not in _TRACKING_PARAMS
    )
    return urlunsplit(("https", netloc, path, urlencode(query, quote_via=quote), ""))


def same_url(a: str | None, b: str | None) -> bool:
    """True when `a` and `b` have the same `normalize_url` key (and both are URLs).

    "http://www.example.com/a/" = "https://example.com/a" = "example.com/a#intro";
    "https://example.com/a" ≠ "https://example.com/b" and ≠ "https://other.com/a".
    """
    left = normalize_url(a)
    return bool(left) and left == normalize_url(b)


def url_domain(url: str | None) -> str | None:
    """The site a URL belongs to: its registrable domain, lower-case, without "www.".

    "https://www.nytimes.com/2023/x" → "nytimes.com"; "https://docs.github.com/en" →
    "github.com"; "https://news.bbc.co.uk/a" → "bbc.co.uk" (country second levels such as
    co.uk, com.au, gov.cn are kept); shared hosting keeps the owner's subdomain
    ("alice.github.io" → "alice.github.io"); an IP address or "localhost" is returned as
    is. None when `url` is not an http(s) URL. To test membership use `url_in_domain`.
    """
    parts = _split_url(url)
    if parts is None:
        return None
    host = _clean_host(parts.hostname or "")
    labels = host.split(".")
    if len(labels) <= 2 or re.fullmatch(r"[\d.]+|[0-9a-f:]+", host):
        return host
    if ".".join(labels[-2:]) in _SHARED_HOSTS:
        return ".".join(labels[-3:])
    if len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVELS:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def url_in_domain(url: str | None, domain: str | None) -> bool:
    """True when `url` is on `domain` or on one of its subdomains.

    "https://docs.github.com/x" is in "github.com"; "https://github.com" is in
    "www.github.com" ("www." is ignored on both sides); "https://evilgithub.com" and
    "https://github.com.evil.net" are not in "github.com". `domain` may also be given as
    a URL ("https://github.com/"). False for None or anything that is not an http(s) URL.
    """
    parts, target = _split_url(url), _split_url(domain)
    if parts is None or target is None:
        return False
    host = _clean_host(parts.hostname or "")
    wanted = _clean_host(target.hostname or "")
    return host == wanted or host.endswith("." + wanted)


# -- page text ------------------------------------------------------------------------------


def _normalized(text: str, fuzzy_whitespace: bool) -> str:
    folded = _fold(text)
    return _WHITESPACE.sub(" ", folded).strip() if fuzzy_whitespace else folded


def page_contains(
    page_text: str | None,
    value: str | float | None,
    *,
    fuzzy_whitespace: bool = True,
    whole_word: bool = False,
) -> bool:
    """True when `value` occurs in `page_text`, ignoring case and accents.

    Both sides are folded: case ("PARIS" = "Paris"), accents ("Zürich" = "Zurich"),
    curly quotes and dashes ("it’s" = "it's", "2020–2021" = "2020-2021"). With
    `fuzzy_whitespace` (the default) any run of spaces, tabs or newlines counts as one
    space, so "New\\n  York" contains "new york". With `whole_word=True` the match must
    not be glued to letters or digits: "12" is then not found in "2012", nor "cat" in
    "concatenate". A number `value` is searched as written (1200 does not find "1,200";
    use `parse_number` for that). False for None, empty or whitespace-only `value`.
    """
    page = _as_text(page_text)
    if page is None:
        return False
    return _found(_normalized(page, fuzzy_whitespace), value, fuzzy_whitespace, whole_word)


def _found(haystack: str, value: Any, fuzzy_whitespace: bool, whole_word: bool) -> bool:
    """`page_contains` on an already normalised page."""
    needle = _as_text(value)
    if needle is None:
        return False
    target = _normalized(needle, fuzzy_whitespace)
    if not target.strip():
        return False
    if not whole_word:
        return target in haystack
    pattern = r"(?<![^\W_])" + re.escape(target) + r"(?![^\W_])"
    return re.search(pattern, haystack) is not None


def contains_any(
    text: str | None,
    values: Iterable[str] | str | None,
    *,
    fuzzy_whitespace: bool = True,
    whole_word: bool = False,
) -> bool:
    """True when at least one of `values` occurs in `text`, matched as `page_contains` does.

    `contains_any(page, ["Dec 7, 2023", "December 7, 2023"])` accepts either spelling.
    False when `values` is empty or None; a single string counts as one value.
    """
    page, items = _as_text(text), _values(values)
    if page is None:
        return False
    haystack = _normalized(page, fuzzy_whitespace)
    return any(_found(haystack, value, fuzzy_whitespace, whole_word) for value in items)


def contains_all(
    text: str | None,
    values: Iterable[str] | str | None,
    *,
    fuzzy_whitespace: bool = True,
    whole_word: bool = False,
) -> bool:
    """True when every one of `values` occurs in `text`, matched as `page_contains` does.

    `contains_all(page, ["Paris", "1889"])` needs both. False when `values` is empty or
    None; a single string counts as one value.
    """
    page, items = _as_text(text), _values(values)
    if page is None or not items:
        return False
    haystack = _normalized(page, fuzzy_whitespace)
    return all(_found(haystack, value, fuzzy_whitespace, whole_word) for value in items)


def _values(values: Any) -> list[Any]:
    if values is None:
        return []
    if isinstance(values, (str, Real)):
        return [values]
    if isinstance(values, Iterable):
        return list(values)
    return []
