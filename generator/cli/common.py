"""Helpers several commands share, kept light: `judgegen run` imports this module, so it must
not pull in generation code (libcst, lint rules, Jinja2 environments)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


def open_pages(pages: Path | None) -> Any:
    """The read-only page store at `pages`, or None."""
    if pages is None:
        return None
    from toolkit.pages.store import PageStore

    try:
        return PageStore(pages, readonly=True)
    except (OSError, FileNotFoundError) as exc:
        raise click.UsageError(f"cannot open page store {pages}: {exc}") from exc
