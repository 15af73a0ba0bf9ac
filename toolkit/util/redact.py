"""Keeping API keys out of everything judgegen writes or raises.

Keys are read by the SDKs from the environment and never pass through judgegen's own data;
`redact` is the last line of defence for text that came back from an SDK (error bodies).
"""

from __future__ import annotations

import os

SECRET_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN", "_SECRET", "_TOKEN")
MIN_SECRET_LEN = 8


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_SUFFIXES) and len(value) >= MIN_SECRET_LEN
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every credential from the environment replaced by `[REDACTED]`."""
    for value in secret_values():
        text = text.replace(value, "[REDACTED]")
    return text
