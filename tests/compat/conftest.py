"""Shared by the compat tests: one cited page with a screenshot, as a judge's page source."""

from __future__ import annotations

PAGE = "https://shop.example/monitor"


class Pages:
    """One page with a screenshot."""

    def get(self, url: str) -> str | None:
        return "Dell S3422DWG: $299" if url == PAGE else None

    def screenshot(self, url: str) -> str | None:
        return "aGVsbG8=" if url == PAGE else None
