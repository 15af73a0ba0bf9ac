"""Fixtures for page tests: a tiny hand-built PDF and no proxy settings leaking in."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.pages.pdfs import build_pdf

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True, scope="module")
def _no_proxies() -> Iterator[None]:
    """Loopback test servers must be reached directly, before any module-scoped capture runs."""
    with pytest.MonkeyPatch.context() as patch:
        for name in PROXY_VARIABLES:
            patch.delenv(name, raising=False)
            patch.delenv(name.lower(), raising=False)
        yield


@pytest.fixture
def make_pdf() -> Callable[[str], bytes]:
    """Builds a tiny valid PDF showing the given text."""
    return build_pdf
