"""Errors of the scale-out layer: what the CLI turns into exit codes."""

from __future__ import annotations

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
