"""Text folding shared by the checks: case, accents, quotes, dashes and odd spaces."""

from __future__ import annotations

import re
import unicodedata
from numbers import Real
from types import MappingProxyType
from typing import Any

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
PUNCT_TABLE = str.maketrans(dict(_PUNCT_FOLD))
WHITESPACE = re.compile(r"\s+")
_PUNCT = re.compile("[" + "".join(_PUNCT_FOLD) + "]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


# A German umlaut once decomposed (NFKD), kept as one letter through the accent stripping.
_UMLAUT_DECOMPOSED = tuple(
    (base + "\u0308", umlaut)
    for base, umlaut in (("a", "ä"), ("o", "ö"), ("u", "ü"), ("A", "ä"), ("O", "ö"), ("U", "ü"))
)


def fold(text: str) -> str:
    """Case-fold, strip accents (NFKD) and unify quotes, dashes and odd spaces."""
    return drop_umlauts(fold_keeping_umlauts(text))


def fold_keeping_umlauts(text: str) -> str:
    """`fold`, except that the German umlauts ä, ö and ü stay (lower case, composed), so the
    caller can read them both ways with `drop_umlauts` and `write_out_umlauts` from one fold."""
    if text.isascii():
        return text.casefold()
    # What `str.translate(PUNCT_TABLE)` and a filter of every character would do, with the
    # scanning in C: a 300 KB page took ~55 ms, ~30 of them in those two Python-speed steps.
    text = _PUNCT.sub(_punct, text)
    decomposed = unicodedata.normalize("NFKD", text)
    if "\u0308" in decomposed:
        for pair in _UMLAUT_DECOMPOSED:
            decomposed = decomposed.replace(*pair)
    return _NON_ASCII.sub(_without_marks, decomposed).casefold()


def _punct(match: re.Match[str]) -> str:
    return _PUNCT_FOLD[match.group()]


def _without_marks(match: re.Match[str]) -> str:
    """A run of non-ASCII characters without its combining marks (accents, once decomposed)."""
    return "".join(ch for ch in match.group() if not unicodedata.combining(ch))


def drop_umlauts(folded: str) -> str:
    """The umlauts of a `fold_keeping_umlauts` text as plain vowels: "müller" → "muller"."""
    if not has_umlauts(folded):
        return folded
    return folded.replace("ä", "a").replace("ö", "o").replace("ü", "u")


def write_out_umlauts(folded: str) -> str:
    """The umlauts of a `fold_keeping_umlauts` text written out as German does without them:
    "müller" → "mueller" (ß is already "ss")."""
    if not has_umlauts(folded):
        return folded
    return folded.replace("ä", "ae").replace("ö", "oe").replace("ü", "ue")


def has_umlauts(folded: str) -> bool:
    """Whether a `fold_keeping_umlauts` text has an umlaut left."""
    return "ä" in folded or "ö" in folded or "ü" in folded


def as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    return None
