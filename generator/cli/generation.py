"""What `generate` and `regenerate` share: their LLM clients, fixtures and error mapping."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from generator.gitops import GitError, RefChanged
from toolkit.errors import InfraError, SpecError
from toolkit.llm import LLMClient, account_for, build_client
from toolkit.llm.settings import LLMSettings


def fixtures_dir(provider: str) -> Path | None:
    """The recordings directory when replaying (`replay:DIR`), so review records name them."""
    kind, _, rest = provider.partition(":")
    return Path(rest) if kind == "replay" and rest and Path(rest).is_dir() else None


def generation_clients(settings: LLMSettings) -> tuple[LLMClient, LLMClient]:
    """The generation client, and the extraction client (the same one when the provider is).

    Both charge one account: one --budget-usd cap and one ledger for the whole command, so its
    `LLM:` line covers generation and extraction alike, even on different providers.
    """
    account = account_for(settings)
    judge_settings = settings.model_copy(update={"model": None})
    generation = build_client(settings, "generation", account)
    same = settings.for_role("generation").provider == judge_settings.for_role("judge").provider
    return generation, generation if same else build_client(judge_settings, "judge", account)


@contextmanager
def generation_errors(ctx: click.Context) -> Iterator[None]:
    """Map failures to the documented exit codes: bad input 2, infrastructure 3."""
    try:
        yield
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    except (InfraError, RefChanged) as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(3)
    except GitError as exc:
        raise click.UsageError(f"{exc} (use --no-commit outside a git repository)") from exc
