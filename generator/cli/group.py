"""The `judgegen` click group: one module per command, registered lazily by name."""

from __future__ import annotations

import importlib

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
    "server": "generator.cli.server_cmd:server",
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
    agreement below a gate); 2 usage or input error; 3 infrastructure failure; 4 stale
    results (`report`).
    """
