"""Only the gateway holds the API keys: nothing of the driver's environment but the code path
reaches the cluster's workers, where judges run."""

from __future__ import annotations

import asyncio

import pytest

from tests.scale.local_cluster import LocalCluster
from toolkit.scale.cluster import cluster_session, provider_environment

pytestmark = pytest.mark.timeout(300)
CANARY = "sk-ant-cluster-canary-5e2d"


async def test_a_key_in_the_drivers_environment_reaches_no_worker_node(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/canary")
    async with cluster_session(cluster.address) as session:

        def environment() -> dict[str, str]:
            import os

            return dict(os.environ)

        probe = session.ray.remote(num_cpus=0)(environment)
        nodes = session.work_nodes()
        seen = await asyncio.gather(
            *(
                probe.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)
                ).remote()
                for node in nodes
            )
        )
    assert len(seen) == len(nodes) >= 2
    for env in seen:
        assert "PYTHONPATH" in env  # the probe really ran with the run's environment
        assert CANARY not in " ".join(env.values())
        assert "canary" not in env.get("OPENAI_BASE_URL", "")


def test_the_gateway_is_given_exactly_the_provider_variables() -> None:
    env = {
        "ANTHROPIC_API_KEY": CANARY,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "MY_SERVICE_API_KEY": "other",
        "HOME": "/root",
        "PATH": "/usr/bin",
        "EMPTY_API_KEY": "",
    }
    assert provider_environment(env) == {
        "ANTHROPIC_API_KEY": CANARY,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "MY_SERVICE_API_KEY": "other",
    }
