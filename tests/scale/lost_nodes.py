"""A scripted model that kills the node running an evaluation in the middle of an LLM call,
for cluster runs on in-process actors (`fake_cluster`): `judgegen run --provider
scripted:tests.scale.lost_nodes:policy` with `KnownNodes` as the fake session.

Kept out of the test modules so the provider and the tests import one copy of it (pytest
imports a test module under another name).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fixtures.runner.llm_policy import policy as answer
from tests.scale.fake_cluster import FakeSession
from toolkit.llm import LLMRequest
from toolkit.scale.messages import RunnerSettings
from toolkit.scale.nodes import NodeSet

POLICY = "scripted:tests.scale.lost_nodes:policy"


class Killer:
    """Kills the node running the evaluation while the gateway answers the `at`-th LLM call of
    the run (counting from 1), for each number in `at`; that call then takes `late_s` more,
    so it is still running at the gateway when the driver learns of the loss."""

    def __init__(self, *at: int, late_s: float = 0.3) -> None:
        self.at = set(at)
        self.late_s = late_s
        self.calls = 0
        self.nodes: NodeSet | None = None
        self.killed: list[str] = []

    async def __call__(self, request: LLMRequest) -> dict[str, Any]:
        self.calls += 1
        if self.calls in self.at:
            assert self.nodes is not None
            (victim,) = [r for r in self.nodes.runners if r.in_flight and r.lost is None]
            victim.handle.kill()
            self.killed.append(victim.node_id)
            await asyncio.sleep(self.late_s)
        return answer(request)


KILLER: Killer | None = None
"""What `policy` does (set by a test, for one run)."""


async def policy(request: LLMRequest) -> dict[str, Any]:
    """The scripted model of these runs (`--provider scripted:…:policy`), killing as `KILLER`
    says."""
    assert KILLER is not None
    return await KILLER(request)


class KnownNodes(FakeSession):
    """A fake session that hands its node runners to the killer."""

    async def start_runners(
        self, gateway: Any, settings: RunnerSettings, attempts: int = 3
    ) -> NodeSet:
        nodes = await super().start_runners(gateway, settings, attempts)
        assert KILLER is not None
        KILLER.nodes = nodes
        return nodes
