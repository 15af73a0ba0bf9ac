"""`judgegen run --ray`: the same run, with judges on a Ray cluster's nodes.

Kept apart from `run.py` so a local run never loads it (nor Ray). The run's lock, exit codes
and output are `run`'s own; the end-of-run lines add the cluster's (nodes, losses, retries).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import click

from generator.cli.common import open_pages
from generator.cli.ray_options import require_ray
from generator.cli.run_backend import RunBackend
from toolkit.errors import SpecError
from toolkit.llm.settings import LLMSettings
from toolkit.llm.usage import UsageSummary
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.options import RunOptions
from toolkit.runner.report import Progress, RunReport
from toolkit.sandbox.protocol import SandboxLimits
from toolkit.scale.gateway import GatewayServices
from toolkit.tools.maps import MapsProvider, maps_tools

MapsLoader = Callable[[], MapsProvider | None]


def gateway_services(
    backend_spec: str | None, settings: LLMSettings, pages: Path | None, maps: MapsLoader
) -> GatewayServices:
    """The run's services, built in the gateway (keys, cache, ledger and budget live there)
    as a local `judgegen run` builds them."""
    try:
        judging = RunBackend(backend_spec, settings)
        tools = maps_tools(maps())
        page_store = open_pages(pages)
    except (SpecError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from exc

    def usage_line() -> str | None:
        reporter = judging.usage_reporter
        return reporter.summary_line() if reporter is not None else None

    def usage() -> UsageSummary | None:
        reporter = judging.usage_reporter
        return reporter.summary() if reporter is not None else None

    return GatewayServices(
        backend=judging.build(),
        identity=judging.spec,
        pages=page_store,
        tools=tools,
        usage_line=usage_line,
        usage=usage,
        aclose=judging.aclose,
    )


def cluster_work(
    inputs: list[AnswerInput],
    *,
    address: str,
    attempts: int,
    backend_spec: str | None,
    settings: LLMSettings,
    pages: Path | None,
    maps: MapsLoader,
    options: RunOptions,
    timeout_s: float,
    sandbox: bool,
    progress: Progress,
) -> Callable[[], Coroutine[Any, Any, tuple[RunReport, Any]]]:
    """The run of `inputs` on the cluster at `address`: (report, its end-of-run lines).

    The backend, pages and tools are built at the gateway (`gateway_services`) from the same
    flags and settings; `maps` loads the --maps provider there.
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
    services = functools.partial(gateway_services, backend_spec, settings, pages, maps)

    async def work() -> tuple[RunReport, Any]:
        done = await run_on_cluster(
            inputs,
            address=address,
            services=services,
            options=options,
            runner=runner,
            pages=open_pages(pages),
            progress=progress,
            attempts=attempts,
        )
        return done.report, done

    return work
