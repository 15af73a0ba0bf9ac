"""`--ray [ADDRESS]` for the commands that can spread their work over a Ray cluster.

Nothing here imports Ray: `toolkit.scale` (and with it `ray`) loads only when `--ray` is
given. `gateway_services` is what the gateway actor calls, on the driver's node, to build a
run's backend, pages and tools exactly as a local `judgegen run` builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolkit.errors import SpecError

if TYPE_CHECKING:
    from toolkit.llm.settings import LLMSettings
    from toolkit.scale.gateway import GatewayServices

_OPTIONS = [
    click.option(
        "--ray",
        "ray_address",
        metavar="ADDRESS",
        is_flag=False,
        flag_value="auto",
        default=None,
        help="Spread the work over the Ray cluster at ADDRESS (host:port; bare --ray: the "
        "cluster started on this machine). Needs `pip install 'judgegen[ray]'`; see "
        "docs/scale-out.md.",
    ),
    click.option(
        "--ray-attempts",
        default=3,
        show_default=True,
        type=click.IntRange(1, 10),
        help="Tries per evaluation or page when its Ray node dies; then it is incomplete.",
    ),
]


def ray_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --ray and --ray-attempts to a click command."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def require_ray() -> None:
    """A usage error naming the install command when `--ray` is given without Ray."""
    from toolkit.scale.cluster import import_ray
    from toolkit.scale.errors import RayMissing

    try:
        import_ray()
    except RayMissing as exc:
        raise click.UsageError(str(exc)) from None


def gateway_services(
    backend_spec: str | None, settings: LLMSettings, pages: Path | None, maps_spec: str | None
) -> GatewayServices:
    """The run's services, built in the gateway (keys, cache, ledger and budget live there)
    as a local `judgegen run` builds them."""
    from generator.cli.common import open_pages
    from generator.cli.run import _maps_loader
    from generator.cli.run_backend import RunBackend
    from toolkit.scale.gateway import GatewayServices
    from toolkit.tools.maps import maps_tools

    try:
        judging = RunBackend(backend_spec, settings)
        tools = maps_tools(_maps_loader(maps_spec)())
        page_store = open_pages(pages)
    except (SpecError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from exc

    def usage_line() -> str | None:
        reporter = judging.usage_reporter
        return reporter.summary_line() if reporter is not None else None

    return GatewayServices(
        backend=judging.build(),
        identity=judging.spec,
        pages=page_store,
        tools=tools,
        usage_line=usage_line,
        aclose=judging.aclose,
    )
