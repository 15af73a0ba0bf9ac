"""`judgegen report`: the metrics table of one agent's results, recomputed from the files."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import click

from toolkit.runner.metrics import Listed, Summary, compute_summary, format_table
from toolkit.runner.results import (
    SUMMARY_FILE,
    EvaluationResult,
    ResultHead,
    ResultStore,
    iter_results,
    read_result,
)
from toolkit.util.files import write_atomic


def _previous(agent_dir: Path) -> Summary | None:
    try:
        return Summary.model_validate_json((agent_dir / SUMMARY_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def _heads(agent_dir: Path) -> tuple[list[ResultHead], list[Listed]]:
    """The heads of the agent's results, and its files that are none (unreadable, or a copy
    of another pair's result), listed as a run lists them: never dropped or counted unseen."""
    unreadable: dict[Path, str] = {}
    heads = list(ResultStore(agent_dir.parent).iter_heads(agent_dir.name, unreadable=unreadable))
    listed = [
        Listed(task_id=path.parent.name, answer_name=path.stem, reason=why)
        for path, why in unreadable.items()
    ]
    return heads, listed


def _summary(agent_dir: Path) -> Summary:
    """The metrics of an agent's results as the run that last wrote its summary.json scoped
    them: results it left out (answer gone, judge held back, outdated) stay out and listed,
    its skipped judges, unchecked tasks and judges the agent did not answer stay named, its removed tasks (while their
    result files remain) scored 0, and the pairs it did not evaluate left out (`_answered`).
    A result file unreadable now is listed, its pair left out as the run leaves it."""
    heads, unreadable = _heads(agent_dir)
    previous = _previous(agent_dir)
    if previous is None:
        return compute_summary(agent_dir.name, heads, not_counted=unreadable)
    left = {(r.task_id, r.answer_name): r for r in previous.not_counted}
    store = ResultStore(agent_dir.parent)
    still = [
        listed
        for (task, answer), listed in left.items()
        if store.path(agent_dir.name, task, answer).exists()
    ]
    unread = {
        (r.task_id, r.answer_name): r for r in unreadable if (r.task_id, r.answer_name) not in left
    }
    counted = [h for h in heads if (h.task_id, h.answer_name) not in left]
    return compute_summary(
        agent_dir.name,
        counted,
        skipped_judges=previous.skipped_judges,
        include_unreviewed=previous.include_unreviewed,
        not_counted=still + list(unread.values()),
        unchecked_tasks=previous.unchecked_tasks,
        answered=_answered(previous, counted, set(unread)),
        removed_tasks={t for t in previous.removed_tasks if t in {r.task_id for r in still}},
        judged_tasks=previous.unanswered_judges,
    )


def _answered(
    previous: Summary, counted: list[ResultHead], unread: set[tuple[str, str]]
) -> dict[str, set[str]]:
    """The answer names each task the last run checked had, as its summary.json tells: those
    of the results counted, of the pairs it did not evaluate (their answer exists) and of
    the pairs it counted whose result file is `unread` now; its missing pairs had none.
    Without this, a pair the run left out (stopped before judging it, or its result
    outdated) would be scored 0 as missing."""
    unchecked = set(previous.unchecked_tasks)
    answered: dict[str, set[str]] = defaultdict(set)
    pairs = [(h.task_id, h.answer_name) for h in counted]
    pairs += [(m.task_id, m.answer_name) for m in previous.not_evaluated]
    pairs += [pair for pair in unread if pair in _counted_pairs(previous)]
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


def _agents(path: Path) -> dict[Path, list[EvaluationResult]]:
    """Results by agent folder from RESULTS/<agent>, RESULTS/ or one result file."""
    if path.is_file():
        result = read_result(path)
        return {path.parent.parent: [result]} if result else {}
    own = list(iter_results(path))
    if own:
        return {path: own}
    agents = {sub: list(iter_results(sub)) for sub in sorted(path.iterdir()) if sub.is_dir()}
    return {folder: results for folder, results in agents.items() if results}


def _write_html(path: Path, out: Path) -> int:
    """Write the HTML report of `path` to `out`; 1 when some results are incomplete."""
    from generator.review.report import render_report

    agents = _agents(path)
    if not agents:
        raise click.UsageError(f"no results in {path} (pass RESULTS/, RESULTS/<agent> or a file)")
    results = [r.model_dump(mode="json") for rs in agents.values() for r in rs]
    metrics = None
    if not path.is_file():
        metrics = {}
        for folder in agents:
            summary = _summary(folder)
            metrics[folder.name] = {
                "partial_completion": summary.partial_completion.mean,
                "success_rate": summary.success_rate.mean,
                f"pass@{summary.pass_at_k.k}": summary.pass_at_k.value,
                "complete": summary.counts.complete,
                "incomplete": summary.counts.incomplete,
                "missing": len(summary.missing),
                "not_evaluated": len(summary.not_evaluated),
            }
    write_atomic(out, render_report(results, metrics))
    click.echo(f"wrote {out} ({len(results)} result(s))", err=True)
    return 1 if any(r["status"] == "incomplete" for r in results) else 0


@click.command()
@click.argument("agent_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML report (RESULTS/, RESULTS/<agent> or one result).",
)
def report(agent_dir: Path, as_json: bool, html: Path | None) -> None:
    """Print Partial Completion, Success Rate and Pass@k for RESULTS/<agent>.

    Metrics follow Mind2Web 2's definitions: a (task, run) pair the agent has no answer for
    scores 0 and is listed as missing; incomplete and excluded evaluations are left out and
    listed. Skipped judges, the result files the last run left out of the metrics (answer
    gone, judge held back, outdated) and the pairs it did not evaluate (their answer exists:
    left out, not scored 0) come from its summary.json.

    \b
    With --html OUT, also write one self-contained HTML page (metrics, per-answer table,
    collapsible rubric trees with each verdict's reasoning) for RESULTS/<agent>, for all
    agents under RESULTS/, or for a single result file (those two print no table).

    \b
    Example:
      judgegen report results/samples --json
      judgegen report results/ --html report.html

    \b
    Exit codes: 0 every result complete; 1 some results are incomplete; 2 no results found.
    """
    if html is not None:
        html_exit = _write_html(agent_dir, html)
        if agent_dir.is_file() or not any(iter_results(agent_dir)):
            sys.exit(html_exit)
    elif agent_dir.is_file():
        raise click.UsageError("a single result file needs --html OUT")
    if not any(iter_results(agent_dir)):
        raise click.UsageError(
            f"no result files under {agent_dir}/<task>/<answer>.json (pass RESULTS/<agent>)"
        )
    summary = _summary(agent_dir)
    if as_json:
        click.echo(json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        click.echo(format_table(summary))
    sys.exit(1 if summary.counts.incomplete else 0)
