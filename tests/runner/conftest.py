"""Shared fixtures of the runner tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import build_page_store, copy_fixtures, load_code_now


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A copy of the runner fixtures (answers, judges, trajectories) and a page store."""
    copy_fixtures(tmp_path)
    build_page_store(tmp_path / "pages")
    return tmp_path


@pytest.fixture
def code_loaded_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """judgegen's code counts as loaded when the test starts, not when the session did
    (`load_code_now`): for tests that expect an in-process run to leave a fresh stamp, or
    to leave none for a reason of their own."""
    load_code_now(monkeypatch)
