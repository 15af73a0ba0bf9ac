"""`judgegen run`: score answers or webeval trajectories with the reviewed judges."""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from generator.cli.common import backend_options, call_factory, open_pages
from generator.cli.early_sandbox import EarlySandbox, launch_now, nothing_can_be_fresh
from generator.cli.fresh_stamp import record, remove_stamp, replay_fresh_run
from generator.cli.llm_options import llm_options
from generator.cli.ray_options import ray_options
from generator.cli.run_backend import RunBackend
from toolkit.errors import (
    AnswersLayoutError,
    InfraError,
    JudgegenError,
    NameCollision,
    ResultsBusy,
    SpecError,
)
from toolkit.keywords import did_you_mean
from toolkit.names import canonical_name
from toolkit.runner.answers_layout import StrayFile, read_layout, samples_task
from toolkit.runner.inputs import (
    DEFAULT_MAX_ANSWER_BYTES,
    AnswerInput,
    discover_answers,
    discover_trajectories,
    trajectory_root,
)
from toolkit.runner.options import DEFAULT_SCORE_NAME, score_name_problem

if TYPE_CHECKING:  # the runner loads when a run starts, not for `run --help`
    from toolkit.llm.settings import LLMSettings
    from toolkit.runner.options import RunOptions
    from toolkit.runner.report import RunReport
    from toolkit.runner.results import ResultHead
    from toolkit.tools.maps import MapsProvider


def _wants_google(spec: str | None) -> bool:
    """Whether `--maps` (`spec`) means Google: asked for, or by default when its key is set."""
    from toolkit.config import MAPS_KEY_ENV

    return spec == "google" or (spec is None and bool(os.environ.get(MAPS_KEY_ENV)))


def maps_identity(spec: str | None) -> str | None:
    """The `--maps` provider as results record it (`RunOptions.tools`): its factory spec with
    a hash of the code it runs (`factory_identity`), `google`, or None when judges are offered
    none."""
    if spec in (None, "google", "none"):
        return "google" if _wants_google(spec) else None
    from toolkit.llm.answer_source import factory_identity

    return factory_identity(spec)


def load_maps_provider(spec: str | None) -> MapsProvider | None:
    """The maps provider `--maps` names: `google`, `none`, or `package.module:factory`;
    by default Google when its key is set, else none (maps calls are then incomplete)."""
    if spec in (None, "google", "none"):
        if not _wants_google(spec):
            return None
        from toolkit.tools.google_maps import GoogleMapsProvider

        return GoogleMapsProvider()
    assert spec is not None
    provider = call_factory(spec, "--maps")
    if not all(callable(getattr(provider, name, None)) for name in ("geocode", "directions")):
        raise click.BadParameter(
            f"{spec}() returned {type(provider).__name__}, which has no geocode/directions",
            param_hint="--maps",
        )
    return provider


def _discover(
    answers: Path | None, trajectories: Path | None, tasks: set[str] | None, max_bytes: int
) -> tuple[list[AnswerInput], list[StrayFile]]:
    """The inputs to judge and the files under --answers that will not be judged."""
    if (answers is None) == (trajectories is None):
        raise click.UsageError("give exactly one of --answers DIR or --trajectories DIR")
    try:
        if trajectories is not None:
            traj = trajectory_root(trajectories)[1]
            check_task_ids(tasks, {canonical_name(p.name) for p in traj.iterdir() if p.is_dir()})
            return discover_trajectories(trajectories, tasks=tasks, max_bytes=max_bytes), []
        assert answers is not None
        layout = read_layout(answers)
    except (AnswersLayoutError, NameCollision) as exc:
        raise click.UsageError(str(exc)) from exc
    if layout.note:
        click.echo(f"note: {layout.note}", err=True)
    check_task_ids(tasks, {f.task_id for f in layout.folders})
    try:
        inputs = discover_answers(answers, tasks=tasks, max_bytes=max_bytes, layout=layout)
    except NameCollision as exc:
        raise click.UsageError(str(exc)) from exc
    strays = [s for s in layout.strays if tasks is None or _task_of(s, answers) in tasks]
    return inputs, strays


def check_score_writers(
    results: Path, trajectories: Path, inputs: list[AnswerInput], score_name: str
) -> None:
    """A usage error when a trajectory's score file this run would write (or withdraw) was
    written by another results folder that is still there (say another judge model's): the
    runs would overwrite each other's scores, the last one silently winning (the scheduler
    checks again under the results lock, for library callers too). A score file
    whose results folder is gone, or that names none (written before judgegen recorded it),
    is taken over, and a note says so."""
    from toolkit.errors import ScoreFilesTaken
    from toolkit.runner.results import ScoreFiles, free_score_files

    scores = ScoreFiles.of(results, score_name)
    where = trajectories.absolute()
    pairs = [(item.traj_dir, item.task_id) for item in inputs if item.traj_dir is not None]
    try:
        found = free_score_files(pairs, scores, where)
    except ScoreFilesTaken as exc:
        raise click.UsageError(str(exc)) from exc
    files = f"scores/{score_name}_<task_id>.json"
    taken = []
    if found.unnamed:
        taken.append(f"{len(found.unnamed)} naming no results folder (an earlier judgegen's)")
    if found.gone:
        folders = ", ".join(str(folder) for folder in sorted(found.gone))
        taken.append(f"those of {folders}, no longer there")
    if taken:
        click.echo(
            f"note: this run takes over the score files {files} in {where} "
            f"({'; '.join(taken)}): it writes them from {scores.writer}",
            err=True,
        )


def _score_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    problem = score_name_problem(value)
    if problem is not None:
        raise click.BadParameter(problem, ctx=ctx, param=param)
    return value


def stale_judges(tasks_dir: Path, judges: Path, reviews: Path, task_ids: set[str]) -> list[str]:
    """A warning for each judge among `task_ids` generated from another version of its spec
    in `tasks_dir` (or whose spec or labels cannot be read): its scores follow the rubric it
    was made from, not the one the author sees now; or whose acceptance (its review record)
    compared it with other intended scores than the task's labels give now. Nothing when
    `tasks_dir` holds no such task."""
    if not tasks_dir.is_dir():
        return []
    from generator.review.staleness import intent_changes, judge_file, staleness, task_folders
    from generator.stages.spec import load_spec

    warnings = []
    for folder in task_folders(tasks_dir):
        if (
            canonical_name(folder.name) not in task_ids
            or not judge_file(judges, folder.name).is_file()
        ):
            continue
        try:
            loaded = load_spec(folder, tasks_dir)
            state = staleness(loaded, judges)
            changes = [] if state.stale else intent_changes(loaded, reviews)
        except SpecError as exc:
            warnings.append(
                f"cannot tell whether {judges / folder.name}.py follows its spec: {exc}"
            )
            continue
        if state.stale:
            warnings.append(
                f"{state.judge_path} was generated from another version of {folder} (header "
                f"spec_sha256 {str(state.judge_spec_sha256)[:19]}…, the spec now "
                f"{state.spec_sha256[:19]}…): its scores follow the rubric it was generated "
                f"from; update it with `judgegen regenerate {folder.name}`"
            )
        elif changes:
            warnings.append(
                f"the intended scores of {folder}'s sample answers changed since "
                f"{state.judge_path} passed acceptance ({reviews / folder.name}.json): "
                f"{'; '.join(changes)}; check it against them with "
                f"`judgegen regenerate {folder.name} --force`"
            )
    return warnings


def _task_of(stray: StrayFile, root: Path) -> str | None:
    parts = stray.path.relative_to(root).parts
    task = next((p for p in parts[:-1] if p), None) if len(parts) > 1 else None
    return None if task is None else canonical_name(task)


def check_task_ids(requested: set[str] | None, known: set[str]) -> None:
    """A --task naming no task of the inputs is a usage error, with the closest known id."""
    for task_id in sorted(requested or set()):
        if task_id not in known:
            hint = did_you_mean(task_id, known)
            listed = ", ".join(sorted(known)[:8]) or "none"
            raise click.UsageError(
                f"--task {task_id}: no answers for this task; "
                + (hint or f"tasks with answers: {listed}")
            )


def _progress(total: int) -> Callable[[str, ResultHead | None], None]:
    from toolkit.runner.metrics import score_text  # imported by the run's freshness check too

    done = 0

    def report(event: str, result: ResultHead | None) -> None:
        nonlocal done
        done += 1
        if result is None:
            return
        where = f"{result.agent_name}/{result.task_id}/{result.answer_name}"
        if result.status == "complete":
            detail = f"score {score_text(result.final_score)}"
        elif result.status == "excluded":
            detail = result.reason or ""
        else:
            first = result.first_error or {}
            detail = f"{first.get('type', 'error')}: {first.get('message', '')}"[:200]
        verb = "reused" if event == "reused" else result.status
        click.echo(
            f"[{done}/{total}] {where}: {verb} {detail} ({result.duration_s:.1f}s)", err=True
        )

    return report


async def _execute(
    inputs: list[AnswerInput],
    *,
    judging: RunBackend,
    options: RunOptions,
    pages: Any,
    maps: Callable[[], MapsProvider | None],
    timeout_s: float,
    sandbox: bool,
    launch: Any = None,
) -> RunReport:
    """Answer the run from the results folder when nothing needs redoing; else build the
    backend and run the evaluations. Then close the LLM client (if any) whatever happened.
    Either refuses (`ResultsOfAnotherInput`, a usage error) an agent's results folder
    holding another input's results, under the results lock, reading them once."""
    progress = _progress(len(inputs))
    try:
        if not options.overwrite:
            from toolkit.runner.freshness import fresh_run

            fresh = await fresh_run(
                inputs, options=options, backend=judging.identity, pages=pages, progress=progress
            )
            if fresh is not None:
                if launch is not None:
                    launch.kill()
                return fresh
        if sandbox and launch is None:
            launch = launch_now()
        from toolkit.runner.scheduler import run_evaluations
        from toolkit.sandbox.protocol import SandboxLimits
        from toolkit.tools.maps import maps_tools

        backend = judging.build()
        _settle_heap()
        return await run_evaluations(
            inputs,
            backend=backend,
            options=options,
            isolation="sandbox" if sandbox else "in_process",
            pages=pages,
            tools=maps_tools(maps()),
            limits=SandboxLimits(timeout_s=timeout_s),
            progress=progress,
            launch=launch,
        )
    finally:
        await judging.aclose()


def _quiet_start(command: Callable[..., Any]) -> Callable[..., Any]:
    """No cyclic garbage collection while the run starts up: imports and the LLM stack
    allocate mostly objects that live as long as the process, which the collector would scan
    over and over (~25 ms before the first LLM call). `_settle_heap` turns it back on when
    evaluations begin; it is restored on the way out whatever happened."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            gc.unfreeze()
            (gc.enable if enabled else gc.disable)()

    return wrapper


def _settle_heap() -> None:
    """Evaluations begin: freeze what start-up built (a full collection mid-run then scans
    only what the run allocates, not every module and class: a ~20-30 ms pause before) and
    collect garbage as usual again, if `_quiet_start` had stopped it."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _warm_sandbox(command: Callable[..., Any]) -> Callable[..., Any]:
    """Launch the fork server as soon as the flags are parsed — before the LLM settings are
    built, the slowest part of start-up — when this run will judge in the local sandbox and
    nothing can be fresh (`--overwrite`, or no results yet); `command` receives it as
    `launch` (None otherwise: a rerun that may be fresh starts the sandbox only if needed)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        launch = None
        context = click.get_current_context(silent=True)
        early = context.find_object(EarlySandbox) if context is not None else None
        local = kwargs.get("ray_address") is None and not kwargs.get("no_sandbox")
        judges, results = Path(kwargs["judges"]), Path(kwargs["results"])
        if local and nothing_can_be_fresh(judges, results, bool(kwargs.get("overwrite"))):
            launch = (early.take() if early is not None else None) or launch_now()
        return command(*args, launch=launch, **kwargs)

    return wrapper


def _rerun_output(
    discover: tuple[Path | None, Path | None, set[str] | None, int],
    *,
    options: RunOptions,
    judging: RunBackend,
    outcome: dict[str, Any],
) -> tuple[str, str, int] | None:
    """(stdout, stderr, exit code) of this command rerun now, when it has nothing to redo
    (None otherwise): the fresh path run again — discovery, a page store opened anew (the
    run's own remembers pages it read), freshness check, outcome — with its output captured,
    for the fresh stamp."""
    import asyncio
    import io
    from contextlib import closing, nullcontext, redirect_stderr, redirect_stdout

    from generator.cli.run_outcome import print_outcome
    from toolkit.runner.freshness import fresh_run

    out, err = io.StringIO(), io.StringIO()
    page_store = open_pages(outcome["pages"])
    with (
        closing(page_store) if page_store is not None else nullcontext(),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        inputs, strays = _discover(*discover)
        report = asyncio.run(
            fresh_run(
                inputs,
                options=options,
                backend=judging.identity,
                pages=page_store,
                progress=_progress(len(inputs)),
            )
        )
        if report is None:
            return None
        client = judging if judging.usage_reporter is not None else None
        source = discover[0] or discover[1]
        assert source is not None
        code = print_outcome(report, client=client, strays=strays, inputs=source, **outcome)
    return out.getvalue(), err.getvalue(), code


def _maps_loader(spec: str | None) -> Callable[[], MapsProvider | None]:
    """What builds the `--maps` provider when a judge is about to run; a factory spec is
    loaded now, so a wrong one is a usage error even when nothing needs judging."""
    if spec is None or spec in ("google", "none"):
        return lambda: load_maps_provider(spec)
    provider = load_maps_provider(spec)
    return lambda: provider


@click.command()
@replay_fresh_run
@click.option(
    "--answers",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Mind2Web 2 answers: DIR/<agent>/<task_id>/*.md (or one agent's folder).",
)
@click.option(
    "--trajectories",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A webeval run: DIR/traj/<task_id>/*_final_answer.json.",
)
@click.option(
    "--task",
    "tasks",
    multiple=True,
    callback=lambda ctx, param, value: tuple(canonical_name(task) for task in value),
    help="Only these task ids (repeatable).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 256),
    help="Evaluations in flight at most, each sandboxed one in its own process forked from "
    "one warm fork server [default: 4 x the LLM --concurrency, so sequential judges keep "
    "every model slot busy].",
)
@click.option(
    "--judges",
    default="generated_judges",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option(
    "--results",
    default="results",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option(
    "--score-name",
    metavar="NAME",
    default=DEFAULT_SCORE_NAME,
    show_default=True,
    callback=_score_name,
    help="With --trajectories: write webeval score files as <traj dir>/scores/NAME_<task_id>.json, "
    "so runs into other results folders (e.g. other judge models) keep theirs side by side. "
    "A run whose score files another results folder wrote is refused. A results folder writes "
    "under one name at a time: run under another NAME, it withdraws the score files it wrote "
    "under its earlier names (listed in RESULTS/score_names.json), which would keep scores it "
    "no longer holds.",
)
@click.option(
    "--reviews",
    default="reviews",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where `judgegen approve` records approvals.",
)
@click.option(
    "--tasks-dir",
    "tasks_dir",
    default="tasks",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Task specs: a judge generated from another version of its task's spec, or accepted "
    "against other intended scores than the task's labels give now, is named in a warning "
    "(`judgegen regenerate` it).",
)
@backend_options
@click.option("--include-unreviewed", is_flag=True, help="Also run judges without approval.")
@click.option("--overwrite", is_flag=True, help="Redo every result, fresh or not.")
@click.option(
    "--timeout",
    "timeout_s",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per evaluation; a judge still running is stopped and reported incomplete.",
)
@click.option("--max-answer-bytes", default=DEFAULT_MAX_ANSWER_BYTES, show_default=True, type=int)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run judges in this process: no isolation, and a judge that blocks cannot be stopped.",
)
@click.option(
    "--require-sandbox",
    is_flag=True,
    help="Fail (exit 3) when the OS refuses any sandbox guard, instead of warning: the "
    "evaluation lacking it fails before its judge's code loads.",
)
@click.option(
    "--maps",
    "maps_spec",
    metavar="PROVIDER",
    help="Maps provider for judges' GoogleMapsTool: google, none, or package.module:factory "
    "(e.g. a ScriptedMapsProvider for offline runs). Default: google if GOOGLE_MAPS_API_KEY "
    "is set, else none.",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Exit 2 at once if another run is writing the results folder (default: wait).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
@ray_options
@_warm_sandbox
@_quiet_start
@llm_options
def run(
    answers: Path | None,
    trajectories: Path | None,
    tasks: tuple[str, ...],
    jobs: int | None,
    judges: Path,
    results: Path,
    score_name: str,
    reviews: Path,
    tasks_dir: Path,
    backend_spec: str | None,
    pages: Path | None,
    include_unreviewed: bool,
    overwrite: bool,
    timeout_s: float,
    max_answer_bytes: int,
    no_sandbox: bool,
    require_sandbox: bool,
    maps_spec: str | None,
    no_wait: bool,
    as_json: bool,
    ray_address: str | None,
    ray_attempts: int,
    llm_settings: LLMSettings,
    launch: Any,
) -> None:
    """Score every answer with its task's reviewed judge; write results and metrics.

    Results go to RESULTS/<agent>/<task_id>/<answer>.json (for trajectories also
    <traj dir>/scores/judgegen_<task_id>.json, named with --score-name) and
    RESULTS/<agent>/summary.json. A rerun
    redoes only missing, incomplete or stale results (--overwrite: all); a result is stale
    when the judge, answer, backend, judge templates, judgegen's toolkit code, the cited
    pages it read (or found missing), the --maps provider it called or whether
    --max-answer-bytes excludes the answer differ now. One run at a time writes a results folder;
    another one waits. RESULTS/<agent> holds one input's results: a run whose agent's
    folder holds results of another input folder (webeval runs with the same run id) is
    refused; give it its own --results. Each score file names the results folder that wrote
    it: a run whose score files another results folder (still there) wrote is refused; give
    it its own --score-name. One whose writer is gone, or names none, is taken over. A
    results folder run under another --score-name withdraws the score files it wrote under
    its earlier names (never another folder's), with a note.
    When nothing at all changed since a run that left nothing to redo (flags, environment,
    code, any input or result file), the rerun prints its answer from
    RESULTS/.judgegen-fresh.stamp without loading the runner.

    Answers are laid out as DIR/<agent>/<task_id>/<answer>.md; a task folder (or its
    answers/) runs that task's samples as agent `samples`. Files the layout leaves out are
    listed and make the exit code 1.

    Only judges approved for their current bytes run (`judgegen approve`), unless
    --include-unreviewed. Inputs: an empty answer (or webeval's over-budget final_answer,
    empty or "<no_answer>") scores 0 without the judge; invalid UTF-8 is decoded with replacement
    characters (noted in the result); binary or oversized answers, aborted trajectories and
    malformed trajectory folders are excluded with a reason; the last line on stderr (and
    --json's evaluated, decided, reused) counts the results judged now, those their input
    decided without a judge (when there are any), and those up to date. Incomplete and excluded
    evaluations are left out of the metrics and listed. Results whose answer (or whole task,
    or trajectory) was removed are not counted; a removed task scores 0 in each run, as
    Mind2Web 2 scores a missing answer. Only with --task are other tasks' results counted
    as found.

    \b
    Example:
      judgegen run --answers tasks/rust_2024_edition/samples --pages pages --provider replay:recordings/rust_2024_edition
      judgegen run --trajectories tests/fixtures/runner/webeval/fara-run \
        --judges tests/fixtures/runner/judges --include-unreviewed \
        --backend tests.fixtures.runner.scripted:factory

    \b
    Exit codes: 0 every evaluation complete; 1 some incomplete, malformed or unjudged
    inputs, judges held back for approval, or nothing evaluated; 2 usage or input error
    (or the results folder is busy with --no-wait); 3 an infrastructure failure (e.g.
    budget, the provider failing N calls in a row: N = max(10, 2 x --concurrency), or
    refusing the configuration: a rejected key, HTTP 404 for a --base-url or --model it
    does not have, or the same HTTP 400 for 3 different requests in a row, e.g. a
    response_format it does not take) stopped the run; 130 stopped by Ctrl-C (SIGINT), 143
    stopped by SIGTERM: the results, LLM answers and ledger rows of what finished are kept
    and the rerun redoes only the rest (a second SIGTERM ends it at once, keeping less).

    With --ray, judges run on the nodes of a Ray cluster (each node sandboxes them the same
    way) while this process writes every result; one gateway actor on this node holds the
    keys, limits, budget, ledger, cache and page store. Results are the same as locally.
    """
    from generator.cli.run_outcome import print_outcome
    from toolkit.runner.options import RunOptions, default_jobs
    from toolkit.runner.results import leftover_agent_folders

    if not judges.is_dir():
        raise click.UsageError(f"no judges directory {judges} (use --judges DIR)")
    if require_sandbox and no_sandbox:
        raise click.UsageError("--require-sandbox and --no-sandbox contradict each other")
    try:
        inputs, strays = _discover(answers, trajectories, set(tasks) or None, max_answer_bytes)
    except OSError as exc:
        raise click.UsageError(f"cannot read inputs: {exc}") from exc
    if not inputs:
        raise click.UsageError("no answers found (check --answers/--trajectories and --task)")
    samples = samples_task(answers) if answers is not None else None
    if trajectories is not None:
        check_score_writers(results, trajectories, inputs, score_name)
    stale = stale_judges(tasks_dir, judges, reviews, {item.task_id for item in inputs})
    for warning in stale:
        click.echo(f"warning: {warning}", err=True)
    leftover = leftover_agent_folders(results, {item.agent_name for item in inputs})
    for found in leftover:  # not refused: the run neither reads nor writes them
        click.echo(f"warning: {found}", err=True)
    try:
        page_store = open_pages(pages)
        judging = RunBackend(backend_spec, llm_settings)
        maps = _maps_loader(maps_spec)
    except (SpecError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from exc
    options = RunOptions(
        judges_dir=judges,
        pages_dir=pages,
        results_dir=results,
        max_answer_bytes=max_answer_bytes,
        reviews_dir=reviews,
        include_unreviewed=include_unreviewed,
        overwrite=overwrite,
        jobs=jobs or default_jobs(llm_settings.concurrency),
        backend_spec=judging.spec,
        require_sandbox=require_sandbox,
        tools=maps_identity(maps_spec),
        score_name=score_name,
        tasks=frozenset(tasks) or (frozenset({samples}) if samples else None),
        inputs_by_task=samples is not None,  # each task's samples come from its own folder
        abandoned_wait_s=min(timeout_s, llm_settings.timeout_s),
    )
    work: Callable[[], Coroutine[Any, Any, tuple[RunReport, Any]]]
    if ray_address is not None:
        from generator.cli.ray_run import cluster_work

        work = cluster_work(
            inputs,
            address=ray_address,
            attempts=ray_attempts,
            backend_spec=backend_spec,
            settings=llm_settings,
            pages=pages,
            maps=maps,
            options=options,
            timeout_s=timeout_s,
            sandbox=not no_sandbox,
            progress=_progress(len(inputs)),
        )
        _settle_heap()
    else:

        async def work() -> tuple[RunReport, Any]:
            report = await _execute(
                inputs,
                judging=judging,
                options=options,
                pages=page_store,
                maps=maps,
                timeout_s=timeout_s,
                sandbox=not no_sandbox,
                launch=launch,
            )
            return report, judging.usage_reporter

    from generator.cli.rerun import cache_after, rerun_note
    from generator.cli.stopping import Stopped, run_stoppable
    from toolkit.runner.results_lock import results_lock

    mode = None if backend_spec else llm_settings.cache_mode
    try:
        say = functools.partial(click.echo, err=True)
        with results_lock(results, wait=not no_wait, notify=say) as locked:
            remove_stamp(results)  # results may change now: no stamp may vouch for them
            try:
                report, usage_reporter = run_stoppable(work())
            except Stopped:  # rows of calls that ended as the loop ended, as below
                judging.close_after_loop()
                raise
            judging.close_after_loop()
            warned = bool(stale or leftover)  # a stamp would replay the run without them
            if locked is not None and ray_address is None and report.exit_code == 0 and not warned:
                record(
                    click.get_current_context().params,
                    lambda: _rerun_output(
                        (answers, trajectories, set(tasks) or None, max_answer_bytes),
                        options=options,
                        judging=judging,
                        outcome={
                            "as_json": as_json,
                            "pages": pages,
                            "results": results,
                            "cache_mode": mode,
                            "overwrite": overwrite,
                            "score_name": score_name,
                        },
                    ),
                    watched=tuple(str(path) for path in judging.answer_sources),
                    provider=judging.provider,
                )
    except ResultsBusy as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except Stopped as stop:  # what finished is written; in-flight calls have their rows
        note = rerun_note("run", mode, overwrite=overwrite)
        click.echo(f"error: {stop} before the run finished. {note}", err=True)
        sys.exit(stop.exit_code)
    except (InfraError, OSError) as exc:
        click.echo(f"error: infrastructure failure stopped the run: {exc}", err=True)
        click.echo(rerun_note("run", cache_after(exc, mode), overwrite=overwrite), err=True)
        sys.exit(3)
    except JudgegenError as exc:
        raise click.UsageError(str(exc)) from exc
    source = answers or trajectories
    assert source is not None
    code = print_outcome(
        report,
        as_json=as_json,
        client=usage_reporter,
        strays=strays,
        inputs=source,
        pages=pages,
        results=results,
        cache_mode=mode,
        overwrite=overwrite,
        score_name=score_name,
    )
    sys.exit(code)
