"""What `judgegen report` checks an agent's results against: the judges folder, page store and
--max-answer-bytes limit of the run that wrote the agent's summary.json (recorded there),
unless --judges/--pages/--max-answer-bytes give others, which are used, said on stderr when
they differ from the run's.

Without a record (no summary.json, or one written before judgegen recorded them), it is
--judges (default `generated_judges`, as for `run`), --pages (default none) and
--max-answer-bytes (default `run`'s) as given.
"""

from __future__ import annotations

from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from generator.cli.common import open_pages
from toolkit.runner.inputs import DEFAULT_MAX_ANSWER_BYTES
from toolkit.runner.metrics import Summary
from toolkit.runner.results import SUMMARY_FILE
from toolkit.runner.stale_results import InputsNow

DEFAULT_JUDGES = Path("generated_judges")
"""The judges folder without --judges or a recorded one: `judgegen run`'s default."""


@dataclass(frozen=True)
class ReadFrom:
    """The judges folder and page store (None: none) a check reads."""

    judges: Path
    pages: Path | None


def recorded(previous: Summary | None) -> ReadFrom | None:
    """The folders the run that wrote `previous` read, or None when it does not say (no
    summary, or one written before judgegen recorded them)."""
    if previous is None or previous.judges_dir is None:
        return None
    pages = Path(previous.pages_dir) if previous.pages_dir is not None else None
    return ReadFrom(Path(previous.judges_dir), pages)


def _note_other(flag: str, given: object, runs: str, ran: object, where: Path) -> None:
    """Say on stderr that `given` (with `flag`) is used, not `ran`, what the last run read or
    took (`runs`: as `the judges folder alpha's last run read`) as `where` records."""
    click.echo(
        f"note: {flag} {given} is not {runs} ({ran or 'none'}, as {where} records): its "
        f"results are checked against {flag} {given}",
        err=True,
    )


def _read_no_pages(previous: Summary | None) -> bool:
    """Whether the run that wrote `previous` recorded that it read no page store."""
    run = recorded(previous)
    return run is not None and run.pages is None


def _same(given: Path | None, run: Path | None) -> bool:
    """Whether `given` names the folder `run` names (symlinks and `..` resolved)."""
    if given is None or run is None:
        return given is run
    return given.resolve() == run.resolve()


@dataclass
class ReportInputs:
    """The inputs each agent's results are checked against (`for_agent`), from --judges,
    --pages and --max-answer-bytes as given (None: not given) and the agent's summary.json;
    each page store opened once, read-only, and closed with `stack`."""

    judges: Path | None
    pages: Path | None
    max_answer_bytes: int | None
    stack: ExitStack
    _stores: dict[Path, Any] = field(default_factory=dict, init=False)

    def for_agent(self, folder: Path, agent: str, previous: Summary | None) -> InputsNow:
        """The inputs to check `agent`'s results (in `folder`, whose summary.json is
        `previous`) against; a given folder or limit other than the run's said on stderr."""
        chosen = self.choose(folder, agent, previous)
        store = self._store(chosen.pages, agent, given=self.pages is not None)
        return InputsNow(
            judges_dir=chosen.judges,
            pages=store,
            max_answer_bytes=self.limit(folder, agent, previous),
            pages_dir=None if store is None else chosen.pages,
            no_pages_as_run=chosen.pages is None and _read_no_pages(previous),
        )

    def choose(self, folder: Path, agent: str, previous: Summary | None) -> ReadFrom:
        """The folders `agent`'s results are checked against: the run's unless given."""
        run = recorded(previous)
        if run is None:
            return ReadFrom(self.judges or DEFAULT_JUDGES, self.pages)
        where = folder / SUMMARY_FILE
        for flag, given, ran, what in (
            ("--judges", self.judges, run.judges, "judges folder"),
            ("--pages", self.pages, run.pages, "page store"),
        ):
            if given is not None and not _same(given, ran):
                _note_other(flag, given, f"the {what} {agent}'s last run read", ran, where)
        return ReadFrom(self.judges or run.judges, self.pages or run.pages)

    def limit(self, folder: Path, agent: str, previous: Summary | None) -> int:
        """The --max-answer-bytes `agent`'s results are checked with: the run's unless given
        (one other than the run's said on stderr), `run`'s default without a record."""
        ran = previous.max_answer_bytes if previous is not None else None
        given = self.max_answer_bytes
        if ran is None:
            return DEFAULT_MAX_ANSWER_BYTES if given is None else given
        if given is not None and given != ran:
            runs = f"the limit {agent}'s last run took"
            _note_other("--max-answer-bytes", given, runs, ran, folder / SUMMARY_FILE)
        return ran if given is None else given

    def _store(self, pages: Path | None, agent: str, *, given: bool) -> Any:
        """The page store at `pages` (None: none), opened once. One given with --pages that
        cannot be opened is a usage error; the run's recorded one (moved since, say) is said
        on stderr and not compared (`freshness not checked` names the results)."""
        if pages is None:
            return None
        key = pages.resolve()
        if key not in self._stores:
            try:
                store = open_pages(pages)
            except click.UsageError as exc:
                if given:
                    raise
                click.echo(
                    f"note: the page store {pages} {agent}'s last run read cannot be opened "
                    f"({exc.format_message()}): its results' cited pages are not compared "
                    "(pass --pages DIR)",
                    err=True,
                )
                store = None
            if store is not None:
                self.stack.enter_context(closing(store))
            self._stores[key] = store
        return self._stores[key]
