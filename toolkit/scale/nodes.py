"""The driver's handle on the node runners: least-loaded dispatch, bounded retry on node loss.

Work goes out one evaluation (or one page) at a time, to the live runner with the fewest
calls in flight, and its result comes back on its own, so the driver writes it at once and a
node that dies later loses nothing finished. A call whose runner died (its node or process
lost) is sent to another live runner, at most `attempts` times in all; then `ClusterError`
says which nodes were lost and why. A caller that must account for what a lost attempt did
(an evaluation's LLM calls) has each attempt named and is told the name of each one lost.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import NodeDiedError, ObjectLostError, RayActorError, WorkerCrashedError

from toolkit.scale.errors import ClusterError

LOST = (RayActorError, NodeDiedError, ObjectLostError, WorkerCrashedError)
DEFAULT_ATTEMPTS = 3


@dataclass
class Runner:
    """One node runner actor and what the driver knows of it."""

    node_id: str
    handle: Any
    in_flight: int = 0
    done: int = 0
    lost: str | None = None


@dataclass
class NodeSet:
    """The run's node runners, one per node, with their load and which ones were lost."""

    runners: list[Runner]
    attempts: int = DEFAULT_ATTEMPTS
    retried: int = 0

    def live(self) -> list[Runner]:
        """The runners not lost so far."""
        return [r for r in self.runners if r.lost is None]

    def _pick(self) -> Runner | None:
        live = self.live()
        return min(live, key=lambda r: r.in_flight) if live else None

    async def call(
        self,
        method: str,
        *args: Any,
        what: str,
        tag: str | None = None,
        on_lost: Callable[[str, Runner], None] | None = None,
    ) -> Any:
        """`runner.method(*args)` on the least-loaded live runner, retried on node loss.

        With a `tag`, each attempt is also sent its own name (`tag#1`, `tag#2`, … after
        `args`), and `on_lost(name, runner)` is told of each attempt lost with its runner."""
        failures: list[str] = []
        for attempt in range(max(1, self.attempts)):
            runner = self._pick()
            if runner is None:
                break
            if attempt:
                self.retried += 1
            name = f"{tag}#{attempt + 1}" if tag is not None else ""
            sent = (*args, name) if tag is not None else args
            runner.in_flight += 1
            try:
                result = await getattr(runner.handle, method).remote(*sent)
            except LOST as exc:
                reason = _short(exc)
                failures.append(f"node {runner.node_id[:12]}: {reason}")
                if runner.lost is None:
                    runner.lost = reason
                    print(
                        f"judgegen: warning: lost the Ray node {runner.node_id[:12]} ({reason}); "
                        f"{len(self.live())} node(s) left",
                        file=sys.stderr,
                    )
                if on_lost is not None and tag is not None:
                    on_lost(name, runner)
            else:
                runner.done += 1
                return result
            finally:
                runner.in_flight -= 1
        tried = "; ".join(failures) or "no live node left"
        raise ClusterError(
            f"{what} was lost with its Ray node after {len(failures)} attempt(s): {tried}"
        )

    def line(self, unit: str) -> str:
        """One line for the end of a command: nodes, losses, retries, work done per node."""
        lost = sum(1 for r in self.runners if r.lost)
        per_node = ", ".join(str(r.done) for r in self.runners)
        return (
            f"Ray: {len(self.runners)} node(s), {lost} lost, {self.retried} {unit} retried; "
            f"{unit} per node: {per_node}"
        )

    def close(self) -> None:
        """Stop every runner actor (a lost one is gone already)."""
        for runner in self.runners:
            if runner.lost is None:
                ray.kill(runner.handle, no_restart=True)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    return f"{type(exc).__name__}: {first[:200]}"
