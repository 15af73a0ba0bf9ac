"""The pydantic configuration of records a run builds only after its first LLM call
(results, fingerprints, metrics, the run report): their validators are built on first use,
not at import, which keeps ~60 ms of model building off the path from `judgegen run` to its
first call. Not for models a sandboxed job uses: each job would build them again."""

from __future__ import annotations

from pydantic import ConfigDict

DEFERRED = ConfigDict(defer_build=True)
DEFERRED_FROZEN = ConfigDict(defer_build=True, frozen=True)
