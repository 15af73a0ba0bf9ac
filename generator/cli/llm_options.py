"""The LLM flags every model-calling command shares, as one decorator.

`@llm_options` adds --provider, --model, --base-url, --schema-mode, --cache-mode,
--cache-path, --budget-usd and --concurrency, merges them over `JUDGEGEN_*` variables and
judgegen.toml (a flag not given does not override), and hands the command one
`llm_settings: LLMSettings` keyword argument. Invalid settings are a usage error (exit 2);
an unusable response cache file stops the command with one line and exit 3.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolkit.errors import CacheError, SpecError
from toolkit.llm.cache_mode import CacheMode

if TYPE_CHECKING:  # settings load when a command runs, not for its --help
    from toolkit.llm.settings import LLMSettings

OPTION_NAMES = (
    "provider",
    "model",
    "base_url",
    "openai_schema_mode",
    "cache_mode",
    "cache_path",
    "budget_usd",
    "concurrency",
)

_OPTIONS = [
    click.option(
        "--provider",
        help="anthropic | openai | replay:DIR | scripted:pkg.mod:func "
        "(default: by model, claude-* → anthropic, else openai).",
    ),
    click.option(
        "--model", help="Model for this command (default: o4-mini to judge, Sonnet to generate)."
    ),
    click.option("--base-url", help="OpenAI-compatible server (vLLM, llama.cpp, Ollama)."),
    click.option(
        "--schema-mode",
        "openai_schema_mode",
        type=click.Choice(["native", "json", "prompt"]),
        help="Structured output the --base-url server supports (default native).",
    ),
    click.option(
        "--cache-mode",
        type=click.Choice([mode.value for mode in CacheMode]),
        help="Response cache: off | rw (default) | ro | strict (a miss is an error) | refresh.",
    ),
    click.option(
        "--cache-path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Response cache file (default .judgegen/llm-cache.sqlite).",
    ),
    click.option(
        "--budget-usd",
        "--budget",
        "budget_usd",
        type=click.FloatRange(min=0),
        help="Stop making LLM calls once this many dollars are spent.",
    ),
    click.option(
        "--concurrency", type=click.IntRange(min=1), help="LLM calls in flight at most (default 8)."
    ),
]


def settings_from(values: dict[str, Any]) -> LLMSettings:
    """LLMSettings from the raw option values (or the `llm_settings` the decorator made)."""
    from toolkit.llm.settings import LLMSettings

    made = values.get("llm_settings")
    if isinstance(made, LLMSettings):
        return made
    given = {name: values.get(name) for name in OPTION_NAMES}
    try:
        return LLMSettings.from_env_and_file(**given)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None


def llm_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command: add the LLM flags and pass `llm_settings=LLMSettings(...)`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name, None) for name in OPTION_NAMES}
        kwargs["llm_settings"] = settings_from(values)
        try:
            return command(*args, **kwargs)
        except CacheError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(3)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper
