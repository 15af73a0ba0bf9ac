"""Dates written in any common format: `parse_date` and `same_date`."""

from __future__ import annotations

import re
from datetime import date, datetime
from types import MappingProxyType
from typing import NamedTuple

from toolkit.checks.folding import fold

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
# What opens a range that a full date written after it closes: "3-5 March 2024", "from 3 to
# 5 March 2024", "March 30 - April 2, 2024", "30 March - 2 April 2024" (folded: dashes are "-").
_MONTH_WORD = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![a-z])\.?"
_RANGE_START = re.compile(
    rf"(?:(?P<month_before>{_MONTH_WORD})\s*)?(?<!\d)(?P<start>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"(?:\s*(?:of\s+)?(?P<month_after>{_MONTH_WORD}))?,?"
    r"\s*(?:-|to|until|till|through|thru|and|&)\s*$"
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


class _Reading(NamedTuple):
    """The date a text names, and the other day it may name when it is an ambiguous numeric
    date ("03/04/2021": March 4 read US-style, or April 3 read day first), else None."""

    day: date
    other: date | None


def _numeric_date(match: re.Match[str], dayfirst: bool | None) -> _Reading | None:
    dotted = match["sep"] == "."
    # Dots are written day first (European style); slashes and dashes US-style.
    first_is_day = dotted if dayfirst is None else dayfirst
    first, second = int(match["a"]), int(match["b"])
    year = int(match["year"])
    if len(match["year"]) == 2:
        year += 2000 if year < 69 else 1900
    preferred = (year, second, first) if first_is_day else (year, first, second)
    fallback = (year, first, second) if first_is_day else (year, second, first)
    reading = _make_date(*preferred)
    if reading is None:
        fallback_reading = _make_date(*fallback)
        return _Reading(fallback_reading, None) if fallback_reading else None
    # Slashes and dashes are written month first in the US and day first in most other
    # places: when both numbers can be the month and no `dayfirst` says which, either is.
    ambiguous = dayfirst is None and not dotted and first != second and max(first, second) <= 12
    return _Reading(reading, _make_date(*fallback) if ambiguous else None)


def _read_date(text: str | date | None, dayfirst: bool | None) -> _Reading | None:
    """`parse_date`'s date of `text`, with the other day it may name if it is ambiguous."""
    if isinstance(text, datetime):
        return _Reading(text.date(), None)
    if isinstance(text, date):
        return _Reading(text, None)
    if not isinstance(text, str) or not text:
        return None
    folded = fold(text)
    found: list[tuple[int, int, _Reading | None]] = []
    for pattern in (*_DATE_PATTERNS, _NUMERIC_DATE):
        for match in pattern.finditer(folded):
            if pattern is _NUMERIC_DATE:
                parsed = _numeric_date(match, dayfirst)
            else:
                month = _month_number(match["month"])
                day = _make_date(int(match["year"]), month, int(match["day"]))
                parsed = _Reading(day, None) if day else None
                if day and _closes_range(folded, match, day.day):
                    found.append((match.start(), -len(match[0]), None))
                    break
            if parsed is not None:
                found.append((match.start(), -len(match[0]), parsed))
                break
    return min(found, key=lambda entry: entry[:2])[2] if found else None


def _closes_range(folded: str, match: re.Match[str], day: int) -> bool:
    """The month-name date `match` ends a range of days ("3-5 March 2024"): the text names a
    span, not the one day `parse_date` returns. A lone number before the dash is a range's
    first day only when below the date's day, so "Issue 12 - 5 March 2024" is a date."""
    opener = _RANGE_START.search(folded, max(match.start() - 40, 0), match.start())
    if opener is None:
        return False
    if opener["month_before"] or opener["month_after"]:
        return True
    return int(opener["start"]) < day


def parse_date(text: str | date | None, *, dayfirst: bool | None = None) -> date | None:
    """The first full calendar date (year, month and day) written in `text`, or None.

    Reads month-name forms ("Dec 7, 2023", "December 7th, 2023", "Dec. 7 2023", "7 Dec 2023",
    "7th of December, 2023", "07-Dec-2023", "Thursday, December 7, 2023"), ISO forms
    ("2023-12-07", "2023/12/07", "2023-12-07T10:30:00Z") and numeric forms ("12/07/2023",
    "12-07-2023", "07.12.2023", "12/07/23"). Case is ignored and the date may sit inside a
    longer sentence ("It was released on Dec 7, 2023 at noon."); the earliest date wins.

    Month-name and ISO forms are unambiguous. Numeric day/month forms with slashes or dashes
    are read US-style (month first: "12/07/2023" is December 7) and with dots day first, as
    they are written ("07.12.2023" is December 7); `dayfirst=True` or `False` reads every
    numeric form one way. When only one reading is a valid date ("25/12/2023") that reading
    is used. Two-digit years are only read with slashes: 00-68 → 2000s, 69-99 → 1900s.
    `same_date` also accepts the day-first reading of an ambiguous slash or dash date.

    Returns None for partial dates ("December 2023", "Dec 7"), impossible dates
    ("Feb 30, 2023"), a range of days the first date closes ("3-5 March 2024", "from 3 to 5
    March 2024", "30 March - 2 April 2024": a span, not its last day; a lone number before
    the dash counts as a first day only when below the date's, so "Issue 12 - 5 March 2024"
    is March 5), None or non-text input. A `date` or `datetime` is returned as a date.
    """
    reading = _read_date(text, dayfirst)
    return reading.day if reading else None


def same_date(a: str | date | None, b: str | date | None, *, dayfirst: bool | None = None) -> bool:
    """True when `a` and `b` name the same calendar day, whatever their formats.

    Each side is read with `parse_date` (strings, `date` or `datetime`), so
    "Dec 7, 2023", "December 7th, 2023", "2023-12-07", "7 Dec 2023", "12/07/2023" and
    "07.12.2023" all match each other; with `dayfirst=True`, "07/12/2023" matches them too.
    A numeric date with slashes or dashes whose day and month are both 12 or less and differ
    is ambiguous (US month first, elsewhere day first): without `dayfirst`, it matches a side
    that names a day one way, either reading ("03/04/2021" = "March 4, 2021" = "3 April
    2021" = "03.04.2021"), but two ambiguous dates must match as written ("03/04/2021" is
    not "04/03/2021"), and "13/04/2021" can only be April 13. Dotted dates are day first,
    never ambiguous. False when either side has no full date ("December 2023", "", None),
    names a range of days ("3-5 March 2024") or the days differ.
    """
    left, right = _read_date(a, dayfirst), _read_date(b, dayfirst)
    if left is None or right is None:
        return False
    if left.day == right.day:
        return True
    if left.other is not None and right.other is None:
        return left.other == right.day
    if right.other is not None and left.other is None:
        return right.other == left.day
    return False
