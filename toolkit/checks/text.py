"""Whether values occur in a page's text, ignoring case, accents and whitespace."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from numbers import Real
from typing import Any, NamedTuple

from toolkit.checks.folding import (
    WHITESPACE,
    as_text,
    drop_umlauts,
    fold_keeping_umlauts,
    has_umlauts,
    longest_literal,
    transliterations,
    write_out_umlauts,
)


class _Folded(NamedTuple):
    """A text folded once and read three ways: umlauts as plain vowels ("müller" → "muller"),
    written out ("müller" → "mueller") and kept ("müller"). All three are the same string when
    it has no umlaut."""

    plain: str
    german: str
    kept: str


# What glues a match found by pattern to the text around it, for `whole_word`: a letter or
# digit, or for a number its decimal or group separator and the digit beyond.
_GLUE_BEFORE = re.compile(r"[^\W_]$")
_GLUE_AFTER = re.compile(r"[^\W_]")
_NUMBER_BEFORE = re.compile(r"\d[.,]$")
_NUMBER_AFTER = re.compile(r"[.,]\d")


def _normalized(text: str, fuzzy_whitespace: bool) -> _Folded:
    folded = fold_keeping_umlauts(text)
    if fuzzy_whitespace:
        folded = WHITESPACE.sub(" ", folded).strip()
    return _Folded(drop_umlauts(folded), write_out_umlauts(folded), folded)


_normalized_page = functools.lru_cache(maxsize=4)(_normalized)
"""`_normalized` of a page, remembered: a judge checks value after value against one page,
and folding 300 KB of text takes ~40 ms each time (a few pages at most are kept)."""


def page_contains(
    page_text: str | None,
    value: str | float | None,
    *,
    fuzzy_whitespace: bool = True,
    whole_word: bool = False,
) -> bool:
    """True when `value` occurs in `page_text`, ignoring case and accents.

    Both sides are folded: case ("PARIS" = "Paris"), accents ("Zürich" = "Zurich"),
    curly quotes and dashes ("it’s" = "it's", "2020–2021" = "2020-2021"). A German umlaut
    may also be written out with an e on either side ("Müller" = "Mueller", "Schrödinger" =
    "Schroedinger"; "ß" = "ss"), each umlaut either way on its own ("Juergen Muller" is
    found in "Jürgen Müller"), but only against an umlaut: "Mueller" is not found in
    "Muller". With
    `fuzzy_whitespace` (the default) any run of spaces, tabs or newlines counts as one
    space, so "New\\n  York" contains "new york". With `whole_word=True` the match must
    not be glued to letters or digits: "12" is then not found in "2012", "12,000" or "12.5",
    nor "cat" in "concatenate". A number `value` is searched as written (1200 does not find "1,200";
    use `parse_number` for that); a whole float is also searched without its ".0" (1889.0
    finds "1889"). False for None, empty or whitespace-only `value`.
    """
    page = as_text(page_text)
    if page is None:
        return False
    return _found(_normalized_page(page, fuzzy_whitespace), value, fuzzy_whitespace, whole_word)


def _found(haystack: _Folded, value: Any, fuzzy_whitespace: bool, whole_word: bool) -> bool:
    """`page_contains` on an already normalised page. A whole float (1889.0, as an extracted
    number arrives) is looked for as written and as the integer pages write ("1889")."""
    if isinstance(value, float) and value.is_integer():
        return any(
            _found(haystack, spelling, fuzzy_whitespace, whole_word)
            for spelling in (str(int(value)), str(value))
        )
    needle = as_text(value)
    if needle is None:
        return False
    target = _normalized(needle, fuzzy_whitespace)
    if not target.plain.strip():
        return False
    if _occurs(haystack.plain, target.plain, whole_word):
        return True
    # Umlauts written out on both sides: "Müller" on the page finds "Mueller" and the other
    # way round, while "Mueller" and "Muller" (no umlaut either side) stay apart. Without an
    # umlaut on either side the written-out forms are the plain ones, already searched.
    if not (has_umlauts(haystack.kept) or has_umlauts(target.kept)):
        return False
    if _occurs(haystack.german, target.german, whole_word):
        return True
    # Umlauts spelled both ways in one value ("Juergen Muller" for "Jürgen Müller"), each
    # umlaut kept, dropped or written out on its own. The value's longest literal run must
    # be on the page (a C-speed test) before the pattern is searched through the page.
    if longest_literal(target.kept) not in haystack.kept:
        return False
    pattern = transliterations(target.kept)
    found = pattern.search(haystack.kept)
    while found is not None and whole_word and not _stands_alone(haystack.kept, found):
        found = pattern.search(haystack.kept, found.start() + 1)
    return found is not None


def _stands_alone(haystack: str, found: re.Match[str]) -> bool:
    """`found` is not glued to a letter or digit, nor a number to its decimal or group
    separator: the test `_occurs` makes with `whole_word`."""
    start, end = found.span()
    return not (
        _GLUE_BEFORE.search(haystack, max(start - 1, 0), start)
        or _GLUE_AFTER.match(haystack, end)
        or (haystack[start].isdigit() and _NUMBER_BEFORE.search(haystack, max(start - 2, 0), start))
        or (haystack[end - 1].isdigit() and _NUMBER_AFTER.match(haystack, end))
    )


def _occurs(haystack: str, target: str, whole_word: bool) -> bool:
    if not whole_word:
        return target in haystack
    # A number's decimal or group separator glues too: "12" is not a word of "12,000" or "12.5".
    # The value comes first so `re` skips ahead to where it occurs (a pattern opening with a
    # lookbehind is tried at every position: ~10 ms on a 300 KB page, ~0.2 ms this way); what
    # precedes it is checked by looking back over the value's own length.
    over = f"(?s:.){{{len(target)}}}"
    before = rf"(?<![^\W_]{over})" + (rf"(?<!\d[.,]{over})" if target[0].isdigit() else "")
    after = r"(?![^\W_])" + (r"(?![.,]\d)" if target[-1].isdigit() else "")
    return re.search(re.escape(target) + before + after, haystack) is not None


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
    page, items = as_text(text), _values(values)
    if page is None:
        return False
    haystack = _normalized_page(page, fuzzy_whitespace)
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
    page, items = as_text(text), _values(values)
    if page is None or not items:
        return False
    haystack = _normalized_page(page, fuzzy_whitespace)
    return all(_found(haystack, value, fuzzy_whitespace, whole_word) for value in items)


def _values(values: Any) -> list[Any]:
    if values is None:
        return []
    if isinstance(values, (str, Real)):
        return [values]
    if isinstance(values, Iterable):
        return list(values)
    return []
