"""Errors of the scale-out layer: what the CLI turns into exit codes."""

from __future__ import annotations

import sys

from toolkit.errors import InfraError, JudgegenError

INSTALL_HINT = "pip install 'judgegen[ray]'"


class RayMissing(JudgegenError):
    """`--ray` was given but Ray is not installed here (a usage error: exit 2)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"--ray needs Ray, which is not installed ({detail}); run `{INSTALL_HINT}`"
        )


class ClusterError(InfraError):
    """The cluster could not be reached, or lost the node or gateway a call needed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="cluster")


class GatewayLost(ClusterError):
    """A call to the gateway failed in Ray (its actor died, or Ray lost the call): the run's
    one LLM client, budget, ledger, cache and page store are out of reach, so every later
    evaluation would fail the same way and the run stops (kind `cluster` is a stop kind)."""

    @classmethod
    def of(cls, cause: BaseException) -> GatewayLost:
        """The loss Ray's `cause` (e.g. `ActorDiedError`) means, in one line."""
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        first = lines[0][:200] if lines else ""
        return cls(f"the gateway was lost ({type(cause).__name__}: {first})")


def is_ray_failure(error: BaseException) -> bool:
    """Whether `error` is Ray's (`RayError`: a call to an actor that died, or that Ray failed),
    without importing Ray where it is not installed (then nothing raised it)."""
    ray_exceptions = sys.modules.get("ray.exceptions")
    return ray_exceptions is not None and isinstance(error, ray_exceptions.RayError)


def raised_in_actor(error: BaseException) -> BaseException | None:
    """What an actor's own method raised, when `error` is Ray passing it on (a `RayTaskError`,
    whose `cause` it is), for the caller to raise as a local call would; None when `error` is
    not that (Ray's own failure: an actor that died, a call Ray lost)."""
    ray_exceptions = sys.modules.get("ray.exceptions")
    if ray_exceptions is None or not isinstance(error, ray_exceptions.RayTaskError):
        return None
    cause: BaseException | None = error.cause
    return cause
