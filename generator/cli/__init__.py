"""`judgegen`: one module per command in this package, registered lazily by name.

Exit codes (all commands): 0 success; 1 the command ran and found problems (failed checks,
incomplete evaluations, disagreement below a gate); 2 usage or input error (bad flags,
invalid spec, missing file); 3 infrastructure failure (LLM, budget, browser) stopped the work.
"""

from __future__ import annotations

import importlib

import click

# command name -> "module:attribute"; each command lives in its own module.
COMMANDS: dict[str, str] = {}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="judgegen")
def main() -> None:
    """Generate, review and run judge scripts that grade citation-backed answers.

    \b
    Exit codes: 0 ok; 1 problems found (failed checks, incomplete evaluations,
    agreement below a gate); 2 usage or input error; 3 infrastructure failure.
    """
