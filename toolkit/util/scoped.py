"""A context variable set for the length of a block: one way for the per-evaluation trackers
(abandoned calls, deferred commits, page reads) to install theirs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def scoped(var: ContextVar[T | None], value: T) -> Iterator[T]:
    """Set `var` to `value` inside the block (tasks started inside inherit it), yield
    `value`, and restore what `var` held before, however the block ends."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)
