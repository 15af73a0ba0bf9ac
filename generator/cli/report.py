"""`judgegen report`: the metrics table of one agent's results, recomputed from the files."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from generator.cli.report_inputs import ReportInputs
from toolkit.errors import NameCollision
from toolkit.names import canonical_name
from toolkit.runner.inputs import DEFAULT_MAX_ANSWER_BYTES
from toolkit.runner.metrics import (
    SUMMARY_VERSION,
    Listed,
    Summary,
    compute_summary,
    format_table,
)
from toolkit.runner.results import (
    SUMMARY_FILE,
    EvaluationResult,
    ResultHead,
    ResultStore,
    agent_folder_spellings,
    iter_result_files,
    iter_results,
    read_result,
)
from toolkit.runner.stale_results import (
    FreshnessCheck,
    ReportRecord,
    StaleResult,
    check_results,
)
from toolkit.util.files import write_atomic

if TYPE_CHECKING:
    from generator.review.report import LeftOut

STALE_EXIT = 4
"""`judgegen report`'s exit code when counted results are stale (without --allow-stale)."""


def _previous(agent_dir: Path) -> Summary | None:
    """The agent's summary.json as the run that last wrote it left it; None when there is
    none, or it cannot be read (said on stderr: the metrics are then the result files'
    alone). One a newer judgegen wrote is a usage error: read as this one's, what it leaves
    out or scopes in ways this judgegen does not know would be counted."""
    path = agent_dir / SUMMARY_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _unread_summary(path, exc)
        return None
    try:
        version = json.loads(data).get("version")
    except (ValueError, AttributeError) as exc:
        _unread_summary(path, exc)
        return None
    if isinstance(version, int) and version > SUMMARY_VERSION:
        raise click.UsageError(
            f"{path}: a newer judgegen wrote it (summary version {version}; this judgegen "
            f"reads up to {SUMMARY_VERSION}): report it with that judgegen, or rewrite it with "
            "this one (`judgegen run` over the same answers)"
        )
    try:
        return Summary.model_validate_json(data)
    except ValueError as exc:
        _unread_summary(path, exc)
        return None


def _unread_summary(path: Path, exc: Exception) -> None:
    """Say that the summary.json at `path` cannot be read: the report goes on without it."""
    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    click.echo(
        f"note: {path} cannot be read ({why}): the metrics are computed from the result files "
        "alone, without what the last run left out (rerun `judgegen run` to rewrite it)",
        err=True,
    )


def _heads(
    agent_dir: Path,
    known: list[ResultHead] = (),  # type: ignore[assignment]
) -> tuple[list[ResultHead], dict[Path, str]]:
    """The heads of the agent's results (those in `known` used as they are), and its files
    that are none (unreadable, or a copy of another pair's result), with why, listed as a
    run lists them: never dropped or counted unseen."""
    unreadable: dict[Path, str] = {}
    store = ResultStore(agent_dir.parent)
    heads = list(store.iter_heads(agent_dir.name, known=known, unreadable=unreadable))
    return heads, unreadable


_FileKey = tuple[str, str]
"""A result file of one agent's folder: (its task folder's name, its file name)."""


def _file_key(path: Path) -> _FileKey:
    """The key of the result file at `path` (`_FileKey`)."""
    return path.parent.name, path.name


@dataclass
class _Agent:
    """One agent's results as `report` reads them: the heads, the files that are no result of
    their own path (unreadable, a copy of another pair's result) and why, by `_FileKey`, the
    summary.json of the run that last wrote it (None: none), and the freshness check of the
    results its metrics would count."""

    folder: Path
    heads: list[ResultHead]
    not_results: dict[_FileKey, str]
    previous: Summary | None
    freshness: FreshnessCheck

    @property
    def name(self) -> str:
        """The agent's name: its folder's, in the spelling `judgegen run` names agents in
        (`canonical_name`), however the folder is spelled on disk."""
        return canonical_name(self.folder.name)

    @property
    def unreadable(self) -> list[Listed]:
        """The files that are no result of their own path, listed as a run lists them."""
        return [
            Listed(task_id=task, answer_name=Path(name).stem, reason=why)
            for (task, name), why in self.not_results.items()
        ]

    @property
    def left(self) -> dict[tuple[str, str], Listed]:
        """The result files the last run left out of the metrics, by (task, answer)."""
        return _left(self.previous)

    @property
    def stale(self) -> list[StaleResult]:
        """The results the freshness check found stale."""
        return self.freshness.stale


def _left(previous: Summary | None) -> dict[tuple[str, str], Listed]:
    """The result files the run that wrote `previous` left out, by (task, answer)."""
    listed = previous.not_counted if previous is not None else []
    return {(r.task_id, r.answer_name): r for r in listed}


def _read_agent(agent_dir: Path, inputs: ReportInputs) -> _Agent:
    """Read `agent_dir`, each result file parsed once (for its head and its fingerprint),
    and check the freshness of the results its metrics would count against the inputs its
    last run read (`ReportInputs`)."""
    store = ResultStore(agent_dir.parent)
    paths = {str(path) for path in agent_dir.glob("*/*.json")}
    own = [
        result
        for path, result in iter_result_files(agent_dir)
        if _own_file(path, store.path(agent_dir.name, result.task_id, result.answer_name), paths)
    ]  # a copy of another pair's result is listed by `_heads`, never checked
    heads, unreadable = _heads(agent_dir, [ResultHead.of(r) for r in own])
    previous = _previous(agent_dir)
    left = _left(previous)
    counted = [r for r in own if (r.task_id, r.answer_name) not in left]
    now = inputs.for_agent(agent_dir, canonical_name(agent_dir.name), previous)
    freshness = asyncio.run(check_results(counted, now))
    not_results = {_file_key(path): why for path, why in unreadable.items()}
    return _Agent(agent_dir, heads, not_results, previous, freshness)


def _own_file(path: Path, own: Path, paths: set[str]) -> bool:
    """Whether the result file `path` is that of its own pair (`own`, where the store puts it)
    in any spelling of the names (`toolkit.names`), and not an older twin beside the same file
    spelled canonically (among `paths`), which `ResultStore.iter_heads` lists, never counts."""
    spelled = canonical_name(str(path))
    twin = spelled != str(path) and spelled in paths
    return not twin and spelled == canonical_name(str(own))


def _summary(agent: _Agent) -> Summary:
    """The metrics of an agent's results as the run that last wrote its summary.json scoped
    them: results it left out (answer gone, judge held back, outdated) stay out and listed,
    its skipped judges, unchecked tasks and judges the agent did not answer stay named, its
    removed tasks (while their result files remain) scored 0, and the pairs it did not
    evaluate left out (`_answered`). A result file unreadable now is listed, its pair left out
    as the run leaves it. A result stale now is left out and listed as a run leaves an
    outdated result it stopped before redoing: its pair not evaluated while its answer
    exists (not scored 0 as missing), missing once its answer is gone. It names the judges
    folder and page store that run read, as its summary.json does."""
    heads, unreadable, previous = agent.heads, agent.unreadable, agent.previous
    stale = {(s.task_id, s.answer_name): s for s in agent.stale}
    stale_listed = [
        Listed(task_id=t, answer_name=a, reason=s.reason) for (t, a), s in stale.items()
    ]
    present = {pair for pair, s in stale.items() if s.answer_exists}
    name = agent.name
    if previous is None:
        counted = [h for h in heads if (h.task_id, h.answer_name) not in stale]
        answered: dict[str, set[str]] | None = None
        if stale:  # the answers known: those of the results counted, and of the stale ones
            answered = defaultdict(set)
            for task_id, answer_name in [*((h.task_id, h.answer_name) for h in counted), *present]:
                answered[task_id].add(answer_name)
        listed = unreadable + stale_listed
        return compute_summary(name, counted, not_counted=listed, answered=answered)
    left = agent.left
    on_disk = _pairs_on_disk(agent.folder)
    still = [listed for pair, listed in left.items() if _canonical(pair) in on_disk]
    unread = {
        (r.task_id, r.answer_name): r for r in unreadable if (r.task_id, r.answer_name) not in left
    }
    counted = [h for h in heads if (h.task_id, h.answer_name) not in left.keys() | stale.keys()]
    return compute_summary(
        name,
        counted,
        skipped_judges=previous.skipped_judges,
        include_unreviewed=previous.include_unreviewed,
        not_counted=still + list(unread.values()) + stale_listed,
        unchecked_tasks=previous.unchecked_tasks,
        answered=_answered(previous, counted, set(unread), present),
        removed_tasks={t for t in previous.removed_tasks if t in {r.task_id for r in still}},
        judged_tasks=previous.unanswered_judges,
    ).model_copy(
        update={
            "judges_dir": previous.judges_dir,
            "pages_dir": previous.pages_dir,
            "max_answer_bytes": previous.max_answer_bytes,
        }
    )


def _canonical(pair: tuple[str, str]) -> tuple[str, str]:
    return canonical_name(pair[0]), canonical_name(pair[1])


def _pairs_on_disk(folder: Path) -> set[tuple[str, str]]:
    """The (task, answer) of every result file in the agent's `folder`, in canonical spelling
    (`toolkit.names`): a file is found whichever spelling its names have on disk."""
    return {_canonical((path.parent.name, path.stem)) for path in folder.glob("*/*.json")}


def _answered(
    previous: Summary,
    counted: list[ResultHead],
    unread: set[tuple[str, str]],
    present: set[tuple[str, str]],
) -> dict[str, set[str]]:
    """The answer names each task the last run checked had, as its summary.json tells: those
    of the results counted, of the pairs it did not evaluate (their answer exists) and of
    the pairs it counted whose result file is `unread` now; its missing pairs had none. And
    the `present` pairs, stale results whose answer is there now. Without this, a pair
    left out (the run stopped before judging it, or its result outdated) would be scored 0
    as missing."""
    unchecked = set(previous.unchecked_tasks)
    answered: dict[str, set[str]] = defaultdict(set)
    pairs = [(h.task_id, h.answer_name) for h in counted]
    pairs += [(m.task_id, m.answer_name) for m in previous.not_evaluated]
    pairs += [pair for pair in unread if pair in _counted_pairs(previous)]
    pairs += sorted(present)
    for task_id, answer_name in pairs:
        if task_id not in unchecked:
            answered[task_id].add(answer_name)
    return answered


def _counted_pairs(summary: Summary) -> set[tuple[str, str]]:
    """The (task, answer) pairs `summary` has a counted result of."""
    return {
        (task_id, name)
        for task_id, task in summary.per_task.items()
        for name in (*task.scores, *task.incomplete, *task.excluded)
    }


def _agents(path: Path) -> dict[Path, list[tuple[Path, EvaluationResult]]]:
    """Results, each with its file, by agent folder from RESULTS/<agent>, RESULTS/ or one
    result file."""
    if path.is_file():
        result = read_result(path)
        return {path.parent.parent: [(path, result)]} if result else {}
    own = list(iter_result_files(path))
    if own:
        return {path: own}
    agents = {sub: list(iter_result_files(sub)) for sub in sorted(path.iterdir()) if sub.is_dir()}
    found = {folder: results for folder, results in agents.items() if results}
    _check_agent_spellings(path, found)
    return found


def _check_agent_spellings(results_dir: Path, folders: Iterable[Path]) -> None:
    """A usage error when two agent folders of `results_dir` are one name spelled apart only
    by Unicode normalization (`agent_folder_spellings`): the page would show them as one."""
    found = agent_folder_spellings(results_dir, folders)
    if found:
        raise click.UsageError(str(found[0]))


def _write_html(path: Path, out: Path, inputs: ReportInputs) -> tuple[int, list[_Agent]]:
    """Write the HTML report of `path` to `out`: (1 when some results its metrics count (a
    single file: the result) are incomplete else 0, the agents whose metrics it shows, their
    freshness checked). The result files those metrics leave out (stale now, left out by the
    last run, or a copy of another file's result) are marked on the page, with the reason."""
    from generator.review.report import render_report

    agents = _agents(path)
    if not agents:
        raise click.UsageError(f"no results in {path} (pass RESULTS/, RESULTS/<agent> or a file)")
    results = [r.model_dump(mode="json") for files in agents.values() for _, r in files]
    if path.is_file():
        write_atomic(out, render_report(results))
        click.echo(f"wrote {out} ({len(results)} result(s))", err=True)
        return (1 if results[0]["status"] == "incomplete" else 0), []
    metrics: dict[str, dict[str, object]] = {}
    left_out: list[LeftOut | None] = []
    read: list[_Agent] = []
    incomplete = False
    for folder, files in agents.items():
        agent = _read_agent(folder, inputs)
        read.append(agent)
        summary = _summary(agent)
        incomplete = incomplete or summary.counts.incomplete > 0
        metrics[agent.name] = {  # tasks and runs: agents side by side may cover other sets
            "tasks": summary.num_tasks,
            "runs": len(summary.runs),
            "partial_completion": summary.partial_completion.mean,
            "success_rate": summary.success_rate.mean,
            f"pass@{summary.pass_at_k.k}": summary.pass_at_k.value,
            "complete": summary.counts.complete,
            "incomplete": summary.counts.incomplete,
            "excluded": summary.counts.excluded,
            "missing": len(summary.missing),
            "not_evaluated": len(summary.not_evaluated),
        }
        if agent.stale:  # left out of these metrics: the page says how many
            metrics[agent.name]["stale"] = len(agent.stale)
        left_out += [_left_out_mark(agent, file, result) for file, result in files]
    write_atomic(out, render_report(results, metrics, left_out=left_out))
    click.echo(f"wrote {out} ({len(results)} result(s))", err=True)
    return (1 if incomplete else 0), read


def _left_out_mark(agent: _Agent, file: Path, result: EvaluationResult) -> LeftOut | None:
    """How the page marks `result`, read from `file`, when the agent's metrics leave it out
    (`_summary`): a file that is no result of its own path (a copy of another pair's, as
    `answer_1 (copy).json`: never counted, named with why), one left out by the run that
    wrote its summary.json, or stale now; None when they count it."""
    from generator.review.report import LeftOut

    why = agent.not_results.get(_file_key(file))
    if why is not None:
        return LeftOut("not counted", f"{file.parent.name}/{file.name}: {why}")
    pair = (result.task_id, result.answer_name)
    stale = {(s.task_id, s.answer_name): s for s in agent.stale}
    if pair in agent.left:
        return LeftOut("not counted", agent.left[pair].reason)
    if pair in stale:
        return LeftOut("stale", stale[pair].reason)
    return None


def freshness_lines(agent: str, check: FreshnessCheck) -> list[str]:
    """What the freshness check of `agent`'s results found, as the report says it: each
    stale result (task/answer: why), and what could not be checked."""
    lines = []
    if check.stale:
        accepted = " (accepted with --allow-stale)" if check.allow_stale else ""
        lines.append(
            f"STALE{accepted}: {len(check.stale)} result(s) of {agent} no longer stand for "
            "their inputs: left out of the metrics (run `judgegen run` again to redo them)"
        )
        lines += [f"  {s.task_id}/{s.answer_name}: {s.reason}" for s in check.stale]
    lines += [f"freshness not checked: {why}" for why in check.unchecked]
    return lines


def _stale_exit(agents: list[_Agent], allow_stale: bool) -> bool:
    """Whether stale results make the exit code (`STALE_EXIT`): some found, not accepted;
    says so on stderr."""
    stale = sum(len(a.stale) for a in agents)
    if not stale or allow_stale:
        return False
    click.echo(
        f"error: {stale} stale result(s) left out of the metrics (exit {STALE_EXIT}): run "
        "`judgegen run` again to redo them, or pass --allow-stale to accept the metrics "
        "without them",
        err=True,
    )
    return True


@click.command()
@click.argument("agent_dir", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as JSON, with what the freshness check found and the folders it "
    "read (`freshness`).",
)
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML report (RESULTS/, RESULTS/<agent> or one result).",
)
@click.option(
    "--judges",
    show_default="the run's, as its summary.json records; else generated_judges",
    type=click.Path(file_okay=False, path_type=Path),
    help="The judges folder each result's judge is compared with (one other than the run's "
    "is said on stderr).",
)
@click.option(
    "--pages",
    show_default="the run's, as its summary.json records; else none",
    type=click.Path(file_okay=False, path_type=Path),
    help="The page store the pages each result read are compared with (one other than the "
    "run's is said on stderr).",
)
@click.option(
    "--max-answer-bytes",
    show_default=f"the run's, as its summary.json records; else {DEFAULT_MAX_ANSWER_BYTES}",
    type=int,
    help="The size above which an answer is excluded, as `judgegen run` took it: whether it "
    "excludes an answer is part of its result (one other than the run's is said on stderr).",
)
@click.option(
    "--allow-stale",
    is_flag=True,
    help=f"Exit as if no result were stale (not {STALE_EXIT}); they are still listed and "
    "left out of the metrics.",
)
def report(
    agent_dir: Path,
    as_json: bool,
    html: Path | None,
    judges: Path | None,
    pages: Path | None,
    max_answer_bytes: int | None,
    allow_stale: bool,
) -> None:
    """Print Partial Completion, Success Rate and Pass@k for RESULTS/<agent>.

    Metrics follow Mind2Web 2's definitions: a (task, run) pair the agent has no answer for
    scores 0 and is listed as missing; incomplete and excluded evaluations are left out and
    listed. Skipped judges, the result files the last run left out of the metrics (answer
    gone, judge held back, outdated) and the pairs it did not evaluate (their answer exists:
    left out, not scored 0) come from its summary.json.

    Each result counted is checked as `judgegen run` checks a stored result before reusing
    it: one whose answer (at the path it records), judge (in --judges), judge templates,
    judgegen's toolkit code, cited pages (in --pages) or outcome (--max-answer-bytes) changed
    since, or whose answer is gone, is stale. --judges, --pages and --max-answer-bytes default
    to the judges folder, page store and limit of the run that wrote the agent's summary.json
    (each agent's own, for RESULTS/); given ones other than those are used, and said on stderr
    (`note: ...`). Stale results are listed (first in the table;
    `freshness.stale` in --json) and left out of the metrics, as a run's summary leaves out
    the outdated results it did not redo: their pair is not evaluated while the answer
    exists, missing (scored 0) once it is gone. The backend, models and --maps provider are
    each result's own. What cannot be checked (no judges folder or no judge there, an input
    folder moved, pages read from a store neither --pages nor the summary gives, as one
    written before judgegen recorded it) is said as `freshness not checked: <why>`
    (`freshness.unchecked`); those results count as found.

    \b
    With --html OUT, also write one self-contained HTML page (metrics, per-answer table,
    collapsible rubric trees with each verdict's reasoning) for RESULTS/<agent>, for all
    agents under RESULTS/, or for a single result file (those two print no table; a single
    file's freshness is not checked). A result the metrics leave out (stale, not counted by
    the last run, or a copy such as `answer_1 (copy).json`) is marked so in the table and
    over its tree, with the reason.

    \b
    Example:
      judgegen report results/samples --json
      judgegen report results/samples --pages pages
      judgegen report results/ --html report.html

    \b
    Exit codes: 0 every result complete and current; 1 some results are incomplete; 2 no
    results found; 4 some results are stale (listed; left out of the metrics): run
    `judgegen run` again, or pass --allow-stale to exit 0 or 1 as without them.
    """
    with ExitStack() as stack:
        inputs = ReportInputs(judges, pages, max_answer_bytes, stack)
        try:
            code = _report(agent_dir, inputs, as_json=as_json, html=html, allow_stale=allow_stale)
        except NameCollision as exc:  # two judges of one task, as `judgegen run` refuses them
            raise click.UsageError(str(exc)) from exc
    sys.exit(code)


def _report(
    agent_dir: Path, inputs: ReportInputs, *, as_json: bool, html: Path | None, allow_stale: bool
) -> int:
    """Print (and write) what `report` shows; its exit code."""
    read: list[_Agent] = []
    if html is not None:
        html_exit, read = _write_html(agent_dir, html, inputs)
        if agent_dir.is_file() or not any(iter_results(agent_dir)):
            if agent_dir.is_file():
                click.echo(
                    "freshness not checked: one result file (pass RESULTS/<agent> to check it)",
                    err=True,
                )
            for agent in read:
                for line in freshness_lines(agent.name, _accepted(agent, allow_stale)):
                    click.echo(line, err=True)
            return STALE_EXIT if _stale_exit(read, allow_stale) else html_exit
    elif agent_dir.is_file():
        raise click.UsageError("a single result file needs --html OUT")
    if not any(iter_results(agent_dir)):
        raise click.UsageError(
            f"no result files under {agent_dir}/<task>/<answer>.json (pass RESULTS/<agent>)"
        )
    agent = next((a for a in read if a.folder == agent_dir), None) or _read_agent(agent_dir, inputs)
    check = _accepted(agent, allow_stale)
    summary = _summary(agent)
    lines = freshness_lines(agent.name, check)
    if as_json:
        record = ReportRecord(**dict(summary), freshness=check)
        click.echo(json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True))
        for line in lines:
            click.echo(line, err=True)
    else:
        click.echo("\n".join([*lines, format_table(summary)]))
    if _stale_exit([agent], allow_stale):
        return STALE_EXIT
    return 1 if summary.counts.incomplete else 0


def _accepted(agent: _Agent, allow_stale: bool) -> FreshnessCheck:
    """The agent's freshness check, marked with whether --allow-stale accepts it."""
    return agent.freshness.model_copy(update={"allow_stale": allow_stale})
