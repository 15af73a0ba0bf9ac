"""SQLite's errors as judgegen's: a file that judgegen keeps in SQLite (the response cache, the
page store) reports a failure with its own error type, naming the file and the fix."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def sqlite_errors(error: Callable[..., Exception], path: object, access_fix: str) -> Iterator[None]:
    """Raise `error(path, cause)` for a damaged file (its type's default fix), or
    `error(path, cause, access_fix)` when a read or write failed: a disk error, a full disk, a
    lock held past the busy timeout (`sqlite3.OperationalError`)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise error(path, str(exc), access_fix) from None
    except sqlite3.DatabaseError as exc:
        raise error(path, str(exc)) from None
