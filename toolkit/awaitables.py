"""Values that may or may not need awaiting (user callables and page sources can be either),
and futures whose outcome may find no waiter."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio


async def resolve(value: Any) -> Any:
    """`value`, awaited first when it is awaitable (a coroutine from an async callable)."""
    return await value if inspect.isawaitable(value) else value


def mark_retrieved(future: asyncio.Future[Any]) -> None:
    """A done-callback marking `future`'s exception as seen: its waiters still get it, and
    one nobody waits for any more (given up on) is not logged as never retrieved."""
    if not future.cancelled():
        future.exception()
