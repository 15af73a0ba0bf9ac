"""`judgegen`: one module per command in this package, registered lazily by name.

Exit codes (all commands): 0 success; 1 the command ran and found problems (failed checks,
incomplete evaluations, disagreement below a gate); 2 usage or input error (bad flags,
invalid spec, missing file); 3 infrastructure failure (LLM, budget, browser) stopped the work.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from typing import NoReturn

import click

# command name -> "module:attribute"; each command lives in its own module.
COMMANDS: dict[str, str] = {
    "approve": "generator.cli.approve:approve",
    "cache": "generator.cli.cache:cache",
    "cache-pages": "generator.cli.cache_pages:cache_pages",
    "check": "generator.cli.check:check",
    "diff": "generator.cli.diff:diff",
    "docs": "generator.cli.docs:docs",
    "generate": "generator.cli.generate:generate",
    "import": "generator.cli.import_cmd:import_cmd",
    "mutate": "generator.cli.mutate:mutate",
    "new": "generator.cli.new:new",
    "regenerate": "generator.cli.regenerate:regenerate",
    "report": "generator.cli.report:report",
    "run": "generator.cli.run:run",
    "tree": "generator.cli.tree:tree",
    "validate": "generator.cli.validate:validate",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self.get_command(ctx, name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None
        return getattr(module, attribute, None)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="judgegen")
def main() -> None:
    """Generate, review and run judge scripts that grade citation-backed answers.

    \b
    Exit codes: 0 ok; 1 problems found (failed checks, incomplete evaluations,
    agreement below a gate); 2 usage or input error; 3 infrastructure failure.
    """


def entry() -> NoReturn:
    """The `judgegen` executable: run the command, then leave without the interpreter's
    teardown of every loaded module (~50 ms after a run: `bench/startup_bench.py`)."""
    try:
        main(standalone_mode=True)
    except SystemExit as exc:
        leave(exc.code)
    leave(0)


def leave(code: int | str | None) -> NoReturn:
    """Exit with `code` as `sys.exit` would, skipping only the final teardown: the exit
    handlers still run and the standard streams are flushed. When a non-daemon thread is
    still running (the normal exit would wait for it) this is a normal exit."""
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # what Python's own exit reports when flushing fails
    os._exit(code or 0)
