"""Values that may or may not need awaiting: user callables and page sources can be either."""

from __future__ import annotations

import inspect
from typing import Any


async def resolve(value: Any) -> Any:
    """`value`, awaited first when it is awaitable (a coroutine from an async callable)."""
    return await value if inspect.isawaitable(value) else value
