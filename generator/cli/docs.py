"""`judgegen docs`: print the toolkit API reference that the drafting LLM is given."""

from __future__ import annotations

from pathlib import Path

import click

from generator.stages.apiref import render_api_reference


@click.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write the reference to FILE instead of stdout.",
)
def docs(output: Path | None) -> None:
    """Print the toolkit API reference (Markdown), generated from the toolkit's code.

    It is exactly what the generator puts in its prompt: the judge contract, the Evaluator
    methods, VerificationNode, AggregationStrategy and toolkit.checks, with signatures and
    docstrings. The output is byte-identical for the same code.

    \b
    Example: judgegen docs --output api-reference.md
    Exit codes: 0 ok; 2 the output file cannot be written.
    """
    text = render_api_reference()
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"cannot write {output}: {exc.strerror or exc}") from exc
    click.echo(f"wrote the API reference to {output}", err=True)
