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


def fold(text: str) -> str:
    """Case-fold, strip accents (NFKD) and unify quotes, dashes and odd spaces."""
    text = text.translate(PUNCT_TABLE)
    if text.isascii():
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.casefold()


def as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return str(value)
    return None
