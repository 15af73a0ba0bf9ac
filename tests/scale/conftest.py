"""One real Ray cluster on this machine for the scale-out tests: a head and a worker node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scale.local_cluster import LocalCluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """A head and one worker node, one CPU each; tests may add (and kill) nodes of their own."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install '.[ray]'")
    local = LocalCluster()
    try:
        local.start_head(cpus=1)
        local.add_worker(cpus=1)
        yield local
    finally:
        local.stop()
