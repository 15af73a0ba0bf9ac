"""`judgegen cache-pages`: capture the pages answers (or a webeval run's final answers) cite,
or import a Mind2Web 2 page cache."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from generator.cli.ray_options import ray_options, require_ray
from toolkit.errors import DAMAGED_PAGES_FIX, InfraError, PageStoreError
from toolkit.pages import (
    DEFAULT_CHROMIUM,
    CaptureOptions,
    CaptureOutcome,
    CaptureReport,
    ImportReport,
    PageStore,
    answer_files,
    answer_texts,
    capture_pages,
    cited_urls_in,
    import_m2w2,
)
from toolkit.pages.recheck import RecheckReport, recheck_store
from toolkit.pages.store import INFRA_FAILURES, STORE_FILENAME

DEFAULT_STORE = "pages"
OUTPUT_VERSION = 2
"""`--json`'s output: 2 adds `recheck` (`RecheckReport`, or null without --recheck)."""
DAMAGED_STORE_FIX = "capture the pages into a new store instead: rerun with --store NEW"
"""This command's fix for a damaged store: `DAMAGED_PAGES_FIX` tells a command that reads
pages to take another one (--pages), an option this one, writing its --store, does not have."""


def _progress(done: int, total: int, outcome: CaptureOutcome) -> None:
    detail = outcome.kind or outcome.error_kind or ""
    status = f" {outcome.http_status}" if outcome.http_status else ""
    reason = f": {outcome.error}" if outcome.error else ""
    kept = " (kept the earlier capture)" if outcome.kept_previous else ""
    consent = f" (consent dialog {outcome.consent})" if outcome.consent else ""
    click.echo(
        f"[{done}/{total}] {outcome.result} {detail}{status} {outcome.url}{reason}{kept}{consent}",
        err=True,
    )


def _print_import(report: ImportReport) -> None:
    click.echo(
        f"imported {report.imported} page(s) from {report.tasks} task folder(s) of "
        f"{report.source}; {report.already_stored} already stored; "
        f"{report.failures_imported} failure record(s); {len(report.problems)} problem(s)"
    )
    for problem in report.problems:
        click.echo(f"  not imported: {problem.task_dir} {problem.url or ''}: {problem.reason}")


def _print_capture(report: CaptureReport) -> None:
    click.echo(
        f"captured {report.captured}, failed {report.failed}, skipped {report.skipped} "
        f"(already stored) -> {report.store}"
    )
    for outcome in report.outcomes:
        if outcome.result == "failed":
            click.echo(f"  failed ({outcome.error_kind}): {outcome.url}: {outcome.error}")


def _print_recheck(report: RecheckReport, store: Path, refresh: bool) -> None:
    """The refused pages on stdout, one per line (failure kind, URL, reason, tab-separated);
    what it means and the fix on stderr."""
    for page in report.refused:
        click.echo(f"{page.error_kind}\t{page.url}\t{page.reason}")
    line = f"{len(report.refused)} stored page(s) in {report.store} read as failures today"
    if report.refused and not refresh:
        line += f"; capture them again: judgegen cache-pages --recheck --refresh --store {store}"
    click.echo(line, err=True)
    if report.unchecked:
        click.echo(
            f"{report.unchecked} page(s) served were stored before the rules that read the live "
            "page (a soft 404's title and headings, a consent dialog's buttons): only their "
            "text was checked; `judgegen cache-pages --answers DIR --refresh` asks the live pages",
            err=True,
        )


@contextmanager
def _exit_3_on_failure(ctx: click.Context) -> Iterator[None]:
    """A page store that cannot be read, or the browser or the cluster failing: the error
    (with the fix for a damaged store) on stderr, and exit 3."""
    try:
        yield
    except PageStoreError as exc:
        fix = DAMAGED_STORE_FIX if exc.fix == DAMAGED_PAGES_FIX else exc.fix
        click.echo(f"error: {PageStoreError(exc.path, exc.cause, fix)}", err=True)
        ctx.exit(3)
    except InfraError as exc:  # the browser or the cluster
        click.echo(f"error: {exc}", err=True)
        ctx.exit(3)


def _recheck(ctx: click.Context, store: Path, refresh: bool, as_json: bool, capture: Any) -> None:
    """`--recheck`: list the stored pages reads refuse under today's rules and, with
    `refresh`, capture them again (`capture(urls, store)` gives its report); exits."""
    if not (store / STORE_FILENAME).is_file():
        raise click.UsageError(f"--store {store}: no page store there ({STORE_FILENAME})")
    output: dict[str, Any] = {"version": OUTPUT_VERSION, "import": None, "capture": None}
    code = 0
    with _exit_3_on_failure(ctx), PageStore(store, readonly=not refresh) as page_store:
        report = recheck_store(page_store)
        output["recheck"] = report.model_dump(mode="json")
        if not as_json:
            _print_recheck(report, store, refresh)
        code = 1 if report.refused else 0
        if refresh and report.refused:
            captured = capture({page.url: [] for page in report.refused}, page_store)
            output["capture"] = captured.model_dump(mode="json")
            ours = any(o.error_kind in INFRA_FAILURES for o in captured.outcomes)
            code = 3 if ours else 1 if captured.failed else 0
            if not as_json:
                _print_capture(captured)
    if as_json:
        click.echo(json.dumps(output, indent=2))
    ctx.exit(code)


def cited_pages(answers: Path | None, trajectories: Path | None) -> dict[str, list[Path]]:
    """The pages the `--answers` files and the `--trajectories` run's final answers cite
    (those `run --trajectories` judges: the `final_answer` string of each trajectory, not
    its JSON file's text), each with the files citing it. A usage error when `--answers`
    holds no answer file: nothing captured, every cited page of the run then missing."""
    from toolkit.runner.inputs import discover_trajectories

    sources: list[tuple[Path, str]] = []
    counts = []
    if answers is not None:
        files = answer_files(answers)
        if not files:
            raise click.UsageError(_no_answer_files(answers))
        sources += answer_texts(files)
        counts.append(f"{len(files)} answer file(s)")
    if trajectories is not None:
        found = discover_trajectories(trajectories)
        judged = [(i.path, i.text) for i in found if i.text is not None and i.excluded is None]
        sources += judged
        counts.append(f"{len(judged)} trajectory final answer(s)")
    urls = cited_urls_in(sources)
    click.echo(f"{len(urls)} URL(s) cited in {' and '.join(counts)}", err=True)
    return urls


def _no_answer_files(answers: Path) -> str:
    """Why `--answers` gave nothing to capture, naming `--trajectories` for a webeval run."""
    from toolkit.runner.inputs import trajectory_root

    traj = trajectory_root(answers)[1]
    webeval = any(traj.glob("*/*final_answer.json"))
    hint = f"; it is a webeval run: use --trajectories {answers}" if webeval else ""
    return f"--answers {answers}: no .md answer file found{hint}"


def _capture(
    urls: dict[str, list[Path]],
    store: PageStore,
    options: CaptureOptions,
    refresh: bool,
    ray_address: str | None = None,
    ray_attempts: int = 3,
) -> CaptureReport:
    if ray_address is None:
        return asyncio.run(capture_pages(urls, store, options, refresh=refresh, progress=_progress))
    from toolkit.scale.capture import capture_on_cluster

    report, line = asyncio.run(
        capture_on_cluster(
            urls,
            store,
            options,
            address=ray_address,
            refresh=refresh,
            progress=_progress,
            attempts=ray_attempts,
        )
    )
    click.echo(line, err=True)
    return report


@click.command("cache-pages")
@click.option(
    "--answers",
    type=click.Path(exists=True, path_type=Path),
    help="Answers to read: answers/<agent>/<task_id>/*.md, a folder of .md files, or one file.",
)
@click.option(
    "--trajectories",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A webeval run (DIR/traj/<task_id>/*_final_answer.json): the pages its final "
    "answers cite, for `run --trajectories`.",
)
@click.option(
    "--import-m2w2",
    "import_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A Mind2Web 2 page cache (<agent>/<task>/index.json + files) to import.",
)
@click.option(
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_STORE,
    show_default=True,
    help="Page store directory (holds pages.sqlite).",
)
@click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option(
    "--chromium",
    envvar="JUDGEGEN_CHROMIUM",
    default=DEFAULT_CHROMIUM,
    show_default=True,
    help="Chromium executable (env JUDGEGEN_CHROMIUM). Never downloaded.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds allowed per page.",
)
@click.option("--refresh", is_flag=True, help="Capture (or import) again URLs already stored.")
@click.option(
    "--recheck",
    is_flag=True,
    help="List the pages in --store that today's rules refuse (see below), with why; with "
    "--refresh, capture them again. Reads the store alone: no --answers.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@ray_options
@click.pass_context
def cache_pages(
    ctx: click.Context,
    answers: Path | None,
    trajectories: Path | None,
    import_dir: Path | None,
    store: Path,
    concurrency: int,
    chromium: str,
    timeout: float,
    refresh: bool,
    recheck: bool,
    as_json: bool,
    ray_address: str | None,
    ray_attempts: int,
) -> None:
    """Store every page cited in a set of answers (or a webeval run's final answers), for
    offline judging.

    Pages are captured with the system Chromium (headless, via Playwright): text once the
    page settles and its text stops changing (a "Loading…"-size text is given up to 2 s to be
    replaced), a JPEG screenshot, PDFs as bytes plus extracted text. A 4xx/5xx, timeout or
    network error is recorded as a failure, never as the page; failed URLs are tried again
    on the next run, stored pages are skipped unless --refresh. With --import-m2w2 the
    pages come from a Mind2Web 2 cache instead (both options may be given: import first).

    A page that says it was not found though served with HTTP 200 (a soft 404: "Page not
    found" as its title or main heading, with little else on it), or a cited page the site
    sent to its error page (`/404`) or to a search or site map page, is recorded as a
    `not_found` failure, like a 404, never as the page.

    A cookie-consent dialog that hides the page is answered with its choice that agrees to
    nothing ("Reject all", "Only necessary"), or with Accept when it offers none; the page's
    record says which (`consent`). A notice beside the page is left alone.

    A single-page app's hash route (`#/pricing`, `#!/about`) is its own page, captured and
    stored as such; any other #fragment (`#top`) is a place in the page and is dropped. A
    route stored by an older judgegen under the app's address alone counts as not stored, as
    does a bot check, a sign-in page or the home, error or search page a removed page was
    sent to that one stored as the page: it is captured again, and a failure replaces it. A
    page stored before the soft-404 rule that only says it was not found is captured again
    with --refresh.

    A page an older judgegen stored before the rules that read the live page (a soft 404's
    title and headings, a consent dialog's buttons) has its stored text checked instead: one
    short page with a line saying "Page not found" reads as a `not_found` failure, a cookie
    banner beside little else as `consent_wall` (judging it is incomplete until it is
    captured again). --recheck lists every stored page that reads as a failure today, one per
    line on stdout (failure kind, URL, reason, tab-separated; --json: `recheck.refused`), and
    on stderr how many pages served were stored before those rules (only their text checked);
    --recheck --refresh captures the listed pages again.

    \b
    Examples:
      judgegen cache-pages --import-m2w2 examples/pages --store pages
      judgegen cache-pages --recheck --store pages
      judgegen cache-pages --recheck --refresh --store pages

    \b
    Exit codes: 0 every page stored; 1 some pages failed to load or entries could not
    be imported (all recorded); 2 usage error; 3 Chromium missing, failed to start or
    crashed, or our network failed (no connection, the proxy or the DNS resolver down), or a
    site still refused us (HTTP 429), or a consent dialog still hid a page once answered:
    those URLs are recorded as `browser`, `offline`, `throttled` or `consent_wall` failures,
    judging them is incomplete; or the store cannot be read or written (a damaged file, a
    full disk).
    With --recheck: 0 no stored page reads as a failure; 1 some do (listed); 2 usage error
    (no store at --store); 3 the store cannot be read. With --recheck --refresh, those of a
    capture: 0 every listed page now stored, 1 some failed (recorded), 3 as above.

    With --ray, pages are captured on the nodes of a Ray cluster (--concurrency pages at a
    time on each, with each node's own Chromium) and stored here, in the one page store.
    """
    if recheck and not (answers is None and trajectories is None and import_dir is None):
        raise click.UsageError(
            "--recheck reads the store alone: give it without --answers, --trajectories and "
            "--import-m2w2"
        )
    if ray_address is not None:
        require_ray()
    options = CaptureOptions(chromium=chromium, concurrency=concurrency, timeout=timeout)
    if recheck:

        def capture(urls: dict[str, list[Path]], page_store: PageStore) -> CaptureReport:
            return _capture(urls, page_store, options, True, ray_address, ray_attempts)

        _recheck(ctx, store, refresh, as_json, capture)
    if answers is None and trajectories is None and import_dir is None:
        raise click.UsageError(
            "give --answers DIR, --trajectories DIR, --import-m2w2 DIR or --recheck"
        )
    cited = None
    if answers is not None or trajectories is not None:
        try:
            cited = cited_pages(answers, trajectories)
        except OSError as exc:
            raise click.UsageError(f"cannot read inputs: {exc}") from exc
    output: dict[str, Any] = {
        "version": OUTPUT_VERSION,
        "import": None,
        "capture": None,
        "recheck": None,
    }
    problems = ours_failed = False
    with _exit_3_on_failure(ctx), PageStore(store) as page_store:
        if import_dir is not None:
            imported = import_m2w2(import_dir, page_store, refresh=refresh)
            output["import"] = imported.model_dump(mode="json")
            problems |= bool(imported.problems)
            if not as_json:
                _print_import(imported)
        if cited is not None:
            captured = _capture(cited, page_store, options, refresh, ray_address, ray_attempts)
            output["capture"] = captured.model_dump(mode="json")
            problems |= captured.failed > 0
            ours_failed = any(o.error_kind in INFRA_FAILURES for o in captured.outcomes)
            if not as_json:
                _print_capture(captured)
    if as_json:
        click.echo(json.dumps(output, indent=2))
    ctx.exit(3 if ours_failed else 1 if problems else 0)
