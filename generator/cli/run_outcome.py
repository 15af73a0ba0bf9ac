"""What `judgegen run` tells its user at the end: progress totals and warnings on stderr, the
metrics tables (or the JSON record) on stdout, and the exit code a CI job can trust."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from generator.cli.llm_clients import warn_unrecorded
from generator.cli.rerun import cache_after, rerun_note
from toolkit.errors import PageStoreError
from toolkit.llm.cache_mode import CacheMode
from toolkit.pages.store import PageStore
from toolkit.runner.answers_layout import StrayFile
from toolkit.runner.metrics import Summary, format_table
from toolkit.runner.options import DEFAULT_SCORE_NAME
from toolkit.runner.page_reads import clipped_pages, missing_pages
from toolkit.runner.report import RunReport

MAX_LISTED = 10


def print_outcome(
    report: RunReport,
    *,
    as_json: bool,
    client: Any,
    strays: Sequence[StrayFile],
    inputs: Path,
    pages: Path | None,
    results: Path,
    cache_mode: CacheMode | None,
    overwrite: bool,
    score_name: str = DEFAULT_SCORE_NAME,
) -> int:
    """Print the run's outcome and return its exit code. A stopped run ends with what its
    rerun keeps and redoes (`generator.cli.rerun`), with its LLM client's `cache_mode` (None
    for a --backend's) and `--overwrite`."""
    for skipped in report.skipped_judges:
        click.echo(f"skipped judge {skipped.task_id}: {skipped.reason}", err=True)
    if report.stopped:
        click.echo(
            f"stopped: {report.stopped}; {report.not_started} evaluation(s) not started", err=True
        )
        cache = cache_after(report.stopped, cache_mode)
        click.echo(rerun_note("run", cache, overwrite=overwrite), err=True)
    decided = f"{report.decided} decided without a judge, " if report.decided else ""
    click.echo(
        f"{report.evaluated} evaluated, {decided}{report.reused} up to date, "
        f"{len(report.incomplete)} incomplete, {report.usage.backend_calls} backend calls",
        err=True,
    )
    if client is not None:
        click.echo(client.summary_line(), err=True)
        warn_unrecorded(client.summary())
    earlier = report.earlier_attempts
    if earlier.attempts:
        click.echo(
            f"note: the incomplete results this run redid had cost "
            f"${earlier.usage.cost_usd:.4f} in {earlier.attempts} earlier attempt(s), spent "
            "by earlier runs (not in this run's figures above): each redone result carries it in "
            "`earlier_attempts`",
            err=True,
        )
    _note_withdrawn(report, inputs, results, score_name)
    _warn_strays(strays, inputs)
    missing = missing_pages(report.results)
    trajectories = any(r.input_kind == "trajectory" for r in report.results)
    _warn_missing_pages(
        missing, f"--{'trajectories' if trajectories else 'answers'} {inputs}", pages
    )
    clipped = clipped_pages(report.results)
    _warn_clipped_pages(clipped)
    _warn_uncounted(report.summaries, results)
    _warn_mixed_snapshots(report.summaries)
    unjudged = [s for s in strays if s.looks_like_answer]
    code = report.exit_code
    if code == 0 and unjudged:
        click.echo(
            f"error: {len(unjudged)} answer file(s) under {inputs} were not judged (see above)",
            err=True,
        )
        code = 1
    if report.failure:
        click.echo(f"error: {report.failure}", err=True)
    _say_where(report, results, score_name)
    if as_json:
        record = report.to_record().model_copy(
            update={
                "exit_code": code,
                "unjudged_files": [str(s.path) for s in unjudged],
                "missing_pages": missing,
                "clipped_pages": clipped,
                "llm": client.summary() if client is not None else None,
            }
        )
        click.echo(record.model_dump_json(indent=2))
    else:
        for summary in report.summaries.values():
            click.echo(format_table(summary))
            click.echo("")
    return code


def _note_withdrawn(report: RunReport, inputs: Path, results: Path, score_name: str) -> None:
    """One line on the score files the run withdrew under the folder's earlier score names."""
    if not report.withdrawn_scores:
        return
    withdrawn = report.withdrawn_scores
    counts = ", ".join(f"{count} scores/{name}_<task_id>.json" for name, count in withdrawn.items())
    click.echo(
        f"note: withdrew {sum(withdrawn.values())} score file(s) in {inputs} ({counts}) that "
        f"this results folder ({results.resolve()}) wrote under an earlier score name: it now "
        f"writes scores/{score_name}_<task_id>.json, and those would keep scores it no longer "
        "holds",
        err=True,
    )


def _listed(lines: list[str]) -> list[str]:
    extra = len(lines) - MAX_LISTED
    return lines[:MAX_LISTED] + ([f"  … and {extra} more"] if extra > 0 else [])


def _warn_strays(strays: Sequence[StrayFile], inputs: Path) -> None:
    if not strays:
        return
    click.echo(f"warning: {len(strays)} file(s) under {inputs} are not judged:", err=True)
    for line in _listed([f"  {s.path}: {s.reason}" for s in strays]):
        click.echo(line, err=True)


def _warn_missing_pages(missing: dict[str, list[str]], source: str, pages: Path | None) -> None:
    """How many cited pages the judges could not read, for which answers, and the fix
    (`source`: the `cache-pages` option reading the run's inputs, `--answers DIR` or
    `--trajectories DIR`)."""
    if not missing:
        return
    urls = {url for listed in missing.values() for url in listed}
    store = pages or Path("pages")
    fetch = f"`judgegen cache-pages {source} --store {store}` (URLs: `missing_pages` in --json)"
    if pages is None:
        where = "--pages was not given, so no cited page could be read"
        fix = f"capture them with {fetch}, then rerun with `--pages {store}`"
    else:
        where = (
            f"they are not in the page store {pages} (or failed to load, hold nothing to check, "
            "or are a bot check, a sign-in page, a not-found page or the site's home page "
            "stored in their place)"
        )
        fix = f"fetch them with {fetch} and rerun"
    click.echo(
        f"warning: {len(urls)} cited page(s) missing for {len(missing)} answer(s): {where}; "
        f"they count as unsupported. To judge them, {fix} (those results are then redone).",
        err=True,
    )
    lines = [f"  {answer}: {len(listed)} missing" for answer, listed in sorted(missing.items())]
    for line in _listed(lines):
        click.echo(line, err=True)
    for line in _listed(_near_misses(sorted(urls), pages)):
        click.echo(line, err=True)


def _near_misses(urls: list[str], pages: Path | None) -> list[str]:
    """A hint for each missing URL that nearly names a page the store holds
    (`PageStore.near_misses`): a spelling the store misses scores claims unsupported
    unseen. None without a readable store."""
    if pages is None:
        return []
    try:
        with PageStore(pages, readonly=True) as store:
            near = {url: store.near_misses(url) for url in urls}
    except (FileNotFoundError, PageStoreError):
        return []
    return [
        f"  hint: {url} is not stored, but {' and '.join(stored)} is: the same page spelled "
        "otherwise (cite it so, or capture this spelling), or another?"
        for url, stored in near.items()
        if stored
    ]


def _warn_clipped_pages(clipped: dict[str, list[str]]) -> None:
    """Which cited pages were longer than the judging backend's page limit: judged on their
    beginning only, a claim supported further on was found unsupported."""
    if not clipped:
        return
    urls = {url for listed in clipped.values() for url in listed}
    click.echo(
        f"warning: {len(urls)} cited page(s) read by {len(clipped)} answer(s) are longer than "
        "the judging backend's page limit (`max_page_chars`, 400,000 characters by default): "
        "the judge saw only their beginning, so a claim supported further on counts as "
        "unsupported (URLs: `clipped_pages` in --json and in each result).",
        err=True,
    )
    lines = [f"  {answer}: {', '.join(listed)}" for answer, listed in sorted(clipped.items())]
    for line in _listed(lines):
        click.echo(line, err=True)


def _warn_uncounted(summaries: dict[str, Summary], results: Path) -> None:
    """Which result files in an agent's folder the metrics leave out (answer gone, judge held
    back, outdated, unreadable), and which tasks they count without this run having checked
    them."""
    for agent, summary in sorted(summaries.items()):
        if summary.not_counted:
            click.echo(
                f"warning: {len(summary.not_counted)} result file(s) in {results / agent} are "
                "left out of its metrics:",
                err=True,
            )
            lines = [f"  {r.task_id}/{r.answer_name}: {r.reason}" for r in summary.not_counted]
            for line in _listed(lines):
                click.echo(line, err=True)
        if summary.unchecked_tasks:
            tasks = summary.unchecked_tasks
            named = ", ".join(tasks[:MAX_LISTED]) + (" …" if len(tasks) > MAX_LISTED else "")
            click.echo(
                f"note: the metrics of {agent} also count the results of {len(tasks)} task(s) "
                f"this run did not check ({named}); run them too to check them",
                err=True,
            )


def _warn_mixed_snapshots(summaries: dict[str, Summary]) -> None:
    """Which model asked for (an alias) had an agent's complete results answered by more than
    one model (snapshot), with how many results each, and how to judge them with one."""
    for agent, summary in sorted(summaries.items()):
        for asked, answered in summary.mixed_snapshots.items():
            counts = ", ".join(f"{model} ({n} result(s))" for model, n in answered.items())
            click.echo(
                f"warning: the complete results of {agent} that asked for {asked} were answered by "
                f"{len(answered)} models: {counts}. The vendor re-pointed {asked} between the "
                "calls (cached answers replay the snapshot that gave them, new calls get the "
                "one it names now), so these metrics mix two models' judgements. To judge them "
                "all with one, rerun with --overwrite --cache-mode refresh (every call asked "
                f"again, of the model {asked} names now), or pin a snapshot with --model "
                "SNAPSHOT (e.g. one of those above: every result is redone under its name); "
                "`mixed_snapshots` in summary.json lists them",
                err=True,
            )


def _say_where(report: RunReport, results: Path, score_name: str) -> None:
    for agent in report.summaries:
        click.echo(
            f"results: {results / agent}/<task_id>/<answer>.json, "
            f"metrics: {results / agent / 'summary.json'}",
            err=True,
        )
    if any(r.input_kind == "trajectory" for r in report.results):
        click.echo(f"score files: <traj dir>/scores/{score_name}_<task_id>.json", err=True)
