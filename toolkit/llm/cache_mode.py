"""`CacheMode`, in a module of its own so the CLI can offer the modes (`--cache-mode`, also in
`--help`) without importing the cache, its pydantic models and the providers."""

from __future__ import annotations

from enum import StrEnum


class CacheMode(StrEnum):
    """How the cache treats a request."""

    OFF = "off"
    """Always call the provider; read and write nothing."""
    RW = "rw"
    """Serve hits; call the provider on a miss and store the answer (the default)."""
    RO = "ro"
    """Serve hits; call the provider on a miss but store nothing."""
    STRICT = "strict"
    """Serve hits; a miss is an error naming the nearest recorded request (tests, CI, demos)."""
    REFRESH = "refresh"
    """Always call the provider and overwrite what is stored."""
