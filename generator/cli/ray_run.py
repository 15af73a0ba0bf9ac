"""`judgegen run --ray`: the same run, with judges on a Ray cluster's nodes.

Kept apart from `run.py` so a local run never loads it (nor Ray). The run's lock, exit codes
and output are `run`'s own; the end-of-run lines add the cluster's (nodes, losses, retries).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from generator.cli.common import open_pages
from generator.cli.ray_options import gateway_services, require_ray
from generator.cli.run import _progress
from toolkit.llm.settings import LLMSettings
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.report import RunReport
from toolkit.runner.scheduler import RunOptions
from toolkit.sandbox.protocol import SandboxLimits


def cluster_work(
    inputs: list[AnswerInput],
    *,
    address: str,
    attempts: int,
    backend_spec: str | None,
    settings: LLMSettings,
    pages: Path | None,
    maps_spec: str | None,
    options: RunOptions,
    timeout_s: float,
    sandbox: bool,
) -> Callable[[], Coroutine[Any, Any, tuple[RunReport, Any]]]:
    """The run of `inputs` on the cluster at `address`: (report, its end-of-run lines).

    The backend is built at the gateway from the same flags and settings; a usage error
    there is exit 2, as locally.
    """
    require_ray()
    from toolkit.scale.messages import RunnerSettings
    from toolkit.scale.run import run_on_cluster

    runner = RunnerSettings(
        sandbox=sandbox,
        limits=SandboxLimits(timeout_s=timeout_s),
        jobs=options.jobs,
        require_sandbox=options.require_sandbox,
    )
    services = functools.partial(gateway_services, backend_spec, settings, pages, maps_spec)

    async def work() -> tuple[RunReport, Any]:
        done = await run_on_cluster(
            inputs,
            address=address,
            services=services,
            options=options,
            runner=runner,
            pages=open_pages(pages),
            progress=_progress(len(inputs)),
            attempts=attempts,
        )
        return done.report, done

    return work
