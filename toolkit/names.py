"""Names read from the filesystem — task ids, agent and answer names, judge and review files —
in one spelling: Unicode NFC.

One name may be spelled composed (NFC: `é`) or decomposed (NFD: `e` + U+0301): macOS hands
out NFD names, most editors and shells type NFC, and an archive keeps whichever it was made
with. Linux keeps the two spellings as two names; macOS takes them as one. judgegen takes them
as one everywhere: names are compared by `canonical_name`, results are written under it, and a
file named by a task id is found in whichever spelling it has on disk (`NamedEntries`). Two
entries of one folder whose names differ only so are a `NameCollision`, naming both: taking
either would silently drop, merge or overwrite the other.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from toolkit.errors import NameCollision


def canonical_name(name: str) -> str:
    """`name` in the spelling judgegen matches and writes names in (NFC)."""
    return unicodedata.normalize("NFC", name)


def same_name(a: str, b: str) -> bool:
    """Whether `a` and `b` are one name (equal in their canonical spelling)."""
    return a == b or canonical_name(a) == canonical_name(b)


def _spelling(name: str) -> str:
    """How `name` is spelled, for a message in which both spellings print alike."""
    if name == canonical_name(name):
        return "composed, NFC"
    if name == unicodedata.normalize("NFD", name):
        return "decomposed, NFD"
    return "partly decomposed"


COLLISION_FIX = "rename one of them (or merge them into one)"
COLLISION_CONSEQUENCE = "so one would be merged into or overwrite the other"


def collision(
    paths: Iterable[Path],
    what: str,
    fix: str = COLLISION_FIX,
    consequence: str = COLLISION_CONSEQUENCE,
) -> NameCollision:
    """The error for `paths`, entries of one folder whose names are one name in NFC: what
    taking them as one does (`consequence`), and `fix`."""
    found = sorted(paths, key=lambda path: (path.name != canonical_name(path.name), str(path)))
    listed = " and ".join(f"{path} ({_spelling(path.name)})" for path in found)
    return NameCollision(
        f"{listed} are one {what} spelled in two Unicode normalization forms: judgegen (like "
        f"macOS) takes them as the same name, {consequence}; {fix}"
    )


def check_distinct(paths: Iterable[Path], what: str) -> None:
    """`NameCollision` when two of `paths` (entries of one folder, each a `what`) have one
    canonical name."""
    seen: dict[str, Path] = {}
    for path in paths:
        other = seen.setdefault(canonical_name(path.name), path)
        if other != path:
            raise collision([other, path], what)


class NamedEntries:
    """The entries of one folder ending in `suffix`, found by canonical name whatever their
    spelling on disk. The folder is listed once, when first asked."""

    def __init__(self, folder: str | Path, suffix: str, what: str) -> None:
        self.folder = Path(folder)
        self.suffix = suffix
        self.what = what
        self._by_name: dict[str, list[Path]] | None = None

    def _entries(self) -> dict[str, list[Path]]:
        if self._by_name is None:
            self._by_name = {}
            try:
                names = sorted(os.listdir(self.folder))
            except OSError:
                names = []
            for name in names:
                if name.endswith(self.suffix) and not name.startswith("."):
                    stem = canonical_name(name[: len(name) - len(self.suffix)])
                    self._by_name.setdefault(stem, []).append(self.folder / name)
        return self._by_name

    def find(self, name: str) -> Path | None:
        """The entry named `name` + suffix in any spelling; None when there is none,
        `NameCollision` when there are two."""
        found = self._entries().get(canonical_name(name), [])
        if len(found) > 1:
            raise collision(found, self.what)
        return found[0] if found else None

    def path(self, name: str) -> Path:
        """The entry named `name` + suffix as spelled on disk, else where it belongs (its
        canonical spelling)."""
        return self.find(name) or self.folder / f"{canonical_name(name)}{self.suffix}"


def entry_path(folder: str | Path, name: str, suffix: str, what: str) -> Path:
    """`folder/<name><suffix>` as spelled on disk, else in its canonical spelling: one listing
    for a name with a non-ASCII letter (see `NamedEntries` to look up many names), none for an
    ASCII name, which has one spelling."""
    if name.isascii():
        return Path(folder) / f"{name}{suffix}"
    return NamedEntries(folder, suffix, what).path(name)


def on_disk(path: str | Path) -> Path:
    """`path` as spelled on disk: each part that is not there as given is looked up in its
    folder by canonical name (a file or folder re-spelled since `path` was recorded, say by
    an archive made on macOS); `path` as given when a part is not there in any spelling.
    `NameCollision` when a part is there in two spellings."""
    path = Path(path)
    if str(path).isascii() or path.exists():  # an ASCII name has one spelling
        return path
    found = Path(path.anchor)
    for part in path.parts[len(found.parts) :]:
        here = found / part
        if not os.path.lexists(here):
            here = NamedEntries(found, "", "entry").find(part) or here
            if not os.path.lexists(here):
                return path
        found = here
    return found
