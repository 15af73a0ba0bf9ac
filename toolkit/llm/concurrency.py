"""A limit on how many provider calls run at once (cache hits never wait for a slot)."""

from __future__ import annotations

import asyncio

from toolkit.errors import LLMError
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.provider import Provider


class ConcurrencyLimit:
    """Wraps a provider so that at most `limit` of its calls are in flight."""

    def __init__(self, inner: Provider, limit: int) -> None:
        if limit < 1:
            raise ValueError("concurrency limit must be at least 1")
        self.inner = inner
        self.limit = limit
        self.name = inner.name
        self._slots = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Wait for a free slot, then forward `request`."""
        async with self._slots:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                return await self.inner.complete(request)
            finally:
                self.in_flight -= 1

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)
