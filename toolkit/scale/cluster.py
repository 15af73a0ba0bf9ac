"""Connecting to a Ray cluster and placing the run's actors: the gateway and the node runners.

`cluster_session(address)` joins an existing cluster (`ray start --head`, workers joined with
`ray start --address`); nothing here starts one. Code reaches the nodes as the cluster's
Python environment has it: same machine, this checkout is put on PYTHONPATH; elsewhere,
install the same judgegen on every node. Only the gateway is given the API keys.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from toolkit.errors import JudgegenError
from toolkit.scale.errors import ClusterError, RayMissing
from toolkit.scale.gateway import Gateway, ServicesFactory
from toolkit.scale.messages import GatewayInfo, RunnerSettings

KEY_SUFFIXES = ("_API_KEY",)
KEY_PREFIXES = ("ANTHROPIC_", "OPENAI_")
MAX_CONCURRENCY = 1000  # calls an async actor interleaves; real limits sit in the pool and client


def import_ray() -> ModuleType:
    """The `ray` module; `RayMissing` naming the install command when it is absent."""
    try:
        import ray
    except ImportError as exc:
        raise RayMissing(str(exc)) from None
    return ray


def code_environment() -> dict[str, str]:
    """PYTHONPATH for the cluster's workers: this checkout (when not installed) first."""
    root = str(Path(__file__).resolve().parents[2])
    inherited = os.environ.get("PYTHONPATH", "")
    path = (
        inherited if "site-packages" in root else os.pathsep.join(p for p in (root, inherited) if p)
    )
    return {"PYTHONPATH": path} if path else {}


def check_same_code(codes: dict[str, str]) -> None:
    """Raise `ClusterError` when an actor (named by node) runs other judgegen code than this
    driver: its evaluations would be recorded under this code's fingerprint, so a rerun here
    would take them for this code's results."""
    from toolkit.runner.fingerprint import toolkit_identity

    ours = toolkit_identity()
    other = {node: code for node, code in codes.items() if code != ours}
    if other:
        listed = "; ".join(f"{node}: {code or 'unknown'}" for node, code in sorted(other.items()))
        raise ClusterError(
            f"{len(other)} node(s) run other judgegen code than this driver ({ours}): "
            f"{listed}. Install the same judgegen on every node (check that no PYTHONPATH or "
            "older install shadows it), then run again."
        )


def provider_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables only the gateway gets: API keys and provider endpoints, nothing else."""
    env = dict(os.environ) if env is None else env
    return {
        k: v
        for k, v in env.items()
        if v and (k.endswith(KEY_SUFFIXES) or k.startswith(KEY_PREFIXES))
    }


class ClusterSession:
    """A driver connected to a Ray cluster; places the gateway and one runner per node."""

    def __init__(self, ray: ModuleType, address: str) -> None:
        self.ray = ray
        self.address = address
        self.driver_node = ray.get_runtime_context().get_node_id()

    def _pinned(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)

    def work_nodes(self) -> list[str]:
        """Alive nodes that offer CPUs (`ray start --num-cpus=0` keeps a node free of work)."""
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        working = [n["NodeID"] for n in nodes if n.get("Resources", {}).get("CPU", 0) > 0]
        if not working:
            raise ClusterError(f"the Ray cluster at {self.address} has no alive node with CPUs")
        return sorted(working)

    def create_gateway(self, services: ServicesFactory) -> Any:
        """The gateway actor on the driver's node (being created: `start_gateway` starts it)."""
        actor = self.ray.remote(Gateway).options(
            num_cpus=0,
            max_concurrency=MAX_CONCURRENCY,
            max_restarts=0,
            scheduling_strategy=self._pinned(self.driver_node),
            # the job's env_vars are repeated: an actor's own runtime_env need not merge them
            runtime_env={"env_vars": {**code_environment(), **provider_environment()}},
        )
        return actor.remote(os.getcwd(), services)

    async def start_gateway(self, gateway: Any) -> GatewayInfo:
        """Build the gateway's services; raises when they fail."""
        from ray.exceptions import RayActorError

        try:
            info: GatewayInfo = await gateway.start.remote()
        except RayActorError as exc:
            raise ClusterError(f"the gateway actor could not start: {exc}") from None
        if info.error:
            raise JudgegenError(f"the gateway could not start the run's services: {info.error}")
        check_same_code({f"{self.driver_node} (the gateway)": info.code})
        return info

    async def start_runners(
        self,
        gateway: Any = None,
        settings: RunnerSettings | None = None,
        attempts: int = 3,
    ) -> Any:
        """One node runner per working node, each up and answering, as a `NodeSet`."""
        from toolkit.scale.node import NodeRunner
        from toolkit.scale.nodes import NodeSet, Runner

        node_ids = self.work_nodes()
        if settings is not None:
            per_node = math.ceil(settings.jobs / len(node_ids))
            settings = settings.model_copy(update={"jobs": max(1, per_node)})
        actor = self.ray.remote(NodeRunner)
        runners = [
            Runner(
                node_id,
                actor.options(
                    num_cpus=0,
                    max_concurrency=MAX_CONCURRENCY,
                    max_restarts=0,
                    scheduling_strategy=self._pinned(node_id),
                ).remote(node_id, gateway, settings),
            )
            for node_id in node_ids
        ]
        await asyncio.gather(*(runner.handle.ready.remote() for runner in runners))
        codes = await asyncio.gather(*(runner.handle.code.remote() for runner in runners))
        check_same_code(dict(zip(node_ids, codes, strict=True)))
        return NodeSet(runners, attempts=attempts)

    async def stop_runners(self, nodes: Any) -> None:
        """Close each live runner's pool and browser, then stop the actors."""
        for runner in nodes.live():
            try:
                await runner.handle.aclose.remote()
            except Exception as exc:  # a node lost while closing: its processes went with it
                print(f"judgegen: warning: closing a node runner: {exc}", file=sys.stderr)
        nodes.close()


@contextmanager
def _quiet_ray_logs() -> Iterator[None]:
    logger = logging.getLogger("ray")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why nothing answers at a `host:port` address (None: something does, or the address is
    `auto` or a `ray://` URL, which Ray resolves itself). Ray would wait minutes instead."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return None


@asynccontextmanager
async def cluster_session(address: str) -> AsyncIterator[ClusterSession]:
    """Connect to the cluster at `address` (`auto`: the one started on this machine)."""
    ray = import_ray()
    problem = await asyncio.to_thread(unreachable, address)
    if problem is not None:
        raise ClusterError(
            f"no Ray cluster answers at {address} ({problem}); start one with "
            "`ray start --head` (see docs/scale-out.md)"
        )
    with _quiet_ray_logs():
        try:
            ray.init(
                address=address,
                runtime_env={"env_vars": code_environment()},
                logging_level=logging.WARNING,
                log_to_driver=True,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(
                f"cannot join the Ray cluster at {address}: {exc}; start one with "
                "`ray start --head` (see docs/scale-out.md)"
            ) from None
        try:
            yield ClusterSession(ray, address)
        finally:
            ray.shutdown()
