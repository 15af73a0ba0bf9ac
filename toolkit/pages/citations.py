"""Which pages a folder of answers (or a webeval run) cites: the URLs `cache-pages` captures."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from toolkit.urls import extract_urls


def answer_files(root: Path) -> list[Path]:
    """The answer files under `root`: `<agent>/<task_id>/*.md` or a flat folder of `.md` files."""
    if root.is_file():
        return [root]
    return sorted(path for path in root.rglob("*.md") if path.is_file())


def answer_texts(files: Iterable[Path]) -> list[tuple[Path, str]]:
    """Each answer file with its text, as citations are read from it (invalid UTF-8 replaced)."""
    return [(path, path.read_text(encoding="utf-8", errors="replace")) for path in files]


def cited_urls(files: Iterable[Path]) -> dict[str, list[Path]]:
    """Each page cited in `files` (canonical URL, first-seen order) with the files citing it."""
    return cited_urls_in(answer_texts(files))


def cited_urls_in(answers: Iterable[tuple[Path, str]]) -> dict[str, list[Path]]:
    """Each page cited in `answers` ((file, answer text) pairs: a webeval trajectory's answer
    is a string in its JSON file, read from it) with the files citing it."""
    citations: dict[str, list[Path]] = {}
    for path, text in answers:
        for url in extract_urls(text):
            citations.setdefault(url, []).append(path)
    return citations
