"""Settings every test runs under."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

# A `judgegen` started by a test never leaves a warm server behind, nor is served by one
# (tests/runner/test_warm_server.py turns it on for itself, in a folder of its own).
os.environ["JUDGEGEN_SERVER"] = "off"


@pytest.fixture(autouse=True)
def _import_path_restored() -> Iterator[None]:
    """Each test starts from the import path the session had: a command run in process puts
    its working folder on it (`policy_sources.importable_from_cwd`, as `--backend` factories
    are imported), and a test's folder left there would decide what a later test imports."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved
