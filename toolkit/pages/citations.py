"""Which pages a folder of answers cites: the URLs `cache-pages` captures."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from toolkit.urls import extract_urls


def answer_files(root: Path) -> list[Path]:
    """The answer files under `root`: `<agent>/<task_id>/*.md` or a flat folder of `.md` files."""
    if root.is_file():
        return [root]
    return sorted(path for path in root.rglob("*.md") if path.is_file())


def cited_urls(files: Iterable[Path]) -> dict[str, list[Path]]:
    """Each page cited in `files` (canonical URL, first-seen order) with the files citing it."""
    citations: dict[str, list[Path]] = {}
    for path in files:
        for url in extract_urls(path.read_text(encoding="utf-8", errors="replace")):
            citations.setdefault(url, []).append(path)
    return citations
