"""Child process for the concurrent-writers test: stores COUNT records into one cache file."""

from __future__ import annotations

import sys

from toolkit.llm.cache import CacheRecord, ResponseCache
from toolkit.llm.models import LLMRequest, LLMResponse, Message


def main(path: str, prefix: str, count: int, shared: int) -> None:
    """Write `count` records named by `prefix` plus `shared` records both writers share."""
    cache = ResponseCache(path)
    names = [f"{prefix}-{i}" for i in range(count)] + [f"shared-{i}" for i in range(shared)]
    for name in names:
        request = LLMRequest(provider="scripted", model="m", messages=[Message.user(name)])
        cache.put(CacheRecord.of(request, LLMResponse(text=name, model="m")))
    cache.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
