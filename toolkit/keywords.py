"""Strict keyword arguments: an unknown keyword is a `TypeError` that names the closest valid one.

Judges are written by models, and a misspelled keyword (`source=` for `sources=`) must fail
loudly at the call, never be swallowed by a `**kwargs`. The decorator keeps the signature
visible to `inspect.signature` (the API reference and the lint rule read it).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def keyword_names(func: Callable[..., Any]) -> frozenset[str]:
    """The names `func` accepts as keywords (positional-or-keyword and keyword-only)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(
        name
        for name, param in inspect.signature(func).parameters.items()
        if param.kind in kinds and name != "self"
    )


def did_you_mean(given: str, known: Iterable[str]) -> str | None:
    """ "did you mean `x`?" for the closest of `known` to a misspelled `given`, or None."""
    close = difflib.get_close_matches(given, sorted(known), n=1, cutoff=0.5)
    return f"did you mean `{close[0]}`?" if close else None


def unknown_keyword_error(owner: str, given: str, valid: Iterable[str]) -> TypeError:
    """The error for keyword `given` passed to `owner`, naming the closest of `valid`."""
    valid = sorted(valid)
    hint = did_you_mean(given, valid) or f"valid keywords: {', '.join(valid)}"
    return TypeError(f"{owner}() got an unexpected keyword argument `{given}`; {hint}")


def strict_keywords(func: F) -> F:
    """Wrap `func` so an unknown keyword raises `unknown_keyword_error` (sync or async)."""
    valid = keyword_names(func)
    owner = func.__qualname__

    def check(kwargs: dict[str, Any]) -> None:
        for name in kwargs:
            if name not in valid:
                raise unknown_keyword_error(owner, name, valid)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            check(kwargs)
            return await func(*args, **kwargs)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        check(kwargs)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
