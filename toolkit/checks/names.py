"""Person names: whether two spellings can name the same person."""

from __future__ import annotations

import re
from typing import NamedTuple

from toolkit.checks.folding import (
    as_text,
    drop_umlauts,
    fold_keeping_umlauts,
    has_umlauts,
    transliterations,
)

# Forms of address, including office and rank abbreviations agents copy from news copy
# ("Sen.", "Rev.", "Gen.") and German ones ("Herr", "Hr.", "Frau"); words that are also given
# names ("King", "Prince") are left out. Umlauts dropped: "Fräulein" is "fraulein".
_TITLES = frozenset(
    {
        *("dr", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sir", "dame", "lord"),
        *("lady", "rev", "reverend", "hon", "sen", "senator", "rep", "gov", "governor"),
        *("pres", "president", "gen", "col", "capt", "lt", "sgt", "maj", "adm", "fr", "rabbi"),
        *("herr", "herrn", "hr", "frau", "fraulein", "frl"),
    }
)
# Forms of address that say a man or a woman: "Mr. Smith" and "Mrs. Smith" are two people, and
# so are "Herr Müller" and "Frau Müller".
_GERMAN_MALE_TITLES = frozenset({"herr", "herrn", "hr"})
_MALE_TITLES = frozenset({"mr", "sir", "lord", *_GERMAN_MALE_TITLES})
_FEMALE_TITLES = frozenset({"mrs", "ms", "miss", "dame", "lady", "frau", "fraulein", "frl"})
# "Fr." is Frau in German and Father (a priest) in English: it says a woman only against a
# German man's form of address ("Hr. Müller" vs "Fr. Müller"), never against "Mr." or "Sir".
_FRAU_OR_FATHER = "fr"
_GENERATIONS = frozenset({"jr", "sr", "ii", "iii", "iv"})
_HONORIFIC_SUFFIXES = frozenset({"phd", "md", "esq", "obe", "mbe", "cbe", "kbe", "dds", "jd"})


class _Word(NamedTuple):
    """One word of a name, folded with its German umlauts kept ("müller") and dropped
    ("muller"); see `_same` for when two words are equal."""

    kept: str
    plain: str


def _name_tokens(text: str) -> tuple[list[_Word], str | None, frozenset[str]]:
    """Given names plus surname as words (surname last), a generation suffix if any, and the
    leading titles."""
    tokens, generation, titles = _folded_tokens(fold_keeping_umlauts(text))
    return [_Word(token, drop_umlauts(token)) for token in tokens], generation, titles


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
            plain = drop_umlauts(token)
            if plain in _GENERATIONS:
                generation = plain
            elif plain not in _HONORIFIC_SUFFIXES:
                rest.append(token)
        if rest:
            kept.append(rest)
    if len(kept) == 2:
        kept = [kept[1], kept[0]]
    tokens = [token for part in kept for token in part]
    titles: set[str] = set()
    while len(tokens) > 1 and drop_umlauts(tokens[0]) in _TITLES:
        titles.add(drop_umlauts(tokens[0]))
        tokens = tokens[1:]
    return tokens, generation, frozenset(titles)


def _titles_conflict(left: frozenset[str], right: frozenset[str]) -> bool:
    """One side is addressed only as a man and the other only as a woman."""
    left_male, right_male = bool(left & _MALE_TITLES), bool(right & _MALE_TITLES)
    left_female, right_female = _addressed_as_woman(left, right), _addressed_as_woman(right, left)
    return (left_male and right_female and not (left_female or right_male)) or (
        left_female and right_male and not (left_male or right_female)
    )


def _addressed_as_woman(titles: frozenset[str], other: frozenset[str]) -> bool:
    """`titles` name a woman; "Fr." does only when `other` is German ("Herr"), so a priest
    ("Fr. Brown", Father) still matches "Mr. Brown"."""
    if titles & _FEMALE_TITLES:
        return True
    return _FRAU_OR_FATHER in titles and bool(other & _GERMAN_MALE_TITLES)


def _same(x: _Word, y: _Word) -> bool:
    """Two words are equal folded, or with a German umlaut on one side kept, dropped or
    written out, each umlaut on its own ("Jürgen" = "Jurgen" = "Juergen"); "Mueller" and
    "Muller", neither with an umlaut, stay two names."""
    if x.plain == y.plain:
        return True
    if not (has_umlauts(x.kept) or has_umlauts(y.kept)):
        return False
    return bool(transliterations(x.kept).fullmatch(y.kept)) or bool(
        transliterations(y.kept).fullmatch(x.kept)
    )


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
    ("Dr.", "Herr", "Frau"), honorifics ("PhD"), parenthesised or quoted asides ("John
    Kennedy (politician)", 'William "Bill" Clinton') and the "Last, First" order. A German
    umlaut may also be written out with an e ("Müller" = "Mueller", "Schrödinger" =
    "Schroedinger"; ß = ss), each umlaut either way on its own: "Juergen Muller" =
    "Jurgen Mueller" = "Jürgen Müller", "Muehlhauser" = "Mühlhäuser". Only against an
    umlaut: "Mueller" and "Muller" stay two names, as do "Müller" and "Miller". The surnames
    (last word) must be equal; the first given names must agree, either in full or by
    initial; middle names may be present on one side and absent on the other, or given as
    initials. Hyphens split words, so "Jean-Paul Sartre" = "Jean Paul Sartre" =
    "J.-P. Sartre".

    Matches: "John F. Kennedy" = "John Kennedy" = "Kennedy, John F." =
    "JOHN FITZGERALD KENNEDY" = "J. Kennedy" = "J. F. Kennedy"; "F. Scott Fitzgerald" =
    "Scott Fitzgerald"; "Gabriel García Márquez" = "Gabriel Garcia Marquez".
    Does not match: "Jane Kennedy" vs "John Kennedy" (different first name), "John A.
    Kennedy" vs "John F. Kennedy" (conflicting middle initial), "Kennedy" vs "John Kennedy"
    (a surname alone never matches a full name), "John Kennedy Jr." vs "John Kennedy Sr."
    (a generation suffix must agree when both sides give one), "Mr. Smith" vs "Mrs. Smith"
    and "Herr Müller" vs "Frau Müller" (when both sides give a form of address, Mr, Sir,
    Lord, Herr or Hr. names a man and Mrs, Ms, Miss, Dame, Lady, Frau or Fräulein a woman;
    "Fr." is a woman only against Herr or Hr., as it is also Father; "Mrs." = "Ms.", and
    other titles such as "Dr.", "Prof." or "Sen." say nothing). Nicknames ("Bill" for "William") and reordered Eastern names ("Xi Jinping" vs
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
