"""`judgegen server`: the warm servers a `judgegen run` leaves behind (`generator.cli.warm`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator.cli.warm import key as keys
from generator.cli.warm.client import paths, servers, stop_servers


@click.group("server")
def server() -> None:
    """The warm servers that serve `judgegen run` (JUDGEGEN_SERVER=off: none).

    \b
    After a run, judgegen leaves a server behind that has imported what `run` imports; the
    next `run` from the same interpreter, import path and environment is forked from it and
    starts ~0.3 s sooner. A server whose code changed since it started refuses the command
    (which then runs as usual) and exits; one idle for JUDGEGEN_SERVER_IDLE seconds (600)
    exits. Exit codes: 0 ok; 2 the servers' folder is not this user's alone.

    \b
    Example:
      judgegen server status
    """


@server.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per server.")
def status(as_json: bool) -> None:
    """List the running servers: key, process, socket and log."""
    folder = _folder()
    for key, pid in servers(folder):
        files = paths(folder, key)
        row = {"key": key, "pid": pid, "socket": str(files["sock"]), "log": str(files["log"])}
        click.echo(json.dumps(row) if as_json else f"{key}  pid {pid}  log {files['log']}")


@server.command("stop")
def stop() -> None:
    """Stop every server (each finishes the commands it is running)."""
    stopped = stop_servers(_folder())
    click.echo(f"asked {len(stopped)} server(s) to stop", err=True)


def _folder() -> Path:
    try:
        return keys.runtime_dir()
    except OSError as exc:
        raise click.UsageError(str(exc)) from exc
