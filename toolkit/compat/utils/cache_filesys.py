"""`mind2web2.utils.cache_filesys` for imported judges: a stand-in for their page cache.

Judges only receive a cache and pass it to `initialize(global_cache=...)`; in judgegen the
runner owns the page store, so the stand-in holds nothing and is never read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CacheFileSys"]


class CacheFileSys:
    """Accepts Mind2Web 2's constructor arguments and keeps none; pages come from the runner."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Accept and ignore `task_dir` and any other arguments."""

    def __repr__(self) -> str:
        return "CacheFileSys(stand-in: pages come from the judgegen runner)"
