"""`mind2web2.utils` for imported judges: the page-cache stand-ins and their submodules."""

from __future__ import annotations

from toolkit.compat.utils import cache, cache_filesys
from toolkit.compat.utils.cache import CacheClass
from toolkit.compat.utils.cache_filesys import CacheFileSys

__all__ = ["CacheClass", "CacheFileSys", "cache", "cache_filesys"]
