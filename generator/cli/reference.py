"""The CLI reference in docs/cli.md, generated from every command's `--help`.

Run `python -m generator.cli.reference > docs/cli.md`; a test keeps the file current.
"""

from __future__ import annotations

import click

from generator.cli import main


def _help(command: click.Command, path: str, parent: click.Context | None = None) -> str:
    settings = {"terminal_width": 100, "max_content_width": 100, **command.context_settings}
    with click.Context(command, info_name=path, parent=parent, **settings) as ctx:
        return command.get_help(ctx)


def _sections(group: click.Group, ctx: click.Context, title: str, level: int) -> list[str]:
    """The help of each command of `group` under a level-`level` heading, each subgroup's
    commands one level deeper."""
    parts: list[str] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        heading = f"{'#' * level} {title} {name}"
        parts += [heading, "", "```text", _help(command, name, ctx), "```", ""]
        if isinstance(command, click.Group):
            with click.Context(command, info_name=name, parent=ctx) as sub_ctx:
                parts += _sections(command, sub_ctx, f"{title} {name}", level + 1)
    return parts


def render_reference() -> str:
    """Markdown with the help of `judgegen` and of each subcommand, in name order."""
    parts = [
        "# judgegen command reference",
        "",
        "Generated from `--help`; do not edit by hand.",
        "",
    ]
    parts += ["## judgegen", "", "```text", _help(main, "judgegen"), "```", ""]
    with click.Context(main, info_name="judgegen", **main.context_settings) as ctx:
        parts += _sections(main, ctx, "judgegen", 2)
    return "\n".join(parts)


if __name__ == "__main__":
    print(render_reference(), end="")
