"""Numbers as answers write them (currency, separators, multipliers): parse and compare."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from numbers import Real
from types import MappingProxyType

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
    r"|\d+,\d{1,2}(?![\d,])"  # 3,5 (decimal comma)
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # 1234.5, 1.5e6
    r"|\.\d+"  # .5
    r")"
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
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d+", token) or re.fullmatch(r"\d+,\d{1,2}", token):
        token = token.replace(".", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    try:
        return Decimal(token)
    except InvalidOperation:
        return None


def parse_number(text: str | float | None) -> float | None:
    """The first number written in `text` as a float, or None when there is none.

    Understands thousands commas ("1,234,567.89" → 1234567.89) and other digit groups
    ("1 234 567", "1.234.567", "1'234'567", "12,34,567"), currency symbols and codes
    ("$1,200" → 1200, "€ 3.50" → 3.5, "US$5" → 5), signs ("-42", "−42", "-$5" → -5),
    percentages ("45%" → 45.0: the sign is dropped, not divided by 100), units after the
    number ("12.5 km", "300 MB" → 12.5, 300: the unit is ignored), multipliers ("1.2k" →
    1200, "3.4 million" → 3400000, "$2B" / "2 bn" → 2e9, "5M" / "$5MM" / "5 mn" → 5e6,
    "2.5 crore" → 2.5e7; lower-case "m" is a unit, metres, not a million, except right after
    a currency: "£3.2m" → 3.2e6), scientific notation ("1.5e6") and decimal commas
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
    match = _NUMBER.search(text.translate(PUNCT_TABLE))
    if match is None:
        return None
    value_dec = _decimal_of(match["num"])
    if value_dec is None:
        return None
    if match["letter"]:
        value_dec *= _SCALE_LETTERS[match["letter"]]
    elif match["word"]:
        word = match["word"].lower()
        value_dec *= _SCALE_WORDS.get(word) or _SCALE_WORDS[word.removesuffix("s")]
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
