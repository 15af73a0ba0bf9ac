"""`--ray [ADDRESS]` for the commands that can spread their work over a Ray cluster.

Nothing here imports Ray: `toolkit.scale` (and with it `ray`) loads only when `--ray` is
given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

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
