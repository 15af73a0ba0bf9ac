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
        for name in main.list_commands(ctx):
            command = main.get_command(ctx, name)
            if command is None:
                continue
            parts += [
                f"## judgegen {name}",
                "",
                "```text",
                _help(command, name, ctx),
                "```",
                "",
            ]
            if isinstance(command, click.Group):
                with click.Context(command, info_name=name, parent=ctx) as sub_ctx:
                    for sub in command.list_commands(sub_ctx):
                        sub_command = command.get_command(sub_ctx, sub)
                        if sub_command is None:
                            continue
                        parts += [
                            f"### judgegen {name} {sub}",
                            "",
                            "```text",
                            _help(sub_command, sub, sub_ctx),
                            "```",
                            "",
                        ]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render_reference(), end="")
