"""Ray actors in this process, for cluster-run tests that need no cluster.

The real `Gateway`, `NodeRunner`, `NodeSet` and `ClusterExecutor` are called as Ray calls
them: arguments and results pickled, each call in a fresh context (as in another process).
An actor can be made to die: every later call to it raises Ray's `ActorDiedError`, as a call
to a dead actor does. `FakeSession` stands in for `ClusterSession` under `run_on_cluster`.
"""

from __future__ import annotations

import asyncio
import contextvars
import pickle
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest

ray_exceptions = pytest.importorskip("ray.exceptions", reason="the ray extra is not installed")

from toolkit.scale.gateway import Gateway, ServicesFactory  # noqa: E402
from toolkit.scale.messages import GatewayInfo, RunnerSettings  # noqa: E402
from toolkit.scale.node import NodeRunner  # noqa: E402
from toolkit.scale.nodes import NodeSet, Runner  # noqa: E402


class Actor:
    """`actor.method.remote(*args)` awaits `obj.method(*args)` as a Ray actor handle would."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.dead = False

    def __getattr__(self, name: str) -> Method:
        if name.startswith("_"):
            raise AttributeError(name)
        return Method(self, name)


class Method:
    """One method of an `Actor`; `remote` starts the call in its own task and context."""

    def __init__(self, actor: Actor, name: str) -> None:
        self.actor = actor
        self.name = name

    def remote(self, *args: Any) -> asyncio.Task[Any]:
        sent = pickle.loads(pickle.dumps(args))
        return asyncio.get_running_loop().create_task(
            self._call(sent), context=contextvars.Context()
        )

    async def _call(self, args: tuple[Any, ...]) -> Any:
        if self.actor.dead:
            raise ray_exceptions.ActorDiedError()
        result = await getattr(self.actor.obj, self.name)(*args)
        return pickle.loads(pickle.dumps(result))


class FakeSession:
    """A `ClusterSession` whose gateway and node runners are `Actor`s in this process."""

    ray = SimpleNamespace(exceptions=ray_exceptions, kill=lambda actor, no_restart=True: None)

    def __init__(self, cwd: str, nodes: int = 1) -> None:
        self.cwd = cwd
        self.nodes = nodes
        self.gateway: Actor | None = None

    def create_gateway(self, services: ServicesFactory) -> Actor:
        self.gateway = Actor(Gateway(self.cwd, services))
        return self.gateway

    async def start_gateway(self, gateway: Actor) -> GatewayInfo:
        info: GatewayInfo = await gateway.start.remote()
        return info

    async def start_runners(
        self, gateway: Actor, settings: RunnerSettings, attempts: int = 3
    ) -> NodeSet:
        return node_set(gateway, settings, self.nodes, attempts)

    async def stop_runners(self, nodes: NodeSet) -> None:
        for runner in nodes.live():
            await runner.handle.aclose.remote()


def node_set(gateway: Actor, settings: RunnerSettings, nodes: int, attempts: int = 3) -> NodeSet:
    """One node runner `Actor` per node, calling `gateway`."""
    runners = [
        Runner(
            f"node{index:02d}".ljust(16, "0"), Actor(NodeRunner(f"node{index}", gateway, settings))
        )
        for index in range(nodes)
    ]
    return NodeSet(runners, attempts=attempts)


def fake_sessions(session: FakeSession) -> Callable[[str], Any]:
    """A `cluster_session` that yields `session` whatever the address."""

    @asynccontextmanager
    async def cluster_session(address: str) -> AsyncIterator[FakeSession]:
        yield session

    return cluster_session
