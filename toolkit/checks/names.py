"""Person names: whether two spellings can name the same person."""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from toolkit.checks.folding import as_text, fold

# Forms of address, including office and rank abbreviations agents copy from news copy
# ("Sen.", "Rev.", "Gen."); words that are also given names ("King", "Prince") are left out.
_TITLES = frozenset(
    {
        *("dr", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sir", "dame", "lord"),
        *("lady", "rev", "reverend", "hon", "sen", "senator", "rep", "gov", "governor"),
        *("pres", "president", "gen", "col", "capt", "lt", "sgt", "maj", "adm", "fr", "rabbi"),
    }
)
# Forms of address that say a man or a woman: "Mr. Smith" and "Mrs. Smith" are two people.
_MALE_TITLES = frozenset({"mr", "sir", "lord"})
_FEMALE_TITLES = frozenset({"mrs", "ms", "miss", "dame", "lady"})
_GENERATIONS = frozenset({"jr", "sr", "ii", "iii", "iv"})
_HONORIFIC_SUFFIXES = frozenset({"phd", "md", "esq", "obe", "mbe", "cbe", "kbe", "dds", "jd"})
# German umlauts written out ("Müller" = "Mueller"); ß is already "ss" once case-folded.
_UMLAUTS_WRITTEN_OUT = str.maketrans(
    {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"}
)


class _Word(NamedTuple):
    """One word of a name, folded two ways: accents dropped ("müller" → "muller") and German
    umlauts written out ("müller" → "mueller"). Two words are equal when either form is."""

    plain: str
    german: str


def _name_tokens(text: str) -> tuple[list[_Word], str | None, frozenset[str]]:
    """Given names plus surname as words (surname last), a generation suffix if any, and the
    leading titles."""
    tokens, generation, titles = _folded_tokens(fold(text))
    german = unicodedata.normalize("NFC", text).translate(_UMLAUTS_WRITTEN_OUT)
    german_tokens = _folded_tokens(fold(german))[0]
    if len(german_tokens) != len(tokens):  # never expected: writing out keeps every word
        german_tokens = tokens
    return [_Word(*pair) for pair in zip(tokens, german_tokens, strict=True)], generation, titles


def _folded_tokens(folded: str) -> tuple[list[str], str | None, frozenset[str]]:
    """`_name_tokens` of an already folded name, each word a plain string."""
    folded = re.sub(r"\([^)]*\)|\"[^\"]*\"", " ", folded).replace("'", "").replace("`", "")
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
    titles: set[str] = set()
    while len(tokens) > 1 and tokens[0] in _TITLES:
        titles.add(tokens[0])
        tokens = tokens[1:]
    return tokens, generation, frozenset(titles)


def _titles_conflict(left: frozenset[str], right: frozenset[str]) -> bool:
    """One side is addressed only as a man and the other only as a woman."""
    left_male, right_male = bool(left & _MALE_TITLES), bool(right & _MALE_TITLES)
    left_female, right_female = bool(left & _FEMALE_TITLES), bool(right & _FEMALE_TITLES)
    return (left_male and right_female and not (left_female or right_male)) or (
        left_female and right_male and not (left_male or right_female)
    )


def _same(x: _Word, y: _Word) -> bool:
    return x.plain == y.plain or x.german == y.german


def _compatible(x: _Word, y: _Word) -> bool:
    if _same(x, y):
        return True
    x_plain, y_plain = x.plain, y.plain
    return (len(x_plain) == 1 and y_plain.startswith(x_plain)) or (
        len(y_plain) == 1 and x_plain.startswith(y_plain)
    )


def _aligns(short: list[_Word], long: list[_Word]) -> bool:
    """Every token of `short` matches, in order, a distinct token of `long`."""
    position = 0
    for token in short:
        while position < len(long) and not _compatible(token, long[position]):
            position += 1
        if position == len(long):
            return False
        position += 1
    return True


def _given_names_match(a: list[_Word], b: list[_Word]) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return False
    if _compatible(short[0], long[0]) and _aligns(short[1:], long[1:]):
        return True
    initial = len(long[0].plain) == 1
    return initial and _aligns(short, long[1:]) and _compatible(short[0], long[1])


def same_name(a: str | None, b: str | None) -> bool:
    """True when `a` and `b` can name the same person.

    Ignores case, accents ("José" = "Jose", "Müller" = "Muller"), punctuation, titles
    ("Dr."), honorifics ("PhD"), parenthesised or quoted asides ("John Kennedy
    (politician)", 'William "Bill" Clinton') and the "Last, First" order. A German umlaut
    may also be written out with an e ("Müller" = "Mueller", "Schrödinger" =
    "Schroedinger"; ß = ss), word by word; "Mueller" and "Muller" stay two names. The surnames (last word) must be equal; the first
    given names must agree, either in full or by initial; middle names may be present on
    one side and absent on the other, or given as initials. Hyphens split words, so
    "Jean-Paul Sartre" = "Jean Paul Sartre" = "J.-P. Sartre".

    Matches: "John F. Kennedy" = "John Kennedy" = "Kennedy, John F." =
    "JOHN FITZGERALD KENNEDY" = "J. Kennedy" = "J. F. Kennedy"; "F. Scott Fitzgerald" =
    "Scott Fitzgerald"; "Gabriel García Márquez" = "Gabriel Garcia Marquez".
    Does not match: "Jane Kennedy" vs "John Kennedy" (different first name), "John A.
    Kennedy" vs "John F. Kennedy" (conflicting middle initial), "Kennedy" vs "John Kennedy"
    (a surname alone never matches a full name), "John Kennedy Jr." vs "John Kennedy Sr."
    (a generation suffix must agree when both sides give one), "Mr. Smith" vs "Mrs. Smith"
    (when both sides give a form of address, Mr, Sir or Lord names a man and Mrs, Ms, Miss,
    Dame or Lady a woman; "Mrs." = "Ms.", and other titles such as "Dr." or "Sen." say
    nothing). Nicknames ("Bill" for "William") and reordered Eastern names ("Xi Jinping" vs
    "Jinping Xi") do not match.
    """
    left_text, right_text = as_text(a), as_text(b)
    if not left_text or not right_text:
        return False
    left, left_gen, left_titles = _name_tokens(left_text)
    right, right_gen, right_titles = _name_tokens(right_text)
    if not left or not right:
        return False
    if left_gen and right_gen and left_gen != right_gen:
        return False
    if _titles_conflict(left_titles, right_titles):
        return False
    if len(left) == 1 or len(right) == 1:
        return len(left) == len(right) and _same(left[0], right[0])
    if not _same(left[-1], right[-1]):
        return False
    return _given_names_match(left[:-1], right[:-1])
