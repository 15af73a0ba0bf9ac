"""Text folding shared by the checks: case, accents, quotes, dashes and odd spaces."""

from __future__ import annotations

import functools
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
    """Case-fold, strip accents (NFKD; "ł", "ø", "đ", "æ", "œ" and "þ" as "l", "o", "d",
    "ae", "oe" and "th") and unify quotes, dashes and odd spaces."""
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


# Latin letters whose accent or stroke NFKD does not split off, as English spells them
# without it: "Wałęsa" is "Walesa", "Søren" "Soren", "Đoković" "Dokovic", "Œuvre" "Oeuvre".
_LETTER_FOLD = MappingProxyType(
    {
        **dict.fromkeys("øØ", "o"),
        **dict.fromkeys("łŁ", "l"),
        **dict.fromkeys("đĐ", "d"),
        **dict.fromkeys("ħĦ", "h"),
        **dict.fromkeys("ŧŦ", "t"),
        **dict.fromkeys("ðÐ", "d"),
        **dict.fromkeys("æÆ", "ae"),
        **dict.fromkeys("œŒ", "oe"),
        **dict.fromkeys("þÞ", "th"),
        "ı": "i",
    }
)


def _without_marks(match: re.Match[str]) -> str:
    """A run of non-ASCII characters without its combining marks (accents, once decomposed),
    and its letters with a stroke or ligature (`_LETTER_FOLD`) written in plain letters."""
    return "".join(
        _LETTER_FOLD.get(ch, ch) for ch in match.group() if not unicodedata.combining(ch)
    )


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


# Where a `fold_keeping_umlauts` text may differ from another spelling of the same German word:
# an umlaut, which may be dropped or written out with an e, and a plain vowel (with an e after
# it or not), which may be an umlaut that was. Any other character must be the same.
_TRANSLITERATION_SITE = re.compile(r"[äöü]|[aou]e?")
_UMLAUT_OF = MappingProxyType({"a": "ä", "o": "ö", "u": "ü"})
_PLAIN_OF = MappingProxyType({"ä": "a", "ö": "o", "ü": "u"})


@functools.lru_cache(maxsize=4096)
def transliterations(folded: str) -> re.Pattern[str]:
    """A pattern matching `folded` (a `fold_keeping_umlauts` text) with each umlaut, on either
    side, kept, dropped or written out on its own: "jürgen muller" matches "juergen müller",
    since English sources spell a German name either way, even within one name. A difference
    without an umlaut on one side is no match ("mueller" does not match "muller")."""
    parts: list[str] = []
    position = 0
    for site in _TRANSLITERATION_SITE.finditer(folded):
        parts.append(re.escape(folded[position : site.start()]))
        parts.append(_site_pattern(site.group()))
        position = site.end()
    parts.append(re.escape(folded[position:]))
    return re.compile("".join(parts))


def _site_pattern(site: str) -> str:
    """What one transliteration site may be on the other side: "ü" is "ü", "ue" or "u"; "ue"
    is "ue" or "ü" (with the e, if it was an e after an umlaut); "u" is "u" or "ü"."""
    if site in _PLAIN_OF:
        return f"(?:{site}|{_PLAIN_OF[site]}e?)"
    vowel, umlaut = site[0], _UMLAUT_OF[site[0]]
    if len(site) == 1:
        return f"[{vowel}{umlaut}]"
    return f"(?:{vowel}e|{umlaut}e?)"


def longest_literal(folded: str) -> str:
    """The longest run of `folded` that every `transliterations` match holds as it is: a
    needle to test first, at C speed, before a pattern is searched through a whole page."""
    return max(_TRANSLITERATION_SITE.split(folded), key=len)


def as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    return None
