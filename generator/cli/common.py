"""What several commands share: location, sandbox and backend options, finding a task's spec,
judge and sample answer, and turning a review run's failures into exit codes.

Kept light: `judgegen run` imports this module, so generation code (libcst, lint rules,
Jinja2 environments, the review runs) is imported inside the helpers that need it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from toolkit.errors import InfraError, SpecError
from toolkit.keywords import did_you_mean

if TYPE_CHECKING:
    from generator.cli.llm_clients import CommandClients
    from generator.stages.spec import LoadedSpec, SampleAnswer
    from toolkit.backends import JudgingBackend
    from toolkit.llm.cache_mode import CacheMode
    from toolkit.llm.settings import LLMSettings

T = TypeVar("T")


def sandbox_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --no-sandbox and --timeout (seconds per judge run)."""
    from generator.review.runs import DEFAULT_TIMEOUT_S

    command = click.option(
        "--timeout",
        "timeout_s",
        default=DEFAULT_TIMEOUT_S,
        show_default=True,
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds per judge run.",
    )(command)
    return click.option(
        "--no-sandbox", is_flag=True, help="Run the judge in this process (no isolation)."
    )(command)


def location_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --judges DIR and --tasks DIR."""
    command = click.option(
        "--tasks",
        "tasks_dir",
        default="tasks",
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
    )(command)
    return click.option(
        "--judges",
        default="generated_judges",
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
    )(command)


def load_task(task: str, tasks_dir: Path) -> LoadedSpec:
    """The task's spec and sample answers; an invalid or missing spec is a usage error."""
    from generator.stages.spec import load_spec

    try:
        return load_spec(task, tasks_dir)
    except SpecError as exc:
        known = [p.parent.name for p in Path(tasks_dir).glob("*/task.*")]
        hint = did_you_mean(task, known) if exc.problem == "does not exist" else None
        raise click.UsageError(f"{exc} ({hint})" if hint else str(exc)) from exc


def judge_file(judges: Path, task_id: str) -> Path:
    """`judges/<task_id>.py`, which must exist."""
    path = judges / f"{task_id}.py"
    if not path.is_file():
        raise click.UsageError(f"no judge {path} (generate it, or pass --judges DIR)")
    return path


def pick_answer(loaded: LoadedSpec, name: str | None) -> SampleAnswer:
    """The sample answer called `name` (with or without its suffix), or the first one."""
    if name is None:
        return loaded.answers[0]
    for answer in loaded.answers:
        if name in (answer.name, Path(answer.path).name):
            return answer
    known = ", ".join(a.name for a in loaded.answers)
    raise click.UsageError(f"task {loaded.task_id} has no sample answer '{name}' (has: {known})")


def run_review(
    work: Coroutine[Any, Any, T],
    command: str,
    cache_mode: CacheMode | None,
    clients: CommandClients,
) -> T:
    """Run `work` for `command`, with the LLM `clients` it opens closed after its loop and
    summed up (`CommandClients.run`); infrastructure failures (a ledger row lost at the close
    too) exit 3, followed by what its rerun keeps and redoes with its LLM client's `cache_mode`
    (None for a --backend's: `generator.cli.rerun`); a failing judge exits 1."""
    from generator.cli.rerun import cache_after, rerun_note
    from generator.review.runs import JudgeRunError

    try:
        return clients.run(work)
    except InfraError as exc:
        click.echo(f"error: infrastructure failure: {exc}", err=True)
        click.echo(rerun_note(command, cache_after(exc, cache_mode)), err=True)
        sys.exit(3)
    except JudgeRunError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def backend_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --backend package.module:factory and --pages DIR (offline page store)."""
    command = click.option(
        "--pages",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Offline page store (from `judgegen cache-pages`).",
    )(command)
    return click.option(
        "--backend",
        "backend_spec",
        help="package.module:factory → a JudgingBackend (default: the LLM backend).",
    )(command)


def open_backend(backend_spec: str | None, settings: LLMSettings) -> tuple[Any, Any]:
    """(judging backend, LLM client to close and summarise, or None for a --backend)."""
    if backend_spec:
        return load_backend_factory(backend_spec), None
    from generator.review.runs import extraction_backend

    try:
        return extraction_backend(settings)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def open_pages(pages: Path | None) -> Any:
    """The read-only page store at `pages`, or None."""
    if pages is None:
        return None
    from toolkit.errors import PageStoreError
    from toolkit.pages.store import PageStore

    try:
        return PageStore(pages, readonly=True)
    except (OSError, PageStoreError) as exc:
        raise click.UsageError(f"cannot open page store {pages}: {exc}") from exc


def call_factory(spec: str, option: str) -> Any:
    """Import the `package.module:factory` named by `spec` (modules of the working directory
    included, as with `python -m`) and return what calling it gives; problems are reported
    against `option`."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise click.BadParameter("expected package.module:factory", param_hint=option)
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec}: {exc}", param_hint=option) from exc
    try:
        return factory()
    except Exception as exc:
        message = f"{spec}() failed: {type(exc).__name__}: {exc}"
        raise click.BadParameter(message, param_hint=option) from exc


def load_backend_factory(spec: str) -> JudgingBackend:
    """Call the `package.module:factory` named by `spec` and check it returns a backend."""
    from toolkit.backends import JudgingBackend

    backend = call_factory(spec, "--backend")
    if not isinstance(backend, JudgingBackend):
        raise click.BadParameter(
            f"{spec}() returned {type(backend).__name__}, which has no extract/verify",
            param_hint="--backend",
        )
    return backend
