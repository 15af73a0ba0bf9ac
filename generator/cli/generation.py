"""What `generate` and `regenerate` share: their options, LLM clients, fixtures, the loop over
tasks and error mapping."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from generator.cli.llm_clients import CommandClients
from generator.cli.rerun import cache_after, rerun_note
from generator.gitops import GitError, RefChanged
from generator.stages.checking import uncompared_reason
from generator.stages.run import GenerationFailed, PipelineOptions
from toolkit.errors import InfraError, SpecError
from toolkit.llm import LLMClient, account_for, build_client
from toolkit.llm.settings import LLMSettings

if TYPE_CHECKING:
    from generator.stages.spec import LoadedSpec

R = TypeVar("R")


_PIPELINE_OPTIONS = (
    click.option(
        "--tasks-dir", default="tasks", show_default=True, type=click.Path(path_type=Path)
    ),
    click.option(
        "--judges", default="generated_judges", show_default=True, type=click.Path(path_type=Path)
    ),
    click.option(
        "--reviews", default="reviews", show_default=True, type=click.Path(path_type=Path)
    ),
    click.option("--no-commit", is_flag=True, help="Write the files but make no commit."),
    click.option("--max-repairs", default=3, show_default=True, type=click.IntRange(0, 3)),
    click.option("--max-reflections", default=2, show_default=True, type=click.IntRange(0, 2)),
)


def pipeline_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --tasks-dir, --judges, --reviews, --no-commit, --max-repairs and --max-reflections."""
    for option in reversed(_PIPELINE_OPTIONS):
        command = option(command)
    return command


_GATE_OPTIONS = (
    click.option(
        "--pages",
        type=click.Path(file_okay=False, path_type=Path),
        help="Page store the acceptance and mutation runs read cited pages from "
        "(see `judgegen cache-pages`); required when the sample answers cite pages and have "
        "intended scores, unless --no-acceptance.",
    ),
    click.option(
        "--no-acceptance",
        is_flag=True,
        help="Skip scoring the sample answers with the real judging model, so the judge is "
        "published without comparing them with the intended scores (the review says so).",
    ),
    click.option(
        "--acceptance-budget-usd",
        default=1.0,
        show_default=True,
        type=click.FloatRange(min=0.0),
        help="Dollar cap on the acceptance and mutation stages' LLM calls.",
    ),
    click.option(
        "--no-mutation", is_flag=True, help="Skip mutation testing of the accepted samples."
    ),
    click.option(
        "--min-kill-rate",
        type=click.FloatRange(0.0, 1.0),
        default=None,
        help="Fail (publish nothing) when mutation testing kills fewer than this share, or "
        "when it measures no kill rate (it did not run, or no mutation applied); not with "
        "--no-acceptance or --no-mutation.",
    ),
)


def gate_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --pages, --no-acceptance, --acceptance-budget-usd, --no-mutation and
    --min-kill-rate: the gates `generate` and `regenerate` share (see `gates`)."""
    for option in reversed(_GATE_OPTIONS):
        command = option(command)
    return command


def gates(
    pages: Path | None,
    no_acceptance: bool,
    acceptance_budget_usd: float,
    no_mutation: bool,
    min_kill_rate: float | None,
) -> dict[str, Any]:
    """The `PipelineOptions` fields the `gate_options` flags set; a usage error, before any
    LLM call, for a --min-kill-rate that mutation testing could never measure."""
    for flag, off in (("--no-acceptance", no_acceptance), ("--no-mutation", no_mutation)):
        if off and min_kill_rate is not None:
            raise click.UsageError(
                f"--min-kill-rate cannot be checked with {flag}: the kill rate comes from "
                "mutation testing the answers acceptance scored; drop one of the two flags"
            )
    return {
        "pages": pages,
        "acceptance": not no_acceptance,
        "acceptance_budget_usd": acceptance_budget_usd,
        "mutation": not no_mutation,
        "min_kill_rate": min_kill_rate,
    }


def check_comparable(specs: list[LoadedSpec], options: PipelineOptions) -> None:
    """A usage error, before any LLM call, for a task whose intended scores acceptance could
    not compare with these options (see `uncompared_reason`)."""
    for loaded in specs:
        reason = uncompared_reason(loaded, options)
        if reason is not None:
            raise click.UsageError(f"{loaded.task_id}: {reason}")


# A recordings folder holding this file is hand-authored; its first line says so.
FIXTURE_MARKER = "PROVENANCE.txt"


def fixtures_dir(provider: str) -> Path | None:
    """The recordings directory when replaying (`replay:DIR`), so review records name them."""
    kind, _, rest = provider.partition(":")
    return Path(rest) if kind == "replay" and rest and Path(rest).is_dir() else None


def responses_note(provider: str) -> str:
    """Where the responses come from when no model is called ("" for a live provider): a
    replay's marker line (or "replayed recordings"), or the scripted policy that wrote them."""
    kind, _, rest = provider.partition(":")
    if kind == "scripted":
        return f"scripted policy {rest}, no model called"
    recordings = fixtures_dir(provider)
    if recordings is None:
        return ""
    marker = recordings / FIXTURE_MARKER
    if marker.is_file():
        return marker.read_text("utf-8").strip().splitlines()[0]
    return "replayed recordings, no model called"


def responses_source(provider: str) -> dict[str, Any]:
    """The `PipelineOptions` fields naming where the responses come from, for `generate` and
    `regenerate` alike: a replay or a scripted policy calls no model, so the judge's header and
    its review record say so and its calls cost $0 (the live price shown as an estimate)."""
    kind = provider.partition(":")[0]
    return {
        "fixtures_dir": fixtures_dir(provider),
        "responses": responses_note(provider),
        "no_model": kind in ("replay", "scripted"),
    }


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
def generation_errors(ctx: click.Context, command: str, settings: LLMSettings) -> Iterator[None]:
    """Map failures to the documented exit codes: bad input 2, infrastructure 3 (followed by
    what a rerun of `command`, `generate` or `regenerate`, keeps and redoes)."""
    try:
        yield
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    except (InfraError, RefChanged) as exc:
        click.echo(f"error: {exc}", err=True)
        click.echo(rerun_note(command, cache_after(exc, settings.cache_mode)), err=True)
        ctx.exit(3)
    except GitError as exc:
        raise click.UsageError(f"{exc} (use --no-commit outside a git repository)") from exc


def for_each_spec(
    specs: list[LoadedSpec],
    settings: LLMSettings,
    work: Callable[[LoadedSpec, LLMClient, LLMClient], Awaitable[R]],
    kept: str = "",
) -> tuple[list[R], list[tuple[str, str]]]:
    """Run `work` on each spec, in an event loop of its own, with one pair of clients: a task
    that fails generation is reported (with `kept`, what stayed as it was) and collected while
    the others go on; the clients' usage line goes to stderr once the loop has ended
    (`CommandClients.run`)."""
    clients = CommandClients()
    return clients.run(_each_spec(specs, settings, work, clients, kept))


async def _each_spec(
    specs: list[LoadedSpec],
    settings: LLMSettings,
    work: Callable[[LoadedSpec, LLMClient, LLMClient], Awaitable[R]],
    clients: CommandClients,
    kept: str,
) -> tuple[list[R], list[tuple[str, str]]]:
    generation, extraction = generation_clients(settings)
    clients.add(generation)
    clients.add(extraction)
    done: list[R] = []
    failed: list[tuple[str, str]] = []
    try:
        for loaded in specs:
            try:
                done.append(await work(loaded, generation, extraction))
            except GenerationFailed as exc:
                click.echo(f"[{loaded.task_id}] failed: {exc}{kept}", err=True)
                failed.append((loaded.task_id, str(exc)))
    finally:
        await clients.aclose()
    return done, failed
