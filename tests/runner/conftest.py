"""Shared fixtures of the runner tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import build_page_store, copy_fixtures


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A copy of the runner fixtures (answers, judges, trajectories) and a page store."""
    copy_fixtures(tmp_path)
    build_page_store(tmp_path / "pages")
    return tmp_path
