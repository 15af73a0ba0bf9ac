"""`judgegen run --ray`: the same run, with judges on a Ray cluster's nodes.

Kept apart from `run.py` so a local run never loads it (nor Ray). Exit codes and output are
those of a local run; the end-of-run lines add the cluster's (nodes, lost nodes, retries).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from generator.cli.common import open_pages
from generator.cli.ray_options import gateway_services, require_ray
from generator.cli.run import _progress
from generator.cli.run_outcome import print_outcome
from toolkit.errors import InfraError, JudgegenError, ResultsBusy
from toolkit.llm.settings import LLMSettings
from toolkit.runner.answers_layout import StrayFile
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.results_lock import results_lock
from toolkit.runner.scheduler import RunOptions
from toolkit.sandbox.protocol import SandboxLimits


def run_on_ray(
    inputs: list[AnswerInput],
    *,
    strays: Sequence[StrayFile],
    address: str,
    attempts: int,
    backend_spec: str | None,
    settings: LLMSettings,
    pages: Path | None,
    maps_spec: str | None,
    options: RunOptions,
    timeout_s: float,
    sandbox: bool,
    no_wait: bool,
    as_json: bool,
    source: Path | None,
) -> None:
    """Run `inputs` on the cluster at `address`, print the outcome and exit with its code."""
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
    try:
        with results_lock(
            options.results_dir, wait=not no_wait, on_wait=lambda m: click.echo(m, err=True)
        ):
            done = asyncio.run(
                run_on_cluster(
                    inputs,
                    address=address,
                    services=services,
                    options=options,
                    runner=runner,
                    pages=open_pages(pages),
                    progress=_progress(len(inputs)),
                    attempts=attempts,
                )
            )
    except ResultsBusy as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (InfraError, OSError) as exc:
        click.echo(f"error: infrastructure failure stopped the run: {exc}", err=True)
        sys.exit(3)
    except JudgegenError as exc:
        raise click.UsageError(str(exc)) from exc
    assert source is not None
    code = print_outcome(
        done.report,
        as_json=as_json,
        client=done,
        strays=strays,
        inputs=source,
        pages=pages,
        results=options.results_dir,
    )
    sys.exit(code)
