"""`mind2web2.utils.cache` (older judges): `CacheClass`, the same stand-in as `CacheFileSys`."""

from __future__ import annotations

from toolkit.compat.utils.cache_filesys import CacheFileSys

__all__ = ["CacheClass"]

CacheClass = CacheFileSys
