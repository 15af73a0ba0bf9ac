"""Person names: whether two spellings can name the same person."""

from __future__ import annotations

import re

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
_GENERATIONS = frozenset({"jr", "sr", "ii", "iii", "iv"})
_HONORIFIC_SUFFIXES = frozenset({"phd", "md", "esq", "obe", "mbe", "cbe", "kbe", "dds", "jd"})


def _name_tokens(text: str) -> tuple[list[str], str | None]:
    """Given names plus surname as tokens (surname last), and a generation suffix if any."""
    folded = re.sub(r"\([^)]*\)|\"[^\"]*\"", " ", fold(text)).replace("'", "").replace("`", "")
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
    left_text, right_text = as_text(a), as_text(b)
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
