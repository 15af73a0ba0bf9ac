"""`judgegen cache`: inspect, export, import and clear the LLM response cache."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from toolkit.errors import CACHE_ACCESS_FIX, DAMAGED_CACHE_FIX, CacheError, SpecError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.settings import LLMSettings

cache_path_option = click.option(
    "--cache-path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Cache file (default: JUDGEGEN_CACHE_PATH, judgegen.toml, .judgegen/llm-cache.sqlite).",
)


OWN_FIXES = {
    DAMAGED_CACHE_FIX: "move it aside or delete it (a new cache starts empty), or pass "
    "--cache-path elsewhere",
    CACHE_ACCESS_FIX: "check its disk (free space, permissions) and that no other process "
    "holds it locked, then rerun; or pass --cache-path elsewhere",
}
"""These commands' fixes for an unusable cache: the cache's own fixes also offer
--cache-mode off, an option of the commands that call the LLM, not of these."""


def _open(cache_path: Path | None, *, must_exist: bool = True) -> ResponseCache:
    try:
        path = cache_path or LLMSettings.from_env_and_file().cache_path
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None
    if must_exist and not path.is_file():
        raise click.UsageError(f"no response cache at {path} (use --cache-path)")
    return ResponseCache(path)


def _guarded(action: Callable[[], Any]) -> Any:
    """Run `action`; an input error exits 2, a database failure exits 3."""
    try:
        return action()
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None
    except CacheError as exc:
        fix = OWN_FIXES.get(exc.fix, exc.fix)
        click.echo(f"error: {CacheError(exc.path, exc.cause, fix)}", err=True)
        sys.exit(3)
    except (sqlite3.Error, OSError) as exc:
        click.echo(f"error: response cache failed: {exc}", err=True)
        sys.exit(3)


@click.group()
def cache() -> None:
    """Inspect and move the LLM response cache (recordings for reruns, tests and demos).

    \b
    Example:
      judgegen cache stats
      judgegen cache export exported-recordings
      judgegen cache import recordings/rust_2024_edition --cache-path imported.sqlite

    \b
    Exit codes: 0 ok; 1 `export` skipped unreadable entries; 2 usage or input error
    (missing cache, bad record file); 3 the cache database failed.
    """


@cache.command()
@cache_path_option
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(cache_path: Path | None, as_json: bool) -> None:
    """Entries by model, purpose and origin, those never served (truncated, refused, empty
    or unreadable: a lookup treats them as misses), and the size on disk.

    An entry's origin says where its answer came from: `live` (recorded from a provider
    call), `scripted` (a scripted policy's fixtures: no model called), `unknown` (imported
    from a record that does not say, such as a hand-written one), `before_origins` (stored
    before the cache kept origins), `replay` (stored by an older judgegen while replaying
    recordings, their own origin not kept). An answer stored while replaying keeps the
    origin its record says."""
    figures = _guarded(lambda: _open(cache_path).stats())
    if as_json:
        click.echo(json.dumps(figures.model_dump(mode="json"), sort_keys=True, indent=2))
        return
    unserved = figures.never_served
    never = (
        f" ({unserved} never served: truncated, refused, empty or unreadable)" if unserved else ""
    )
    click.echo(
        f"{figures.path}: {figures.entries} entries{never}, {figures.blobs} blobs, "
        f"{figures.bytes / 1024:.0f} KiB"
    )
    for label, counts in (
        ("model", figures.by_model),
        ("purpose", figures.by_purpose),
        ("origin", figures.by_origin),
    ):
        for name, count in sorted(counts.items()):
            click.echo(f"  {label} {name}: {count}")


@cache.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@cache_path_option
def export(directory: Path, cache_path: Path | None) -> None:
    """Write every entry to DIRECTORY as one reviewable JSON file per request.

    Each file keeps where its answer came from (`origin`: recorded live, from a fixture, or
    imported, and from which file). An entry that cannot be read is not written: the command
    says how many and exits 1, as the folder then lacks their answers (a replay of it misses
    those requests)."""
    count, skipped = _guarded(lambda: _open(cache_path).export_dir(directory))
    click.echo(f"exported {count} records to {directory}", err=True)
    if skipped:
        click.echo(
            f"error: {skipped} cache entr{'y' if skipped == 1 else 'ies'} could not be read "
            f"and {'was' if skipped == 1 else 'were'} not exported, so {directory} lacks "
            f"{'its answer' if skipped == 1 else 'their answers'} (a replay of it misses "
            f"{'that request' if skipped == 1 else 'those requests'}). Fix: rerun the command "
            "that recorded them (an unreadable entry is a cache miss, and the new answer "
            "replaces it), then export again",
            err=True,
        )
        sys.exit(1)


@cache.command(name="import")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@cache_path_option
@click.option(
    "--replace",
    is_flag=True,
    help="Store the imported answers over entries that answer the same requests differently "
    "(without it, such an entry stops the import and nothing is stored).",
)
def import_(directory: Path, cache_path: Path | None, replace: bool) -> None:
    """Load the JSON records in DIRECTORY (from `cache export`) into the cache.

    Each entry keeps the origin its record says, with the file and time of this import. A
    record that says none (written by hand, or exported before origins were kept) is stored
    as of unknown origin: the command counts them, and every run they answer says how many
    of its answers came from them, never counting them as a model's.

    A record is refused (exit 2, nothing stored) if its file has a field judgegen does not
    know, its request no longer hashes to its key (changed after it was recorded), another
    file answers the same request differently, or the cache already answers its request
    differently and --replace is not given.
    """
    report = _guarded(
        lambda: _open(cache_path, must_exist=False).import_dir(directory, replace=replace)
    )
    click.echo(f"imported {report.line()} from {directory}", err=True)
    note = report.origin_note()
    if note:
        click.echo(note, err=True)


@cache.command()
@cache_path_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def clear(cache_path: Path | None, yes: bool) -> None:
    """Delete every entry of the response cache."""
    store = _guarded(lambda: _open(cache_path))
    if not yes:
        click.confirm(f"Delete every entry of {store.path}?", abort=True, err=True)
    count = _guarded(store.clear)
    click.echo(f"cleared {count} records from {store.path}", err=True)
