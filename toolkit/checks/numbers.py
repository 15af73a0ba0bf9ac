"""Numbers as answers write them (currency, separators, multipliers, ranges, bounds): parse
and compare.

A text states one number ("1,200"), an approximate one ("about 1,200"), a range ("1.2–1.5
million") or a bound ("over 1,000", "under 50"). `_read` reads all four as the closed interval
of values the text allows; the predicates compare those intervals, so that neither a range nor
a bound is ever taken for the single number it starts with.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from numbers import Real
from types import MappingProxyType
from typing import NamedTuple

from toolkit.checks.folding import PUNCT_TABLE

_SCALE_WORDS = MappingProxyType(
    {
        "thousand": Decimal(10) ** 3,
        "lakh": Decimal(10) ** 5,
        "million": Decimal(10) ** 6,
        "mln": Decimal(10) ** 6,
        "mn": Decimal(10) ** 6,
        "mio": Decimal(10) ** 6,
        "crore": Decimal(10) ** 7,
        "billion": Decimal(10) ** 9,
        "bn": Decimal(10) ** 9,
        "milliard": Decimal(10) ** 9,
        "mrd": Decimal(10) ** 9,
        "trillion": Decimal(10) ** 12,
        "tn": Decimal(10) ** 12,
    }
)
_SCALE_LETTERS = MappingProxyType(
    {
        "k": Decimal(10) ** 3,
        "K": Decimal(10) ** 3,
        "M": Decimal(10) ** 6,
        "MM": Decimal(10) ** 6,
        "m": Decimal(10) ** 6,
        "mm": Decimal(10) ** 6,
        "b": Decimal(10) ** 9,
        "B": Decimal(10) ** 9,
        "T": Decimal(10) ** 12,
    }
)
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_SUPERSCRIPT_EXPONENT = f"⁻?[{_SUPERSCRIPTS}]{{1,3}}"
_FROM_SUPERSCRIPT = str.maketrans(
    {"⁻": "-", **{sup: str(d) for d, sup in enumerate(_SUPERSCRIPTS)}}
)
_NUMBER = re.compile(
    # A three-letter code glued to a hyphen is a name ("GPT-4", "ISO-9001"), not "USD -5".
    r"(?<![\w.,])(?P<sign>[-+])?(?:(?P<currency>[$€£¥₹₩]|[A-Z]{1,3}\$|[A-Z]{3}(?![-+]))\s?)?"
    r"(?P<sign2>[-+])?"
    r"(?P<num>"
    r"\d{1,3}(?:\.\d{3})+,\d+(?![\d,])"  # 1.234,56 (decimal comma)
    r"|\d{1,3}(?:\.\d{3}){2,}(?!\d|[.,]\d)"  # 1.234.567 (only a grouping has two dots)
    r"|\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+(?:[.,]\d+)?(?!\d|[.,]\d)"  # 1 234 567,8
    r"|\d{1,3}(?:'\d{3})+(?:\.\d+)?(?!\d|[.,]\d)"  # 1'234'567.50 (Swiss)
    r"|\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?(?!\d|,\d)"  # 12,34,567 (Indian lakh grouping)
    r"|(?:\d+,\d{1,2}|\d{1,3},\d{4,})(?![\d,])"  # 3,5 and 3,14159 (decimal comma)
    r"|\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?"  # 1,234,567.89
    r"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # 1234.5, 1.5e6
    r"|\.\d+"  # .5
    r")"
    # A power of ten written out: "6.022 × 10^23", "3x10⁶", "10^-3".
    r"(?:\s?[×xX*·]\s?10(?:(?:\^|\*\*)(?P<times_power>[-+]?\d{1,3})|(?P<times_sup>"
    + _SUPERSCRIPT_EXPONENT
    + r"))|\^(?P<power>[-+]?\d{1,3}))?"
    # After a currency "m" and "b" are million and billion ("£3.2m"); elsewhere "m" is metres.
    r"(?:(?P<letter>MM|[kKMBT]|(?(currency)(?:mm|[mb])|(?!)))(?![A-Za-z])"
    r"|\s?(?P<word>(?i:" + "|".join(_SCALE_WORDS) + r")s?)\b)?",
)


def _decimal_of(token: str) -> Decimal | None:
    if re.search(r"[ '\u00a0\u2009\u202f]", token):
        # Space or apostrophe groups: a comma or dot after them is the decimal mark.
        token = re.sub(r"[ '\u00a0\u2009\u202f]", "", token).replace(",", ".")
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3}){2,}", token):
        token = token.replace(".", "")
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d+", token) or re.fullmatch(
        r"\d+,\d{1,2}|\d{1,3},\d{4,}", token
    ):
        token = token.replace(".", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    try:
        return Decimal(token)
    except InvalidOperation:
        return None


# What a text says about its number, right before it (the currency is part of the number).
_LOWER_WORDS = (
    r"over|more than|greater than|larger than|higher than|above|at least|exceeding|"
    r"in excess of|upwards? of|no less than|not less than|no fewer than|not fewer than|"
    r"not under|not below|minimum of|starting (?:at|from)"
)
_UPPER_WORDS = (
    r"under|below|less than|fewer than|lower than|smaller than|at most|up to|no more than|"
    r"not more than|no greater than|not over|not above|not exceeding|maximum of"
)
_APPROX_WORDS = (
    r"about|around|approximately|approx\.?|roughly|circa|ca\.|c\.|some|an estimated|"
    r"estimated|nearly|almost|close to|more or less"
)
_QUALIFIER_BEFORE = re.compile(
    rf"(?:(?<!\w)(?:(?P<lower>{_LOWER_WORDS})|(?P<upper>{_UPPER_WORDS})|(?P<approx>{_APPROX_WORDS}))"
    r"|(?P<lower_sign>>=?|≥|≧)|(?P<upper_sign><=?|≤|≦)|(?P<approx_sign>~|≈|∼))\s*$",
    re.IGNORECASE,
)
# ... and right after it, up to two words of unit in between ("1,000 people or more").
_QUALIFIER_AFTER = re.compile(
    r"(?P<approx_sign>\s*(?:±|\+/-|\+-))|(?P<lower_sign>\+(?!\s*[\d+\-/]))"
    r"|(?:\s*-?ish\b(?P<approx_ish>))"
    r"|\s*(?:[^\W\d_]+\.?\s+){0,2}?(?:(?P<lower>or more|or above|or higher|or greater|or over|"
    r"and up|and upwards|and above|and over|at least)|(?P<upper>or less|or fewer|or lower|"
    r"or below|or under|and under|and below|at most)|(?P<approx>or so|give or take|"
    r"more or less))\b",
    re.IGNORECASE,
)
# Between the two numbers of a range, after an optional unit of the first ("5 km to 10 km").
_RANGE_JOIN = re.compile(
    r"\s*(?:%|(?!(?i:to|through|thru|or|and)\b)[^\W\d_]{1,12}\.?)?"
    r"\s*(?P<join>[-~～]|(?i:to|through|thru|or|and)\b)\s*"
)
_BETWEEN = re.compile(r"(?<!\w)between\s*$", re.IGNORECASE)


class _Reading(NamedTuple):
    """What a text states: its first number (scaled as written), and the closed interval
    [low, high] of the values it allows (infinite on a bound's open side)."""

    first: float
    low: float
    high: float
    approximate: bool


def _scale(match: re.Match[str]) -> Decimal | None:
    if match["letter"]:
        return _SCALE_LETTERS[match["letter"]]
    if match["word"]:
        word = match["word"].lower()
        return _SCALE_WORDS.get(word) or _SCALE_WORDS[word.removesuffix("s")]
    return None


def _unscaled(match: re.Match[str]) -> Decimal | None:
    """The number of `match` with its sign, before any scale."""
    value = _decimal_of(match["num"])
    if value is None:
        return None
    if match["power"]:
        value **= int(match["power"])
    elif match["times_power"] or match["times_sup"]:
        exponent = match["times_power"] or match["times_sup"].translate(_FROM_SUPERSCRIPT)
        value *= Decimal(10) ** int(exponent)
    signs = (match["sign"] or "") + (match["sign2"] or "")
    return -value if signs.count("-") % 2 == 1 else value


def _finite(value: Decimal) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _range_end(
    text: str, first: re.Match[str], start: Decimal
) -> tuple[Decimal, Decimal, re.Match[str]] | None:
    """The range `first` opens ("1.2–1.5 million"): both ends and the second number's match,
    or None when no second number follows or it is not above the first ("2023-12-07")."""
    join = _RANGE_JOIN.match(text, first.end())
    if join is None:
        return None
    between = _BETWEEN.search(text, max(first.start() - 32, 0), first.start())
    if join["join"].lower() == "and" and between is None:
        return None
    second = _NUMBER.match(text, join.end())
    end = None if second is None else _unscaled(second)
    if second is None or end is None:
        return None
    end_scale = _scale(second)
    end *= end_scale or 1
    if _finite(end) is None:
        return None
    if _scale(first) is None and end_scale is not None and start * end_scale <= end:
        return start * end_scale, end, second  # "1.2–1.5 million": the scale is shared
    scaled_start = start * (_scale(first) or 1)
    if scaled_start <= end:
        return scaled_start, end, second
    return None


def _read(text: object) -> _Reading | None:
    """What `text` states about its first number, or None when it has none."""
    if isinstance(text, bool):
        return None
    if isinstance(text, Real):
        value = float(text)
        return _Reading(value, value, value, False) if math.isfinite(value) else None
    if not isinstance(text, str):
        return None
    text = text.translate(PUNCT_TABLE)
    match = _NUMBER.search(text)
    start = None if match is None else _unscaled(match)
    if match is None or start is None:
        return None
    ends = _range_end(text, match, start)
    if ends is None:
        low = high = start * (_scale(match) or 1)
        last = match
    else:
        low, high, last = ends
    first, low_f, high_f = _finite(low), _finite(low), _finite(high)
    if first is None or low_f is None or high_f is None:
        return None
    # The longest qualifier is a few words: search only the text right before the number.
    before = _QUALIFIER_BEFORE.search(text, max(match.start() - 64, 0), match.start())
    after = _QUALIFIER_AFTER.match(text, last.end())
    said = {
        kind
        for found in (before, after)
        if found is not None
        for kind, value in found.groupdict().items()
        if value is not None
    }
    if said & {"lower", "lower_sign"}:
        high_f = math.inf
    elif said & {"upper", "upper_sign"}:
        low_f = -math.inf
    approximate = bool(said & {"approx", "approx_sign", "approx_ish"})
    return _Reading(first, low_f, high_f, approximate)


def parse_number(text: str | float | None) -> float | None:
    """The first number written in `text` as a float, or None when there is none.

    Understands thousands commas ("1,234,567.89" → 1234567.89) and other digit groups
    ("1 234 567", "1.234.567", "1'234'567", "12,34,567"), currency symbols and codes
    ("$1,200" → 1200, "€ 3.50" → 3.5, "US$5" → 5), signs ("-42", "−42", "-$5" → -5),
    percentages ("45%" → 45.0: the sign is dropped, not divided by 100), units after the
    number ("12.5 km", "300 MB" → 12.5, 300: the unit is ignored), multipliers ("1.2k" →
    1200, "3.4 million" → 3400000, "$2B" / "2 bn" → 2e9, "5M" / "$5MM" / "5 mn" → 5e6,
    "2.5 crore" → 2.5e7; lower-case "m" is a unit, metres, not a million, except right after
    a currency: "£3.2m" → 3.2e6), scientific notation ("1.5e6", "6.022 × 10^23", "1.6×10⁻¹⁹";
    a power "10^6" → 1e6) and decimal commas ("1.234,56" → 1234.56, "3,5" → 3.5,
    "3,14159" → 3.14159; a comma before exactly three digits groups thousands). A hyphen
    right after a letter or digit is not a minus sign ("COVID-19" → 19, "2020-2021" → 2020).
    Numbers written in words ("five") are not read.

    It reads the number alone, not what the text says about it: "over 1,000" and "about
    1,000" → 1000, and a range gives its first end at the range's scale ("1.2–1.5 million" →
    1200000). `number_bounds` reads ranges and bounds; `same_number` and `number_in_range`
    use it, so never compare `parse_number` results where a range or bound may be written.

    An int or float passes through (bool does not); None, NaN, infinity and text without
    digits give None.
    """
    reading = _read(text)
    return None if reading is None else reading.first


def number_bounds(text: str | float | None) -> tuple[float, float] | None:
    """The lowest and highest value `text` states, as `(low, high)`, or None without a number.

    Reads the first number as `parse_number` does, with what the text says about it:
    - one number: "$1,200" → (1200.0, 1200.0); an int or float x → (x, x);
    - a range: "1.2–1.5 million", "1.2-1.5 million", "between 1.2 and 1.5 million", "from
      1.2 to 1.5 million", "$1.2M–$1.5M" → (1200000.0, 1500000.0); "10-15%" → (10.0, 15.0);
      "5 or 6" → (5.0, 6.0). A scale written once, after the second number, applies to both
      ends. Two numbers where the second is not above the first are not a range: "2023-12-07"
      → (2023.0, 2023.0);
    - a lower bound: "over 1,000", "more than", "at least", "above", "exceeding", "upwards
      of", "1,000+", "1,000 or more", ">1000" → (1000.0, inf);
    - an upper bound: "under 50", "below", "less than", "fewer than", "at most", "up to", "no
      more than", "50 or less", "<50" → (-inf, 50.0);
    - an approximate number: "about 1,200", "around", "approximately", "roughly", "nearly",
      "almost", "~1,200", "1,200 or so", "1,200 ± 50" → (1200.0, 1200.0), the number it names
      (`same_number` still tells it from an exact one).
    The bounds are inclusive: "over 1,000" and "at least 1,000" both give (1000.0, inf).
    Only the first number and the words around it count: "5 apples and 10 pears" → (5.0,
    5.0). To test whether a text allows a value x, check `low <= x <= high`.
    """
    reading = _read(text)
    return None if reading is None else (reading.low, reading.high)


def same_number(
    a: str | float | None, b: str | float | None, *, abs_tol: float = 0.0, rel_tol: float = 0.0
) -> bool:
    """True when `a` and `b` state the same number, within the given tolerances.

    Each side is read as `parse_number` reads it, so "$1,200", "1.2k", "1200 USD" and 1200
    all match. With no tolerance the numbers must be equal (up to float rounding, 1e-9
    relative). `abs_tol=0.5` accepts |a - b| <= 0.5; `rel_tol=0.05` accepts a difference up
    to 5% of the larger magnitude ("10.4 million" matches 10_000_000 with rel_tol=0.05). The
    two tolerances are alternatives: either one being met is enough. False when either side
    has no number.

    Each side must state one number (see `number_bounds`): a range ("1.2–1.5 million",
    "2020-2021") or a bound ("over 1,000", "1,000+", "under 50") is never the same as a
    number, whatever the tolerance. An approximate number ("about 1,200", "~1,200", "nearly
    1,200") matches only when you give a tolerance: `same_number("about 1,200", 1200)` is
    False, `same_number("about 1,200", 1200, rel_tol=0.05)` is True.
    """
    left, right = _read(a), _read(b)
    if left is None or right is None:
        return False
    if left.low != left.high or right.low != right.high:
        return False
    try:
        absolute, relative = max(float(abs_tol), 0.0), max(float(rel_tol), 0.0)
        if (left.approximate or right.approximate) and not (absolute > 0 or relative > 0):
            return False
        return math.isclose(left.low, right.low, rel_tol=max(relative, 1e-9), abs_tol=absolute)
    except (TypeError, ValueError):
        return False


def number_in_range(
    value: str | float | None, low: str | float | None = None, high: str | float | None = None
) -> bool:
    """True when every value `value` states lies between `low` and `high`, both ends included.

    `value` is read with `number_bounds` ("$1.2 million" → 1200000), so a range must lie
    inside whole: "1.2–1.5 million" is in [1M, 2M] but not in [1M, 1.3M]. A bound is open
    on one side, so it is only inside a range open on that side: "over 1,000" is in [1000,
    None] but not in [1000, 5000]. An approximate number counts as the number it names
    ("about 1,200" is in [1000, 1500]). `low` and `high` may be numbers or text stating
    one number ("2M"); a bound of None leaves that side open: `number_in_range(x, 0,
    None)` means x >= 0. False when `value` has no number or a given bound is not one
    number (unreadable, a range, or itself a bound).
    """
    reading = _read(value)
    if reading is None:
        return False
    for bound, below in ((low, True), (high, False)):
        if bound is None:
            continue
        limit = _read(bound)
        if limit is None or limit.low != limit.high:
            return False
        if reading.low < limit.low if below else reading.high > limit.high:
            return False
    return True
