"""Ray actors in this process, for cluster-run tests that need no cluster.

The real `Gateway`, `NodeRunner`, `NodeSet` and `ClusterExecutor` are called as Ray calls
them: arguments and results pickled, each call in a fresh context (as in another process).
An actor can be made to die: every later call to it raises Ray's `ActorDiedError`, as a call
to a dead actor does (`actor.dead = True`); `actor.kill()` also fails the calls it is in the
middle of, and stops its own work where it waits, as a lost node's process stops: the calls it
made go on at their actor, but their replies are lost and it sends nothing more. `FakeSession`
stands in for `ClusterSession` under `run_on_cluster`.
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


class NodeDied(BaseException):
    """Raised in a killed actor's own work by each call it waits on: its process is gone, so
    its code stops there (a `BaseException`, past the judge's and the runner's handlers),
    having sent nothing more."""


class Actor:
    """`actor.method.remote(*args)` awaits `obj.method(*args)` as a Ray actor handle would."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.dead = False
        self._serving: set[asyncio.Future[Any]] = set()
        """The replies of calls to this actor in flight."""
        self._waiting: set[asyncio.Future[Any]] = set()
        """The replies this actor's work waits for from other actors."""

    def __getattr__(self, name: str) -> Method:
        if name.startswith("_"):
            raise AttributeError(name)
        return Method(self, name)

    def kill(self) -> None:
        """Die now, as a node's process does: the calls it is in the middle of fail for their
        callers (`ActorDiedError`), as later calls do; its own work stops (`NodeDied`) at the
        calls it waits on, which go on at their actor, their replies lost."""
        self.dead = True
        for reply in list(self._serving):
            if not reply.done():
                reply.set_exception(ray_exceptions.ActorDiedError())
        for reply in list(self._waiting):
            if not reply.done():
                reply.set_exception(NodeDied())


_caller: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("caller", default=None)
"""The actor whose work is running (None: the driver's)."""


class Method:
    """One method of an `Actor`; `remote` starts the call in its own task and context."""

    def __init__(self, actor: Actor, name: str) -> None:
        self.actor = actor
        self.name = name

    def remote(self, *args: Any) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        caller = _caller.get()
        if caller is not None and caller.dead:  # a dead process sends nothing
            reply.set_exception(NodeDied())
            return reply
        sent = pickle.loads(pickle.dumps(args))
        context = contextvars.Context()
        context.run(_caller.set, self.actor)
        work = loop.create_task(self._call(sent), context=context)
        self.actor._serving.add(reply)
        if caller is not None:
            caller._waiting.add(reply)

        def answer(done: asyncio.Task[Any]) -> None:
            self.actor._serving.discard(reply)
            if caller is not None:
                caller._waiting.discard(reply)
            error = None if done.cancelled() else done.exception()  # retrieved, whoever waits
            if reply.done():  # failed as this actor or its caller died
                return
            if done.cancelled():
                reply.cancel()
            elif error is not None:
                reply.set_exception(error)
            else:
                reply.set_result(done.result())

        def cancelled(_: asyncio.Future[Any]) -> None:
            if reply.cancelled():  # the caller stopped waiting: the call is cancelled there too
                work.cancel()

        work.add_done_callback(answer)
        reply.add_done_callback(cancelled)
        return reply

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
            f"node{index:02d}".ljust(16, "0"),
            Actor(NodeRunner(f"node{index}", gateway, settings, cancel=_cancel)),
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


def _cancel(pending: asyncio.Future[Any]) -> None:
    """Cancel an in-process actor's call, as `ray.cancel` cancels a real one (which, given
    this future, would quietly start a real Ray instance)."""
    pending.cancel()
