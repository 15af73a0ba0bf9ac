"""Benchmark metrics over evaluation results, with Mind2Web 2's exact definitions.

Answers are grouped into runs by answer name (answer_1, answer_2, …). The agent's tasks T are
the tasks with at least one counted result (complete, incomplete or excluded), its runs R the
answer names among those results; results listed under `not_counted` are not results of this
summary and neither add a run nor fill a pair. They add no task either, except a removed
task (`removed_tasks`: every answer of it is gone, its result files remain): the agent has no
answer for it, so as in Mind2Web 2 each of its pairs is missing. A pair (t, r) of T x R
without a counted result is missing when the agent has no answer for it: as in Mind2Web 2 it
scores 0 and is listed. When its answer exists but has no counted result (the run stopped before
judging it, its result is outdated or unreadable, or its task was not checked by this run),
the pair is left out and listed as not evaluated: an infrastructure stop is not a wrong
answer. An answer of a task or run without any counted result (the run reached none of them)
is listed there too, adding no task or run. Without knowledge of the answers on disk, every
such pair is missing. For each run r over the
pairs of T that are complete or missing in r: Partial Completion = mean root score, Success
Rate = mean of (root score == 1); both are reported as the mean over runs and the population
std. Pass@k (k = number of runs) = fraction of tasks with a complete result where some run
scored 1, a removed task being one where none did (a missing pair is not a success). Unlike Mind2Web 2, incomplete and excluded
evaluations are left out of their run (not scored 0) and listed.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from toolkit.runner.results import EarlierAttempts, ResultHead, UsageTotals
from toolkit.util.deferred import DEFERRED

SUMMARY_VERSION = 9
"""2: `not_counted` and `unchecked_tasks` say which result files the metrics leave out or
count unchecked. 3: a (task, run) pair the agent has no answer for scores 0 and is listed in
`missing`, one whose answer was not evaluated is listed in `not_evaluated` (before, run r's
metrics covered only the tasks with a result in r). 4: `removed_tasks`, tasks whose answers
are all gone: scored 0 as missing (before, a run without --task counted their old results).
5: `usage.unknown_cost_calls`, LLM calls counted whose cost is not known; `earlier_attempts`,
what the incomplete attempts the results redid cost (not in `usage`), and
`usage_all_attempts`. 6: `not_evaluated` also lists the answers of a task or run without any
counted result (before, a stopped run's summary did not name the answers it never reached).
7: `usage.answered_by`, `answered_by` and `mixed_snapshots`, the models that answered the
counted results' LLM calls (results written before they recorded it count under none). 8:
`unanswered_judges`, the judged tasks the agent has no answer for (before, nothing named a
task an agent skipped altogether). 9: a `not_counted` entry of an outdated result names what
changed (`outdated: its judge changed since it was computed, and the run stopped before redoing
it; run again`, as `judgegen report` words it); before, every such entry read alike. Also
`judges_dir` and `pages_dir`, the judges folder and page store the run read, which `judgegen
report` checks the results against by default, and `max_answer_bytes`, the run's
`--max-answer-bytes`, by which it decides which answers are excluded (each absent from older
summaries: None)."""


def is_success(score: float) -> bool:
    """A root score counts as success when it is exactly 1, as the tree marks its root
    `passed` (`toolkit.tree`): a full pass is exactly 1.0 in floats (every child 1.0, so the
    mean is n/n), while a deep tree's partial root can come within 1e-9 of 1 without being one
    (9 passed leaves of 10 at each of 10 levels: 1 - 1e-10), so no tolerance."""
    return score >= 1.0


def run_order(name: str) -> tuple:
    """Natural order of answer names: answer_2 before answer_10; names it ties (`answer_01`,
    `answer_1`) by the name, so a summary never depends on the order its results came in."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)), name


class MeanStd(BaseModel):
    """A metric per run, its mean over runs and the population standard deviation."""

    model_config = DEFERRED

    mean: float | None = None
    std: float | None = None
    per_run: dict[str, float] = Field(default_factory=dict)


class PassAtK(BaseModel):
    """Fraction of tasks where any of the k runs scored 1."""

    model_config = DEFERRED

    k: int = 0
    value: float | None = None


class TaskMetrics(BaseModel):
    """One task across runs: complete scores by answer name, best and average (over those
    scores), and the runs where it is incomplete, excluded or missing."""

    model_config = DEFERRED

    scores: dict[str, float] = Field(default_factory=dict)
    best: float | None = None
    average: float | None = None
    passed: bool = False
    incomplete: list[str] = Field(default_factory=list)
    excluded: list[str] = Field(default_factory=list)
    missing: list[str] = Field(
        default_factory=list, description="Runs without a counted result: scored 0 there."
    )


class Counts(BaseModel):
    """How many evaluations ended in each status."""

    model_config = DEFERRED

    complete: int = 0
    incomplete: int = 0
    excluded: int = 0


class Listed(BaseModel):
    """An evaluation (or a result file) left out of the metrics, or a missing pair scored 0,
    and why."""

    model_config = DEFERRED

    task_id: str
    answer_name: str
    reason: str


class SkippedJudge(BaseModel):
    """A task whose judge did not run in this run, and why (unreviewed, changed, missing)."""

    model_config = DEFERRED

    task_id: str
    reason: str
    kind: Literal["approval", "no_judge"] = Field(
        default="approval",
        description="approval: the judge exists but is not approved for its bytes; "
        "no_judge: there is no judge for the task.",
    )


class Summary(BaseModel):
    """`results/<agent>/summary.json`: the metrics of one agent's results."""

    model_config = DEFERRED

    version: int = SUMMARY_VERSION
    agent_name: str
    runs: list[str] = Field(
        default_factory=list, description="Answer names among the counted results."
    )
    num_tasks: int = Field(default=0, description="Tasks with at least one complete result.")
    partial_completion: MeanStd = Field(default_factory=MeanStd)
    success_rate: MeanStd = Field(default_factory=MeanStd)
    pass_at_k: PassAtK = Field(default_factory=PassAtK)
    counts: Counts = Field(default_factory=Counts)
    per_task: dict[str, TaskMetrics] = Field(default_factory=dict)
    incomplete: list[Listed] = Field(default_factory=list)
    excluded: list[Listed] = Field(default_factory=list)
    missing: list[Listed] = Field(
        default_factory=list,
        description="(task, run) pairs of a counted task and run the agent has no answer "
        "for: scored 0 in that run's Partial Completion and Success Rate, as in Mind2Web 2.",
    )
    not_evaluated: list[Listed] = Field(
        default_factory=list,
        description="(task, run) pairs whose answer exists without a counted result (the run "
        "stopped first, the result is outdated or unreadable, the task was not checked): "
        "left out, not scored. Also the answers of a task or run without any counted result "
        "(a stopped run reached none of them), which add no task or run.",
    )
    skipped_judges: list[SkippedJudge] = Field(default_factory=list)
    include_unreviewed: bool = False
    unreviewed_results: int = Field(
        default=0,
        description="Counted results of unapproved judges; without include_unreviewed, those "
        "of tasks the run did not check (see unchecked_tasks), judged earlier with it.",
    )
    judge_models: dict[str, int] = Field(default_factory=dict)
    answered_by: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="The models that answered the complete results' LLM calls, as each "
        "response named them (a cache hit's: the stored answer's), by the model asked for: "
        "how many results each answered (a result answered by two counts under both). "
        "Results that recorded none (written before judgegen recorded it) are not counted.",
    )
    usage: UsageTotals = Field(
        default_factory=UsageTotals,
        description="What the attempts that wrote the counted results cost (their `usage`), "
        "not the earlier incomplete attempts they redid (`earlier_attempts`).",
    )
    earlier_attempts: EarlierAttempts = Field(
        default_factory=EarlierAttempts,
        description="What the earlier incomplete attempts the counted results redid cost "
        "(their `earlier_attempts`): not in `usage`.",
    )
    duration_s: float = Field(default=0.0, description="Sum of evaluation durations.")
    not_counted: list[Listed] = Field(
        default_factory=list,
        description="Result files in the agent's folder that no metric counts: their answer "
        "is gone, their judge did not run in the run that wrote this summary, they are "
        "outdated (their reason says what changed: `outdated: <what> changed since it was "
        "computed, ...`) and that run stopped before redoing them, the "
        "file cannot be read, or it holds the result of another task or answer than its path "
        "names (a copy).",
    )
    unchecked_tasks: list[str] = Field(
        default_factory=list,
        description="Tasks whose results are counted as they are, not checked by the run that "
        "wrote this summary (outside its --task): a judge changed or an answer removed there "
        "since they were judged goes unseen until they are run again.",
    )
    removed_tasks: list[str] = Field(
        default_factory=list,
        description="Tasks with result files but no answer any more (their answers or "
        "trajectory removed), found by a run without --task: each pair is missing (scored 0, "
        "as in Mind2Web 2) and no run of them passes; their result files are in not_counted.",
    )
    unanswered_judges: list[str] = Field(
        default_factory=list,
        description="Tasks with a judge in the run's judges folder that the agent has no "
        "answer (and no counted result) for: an agent's tasks are those it answered, so these "
        "are not in its metrics (as Mind2Web 2's over the tasks an agent has answers for). "
        "Found by a run without --task over an agent's own answers (not a task's samples).",
    )
    judges_dir: str | None = Field(
        default=None,
        description="The judges folder (absolute) the run that wrote this summary read: "
        "`judgegen report` checks the results' judges against it unless given --judges. None "
        "in a summary written before judgegen recorded it.",
    )
    pages_dir: str | None = Field(
        default=None,
        description="The page store (absolute) that run read, None when it had none (or, "
        "without `judges_dir`, when the summary predates the record): `judgegen report` "
        "checks the results' cited pages against it unless given --pages.",
    )
    max_answer_bytes: int | None = Field(
        default=None,
        description="The run's --max-answer-bytes, above which an answer is excluded: "
        "`judgegen report` decides the answers' outcomes by it unless given "
        "--max-answer-bytes. None in a summary written before judgegen recorded it.",
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="What the counted results cost in all: `usage` plus `earlier_attempts`."
    )
    @property
    def usage_all_attempts(self) -> UsageTotals:
        """`usage` plus what the earlier incomplete attempts cost."""
        return self.usage + self.earlier_attempts.usage

    @computed_field(  # type: ignore[prop-decorator]
        description="The models asked for (e.g. an alias, `o4-mini`) whose complete results "
        "were answered by more than one model (snapshot), from `answered_by`: the vendor "
        "re-pointed the alias between the calls (cached answers replay the old snapshot, new "
        "calls get the new one), so the metrics mix two models' judgements. The run warns."
    )
    @property
    def mixed_snapshots(self) -> dict[str, dict[str, int]]:
        """The entries of `answered_by` naming more than one model."""
        return {asked: by for asked, by in self.answered_by.items() if len(by) > 1}


def _mean_std(per_run: dict[str, float]) -> MeanStd:
    values = list(per_run.values())
    if not values:
        return MeanStd()
    return MeanStd(mean=statistics.fmean(values), std=statistics.pstdev(values), per_run=per_run)


def compute_summary(
    agent_name: str,
    results: Iterable[ResultHead],
    *,
    skipped_judges: Iterable[SkippedJudge] = (),
    include_unreviewed: bool = False,
    not_counted: Iterable[Listed] = (),
    unchecked_tasks: Iterable[str] = (),
    answered: Mapping[str, set[str]] | None = None,
    removed_tasks: Iterable[str] = (),
    judged_tasks: Iterable[str] = (),
) -> Summary:
    """The metrics of `results` (one agent); see the module docstring for definitions.
    `not_counted` and `unchecked_tasks` are only recorded (the caller decided them);
    `answered` gives the answer names on disk of each task this run checked (None: unknown);
    `removed_tasks`, the tasks without any answer now whose results are not counted;
    `judged_tasks`, the tasks with a judge, those without an answer listed as unanswered."""
    results = sorted(results, key=lambda r: (r.task_id, run_order(r.answer_name)))
    summary = Summary(
        agent_name=agent_name,
        skipped_judges=list(skipped_judges),
        include_unreviewed=include_unreviewed,
        not_counted=list(not_counted),
        unchecked_tasks=sorted(unchecked_tasks),
        removed_tasks=sorted(set(removed_tasks)),
    )
    complete: dict[str, dict[str, float]] = {}
    models: Counter[str] = Counter()
    answers: dict[str, Counter[str]] = {}
    for result in results:
        task = summary.per_task.setdefault(result.task_id, TaskMetrics())
        summary.usage = summary.usage + result.usage
        if result.earlier_attempts is not None:
            summary.earlier_attempts = summary.earlier_attempts + result.earlier_attempts
        summary.duration_s += result.duration_s
        summary.unreviewed_results += int(result.unreviewed_judge)
        if result.status == "complete" and result.final_score is not None:
            summary.counts.complete += 1
            complete.setdefault(result.answer_name, {})[result.task_id] = result.final_score
            task.scores[result.answer_name] = result.final_score
            models[result.judge_model or "none"] += 1
            for asked, snapshots in result.usage.answered_by.items():
                answers.setdefault(asked, Counter()).update(snapshots)
        elif result.status == "incomplete":
            summary.counts.incomplete += 1
            task.incomplete.append(result.answer_name)
            summary.incomplete.append(
                Listed(
                    task_id=result.task_id,
                    answer_name=result.answer_name,
                    reason=result.error_text(),
                )
            )
        else:
            summary.counts.excluded += 1
            task.excluded.append(result.answer_name)
            summary.excluded.append(
                Listed(
                    task_id=result.task_id,
                    answer_name=result.answer_name,
                    reason=result.reason or "excluded",
                )
            )
    summary.runs = sorted({r.answer_name for r in results}, key=run_order)
    for task_id in summary.removed_tasks:  # no answer: every pair missing
        summary.per_task.setdefault(task_id, TaskMetrics())
    if answered is not None:
        answered = {**{t: set() for t in summary.removed_tasks}, **answered}
    scores = _scores_with_missing(summary, complete, answered)
    pc = {run: statistics.fmean(s) for run, s in scores.items() if s}
    sr = {run: statistics.fmean(float(is_success(v)) for v in s) for run, s in scores.items() if s}
    summary.partial_completion, summary.success_rate = _mean_std(pc), _mean_std(sr)
    for task in summary.per_task.values():
        if task.scores:
            task.best = max(task.scores.values())
            task.average = statistics.fmean(task.scores.values())
            task.passed = any(is_success(s) for s in task.scores.values())
    scored = [t for t in summary.per_task.values() if t.scores]
    summary.num_tasks = len(scored)
    removed = set(summary.removed_tasks)
    tried = [t for name, t in summary.per_task.items() if t.scores or name in removed]
    summary.pass_at_k = PassAtK(
        k=len(summary.runs),
        value=statistics.fmean(float(t.passed) for t in tried) if tried else None,
    )
    summary.judge_models = dict(sorted(models.items()))
    answered_tasks = {*summary.per_task, *(answered or {})}
    summary.unanswered_judges = sorted(set(judged_tasks) - answered_tasks)
    summary.answered_by = {
        asked: dict(sorted(counts.items())) for asked, counts in sorted(answers.items())
    }
    return summary


def _scores_with_missing(
    summary: Summary,
    complete: dict[str, dict[str, float]],
    answered: Mapping[str, set[str]] | None,
) -> dict[str, list[float]]:
    """The scores each run is averaged over: its complete results, and 0 for each task the
    agent has no answer for in it (missing, as Mind2Web 2 lists them). Incomplete and
    excluded pairs are neither, nor is a pair whose answer exists without a counted result
    (not evaluated: listed, left out). A listed pair whose result file is not counted says
    why."""
    not_counted = {(r.task_id, r.answer_name): r.reason for r in summary.not_counted}
    scores: dict[str, list[float]] = {}
    for run in summary.runs:
        scores[run] = list(complete.get(run, {}).values())
        for task_id, task in sorted(summary.per_task.items()):
            if run in task.scores or run in task.incomplete or run in task.excluded:
                continue
            listed = not_counted.get((task_id, run))
            why = "no result" if listed is None else f"its result is not counted ({listed})"
            if answered is not None and (task_id not in answered or run in answered[task_id]):
                if task_id not in answered:
                    why = "its task was not checked by this run"
                elif listed is None:
                    why = _NOT_JUDGED
                entry = Listed(task_id=task_id, answer_name=run, reason=f"{why}: left out")
                summary.not_evaluated.append(entry)
                continue
            scores[run].append(0.0)
            task.missing.append(run)
            entry = Listed(task_id=task_id, answer_name=run, reason=f"{why}: scored 0")
            summary.missing.append(entry)
    if answered is not None:
        summary.not_evaluated += _unpaired(summary, answered, not_counted)
    for listed_pairs in (summary.missing, summary.not_evaluated):
        listed_pairs.sort(key=lambda m: (m.task_id, run_order(m.answer_name)))
    return scores


_NOT_JUDGED = "its answer was not judged (the run stopped first)"


def _unpaired(
    summary: Summary, answered: Mapping[str, set[str]], not_counted: Mapping[tuple[str, str], str]
) -> list[Listed]:
    """The answers on disk of a task or run without any counted result (a stopped run judged
    none of them), but those of held-back judges (listed as such): no pair of the metrics,
    listed as not evaluated so the summary never reads as covering every answer."""
    held = {s.task_id for s in summary.skipped_judges}
    unpaired = []
    for task_id, names in sorted(answered.items()):
        if task_id in held:
            continue
        for name in names:
            if task_id in summary.per_task and name in summary.runs:
                continue  # a pair: counted, missing or already listed
            listed = not_counted.get((task_id, name))
            why = _NOT_JUDGED if listed is None else f"its result is not counted ({listed})"
            unpaired.append(Listed(task_id=task_id, answer_name=name, reason=f"{why}: left out"))
    return unpaired


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def score_text(score: float | None, digits: int = 2) -> str:
    """A score in the table: a score below 1 never prints as 1 (0.996 as 0.99, not 1.00),
    which would read as a success it is not."""
    if score is None:
        return "-"
    text = f"{score:.{digits}f}"
    if score < 1.0 and float(text) >= 1.0:
        return f"{1.0 - 10.0**-digits:.{digits}f}"
    return text


def usage_text(u: UsageTotals) -> str:
    """Calls, tokens and cost, and how many calls' cost is not known (left out of it)."""
    unknown = f" + {u.unknown_cost_calls} calls of unknown cost" if u.unknown_cost_calls else ""
    return (
        f"{u.backend_calls} backend calls, {u.llm_calls} LLM calls ({u.cache_hits} cached), "
        f"{u.input_tokens + u.output_tokens} tokens, ${u.cost_usd:.4f}{unknown}"
    )


def format_table(summary: Summary, *, max_listed: int = 20) -> str:
    """A plain-text report of the summary: metrics, per-task scores, what was left out."""
    k = summary.pass_at_k.k
    pc, sr = summary.partial_completion, summary.success_rate
    lines = [
        f"Agent {summary.agent_name}: {summary.num_tasks} tasks x {len(summary.runs)} runs "
        f"({summary.counts.complete} complete, {summary.counts.incomplete} incomplete, "
        f"{summary.counts.excluded} excluded{_missing_count(summary)})",
        f"  Partial Completion  {_fmt(pc.mean)} ± {_fmt(pc.std)}",
        f"  Success Rate        {_fmt(sr.mean)} ± {_fmt(sr.std)}",
        f"  Pass@{k:<15d}{_fmt(summary.pass_at_k.value)}",
    ]
    if summary.runs:
        rows = [["task", *summary.runs, "best", "avg"]]
        for task_id, task in sorted(summary.per_task.items()):
            cells = [_cell(task, run) for run in summary.runs]
            rows.append([task_id, *cells, score_text(task.best), score_text(task.average)])
        lines += ["", *align_columns(rows)]
    lines += ["", f"  Usage (each result's last attempt): {usage_text(summary.usage)}"]
    earlier = summary.earlier_attempts
    if earlier.attempts:
        lines.append(
            f"  Earlier incomplete attempts these results redid: {earlier.attempts}, "
            f"{usage_text(earlier.usage)}; all attempts "
            f"${summary.usage_all_attempts.cost_usd:.4f}"
        )
    if summary.unreviewed_results:
        lines.append(_unreviewed_warning(summary))
    named = {model: n for model, n in summary.judge_models.items() if model != "none"}
    if len(named) > 1:  # "none": a backend naming no model, or an empty answer's
        counts = ", ".join(f"{model} ({n})" for model, n in named.items())
        lines.append(
            f"  WARNING: the complete results were judged by {len(named)} models: {counts}: "
            "the metrics mix their judgements; run every task with one model"
        )
    for asked, answered in summary.mixed_snapshots.items():
        counts = ", ".join(f"{model} ({n})" for model, n in answered.items())
        lines.append(
            f"  WARNING: results asking for {asked} were answered by {len(answered)} models "
            f"(results each): {counts}: the metrics mix their judgements"
        )
    if summary.unchecked_tasks:
        lines.append(
            f"  Counted as found, not checked by this run: {', '.join(summary.unchecked_tasks)}"
        )
    if summary.removed_tasks:
        lines.append(
            f"  Removed (no answer now; scored 0 as missing): {', '.join(summary.removed_tasks)}"
        )
    sections: list[tuple[str, list[Any]]] = [
        ("Incomplete (excluded from metrics; rerun to retry)", summary.incomplete),
        ("Excluded", summary.excluded),
        ("Missing (no answer; scored 0, as in Mind2Web 2)", summary.missing),
        ("Not evaluated (the answer exists; left out)", summary.not_evaluated),
        ("Skipped judges", summary.skipped_judges),
        ("Not counted (result files left out of the metrics)", summary.not_counted),
    ]
    for title, items in sections:
        entries = []
        for item in items:
            name = getattr(item, "answer_name", "")
            where = f"{item.task_id}/{name}" if name else item.task_id
            entries.append(f"{where}: {item.reason}")
        lines += _section(title, entries, max_listed)
    title = "Judges without an answer of this agent (not in its metrics)"
    lines += _section(title, summary.unanswered_judges, max_listed)
    return "\n".join(lines)


def _section(title: str, entries: list[str], max_listed: int) -> list[str]:
    """A titled list of the table, with how many entries, at most `max_listed` of them shown."""
    if not entries:
        return []
    lines = [f"  {title}: {len(entries)}", *(f"    {entry}" for entry in entries[:max_listed])]
    if len(entries) > max_listed:
        lines.append(f"    … and {len(entries) - max_listed} more")
    return lines


def _missing_count(summary: Summary) -> str:
    """The missing pairs (scored 0) and the answers left out unevaluated, when there are any."""
    missing = f", {len(summary.missing)} missing" if summary.missing else ""
    left = len(summary.not_evaluated)
    return missing + (f", {left} not evaluated" if left else "")


def _unreviewed_warning(summary: Summary) -> str:
    """Said whenever results of unapproved judges are counted, with or without the flag:
    without it they are results of tasks the run did not check (a run holds back the
    unapproved judges of its own tasks and leaves their results out), judged earlier with it."""
    line = f"  WARNING: {summary.unreviewed_results} results come from unreviewed judges"
    if summary.include_unreviewed:
        return line
    return (
        f"{line} (judged earlier with --include-unreviewed, in tasks this run did not check: "
        "run those tasks again to re-check them)"
    )


def align_columns(rows: list[list[str]], indent: str = "  ", gap: int = 2) -> list[str]:
    """Rows as text lines: the first column left-aligned, the rest right-aligned, each column
    as wide as its longest cell and separated by at least `gap` spaces, so long names never
    run into each other."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    spacer = " " * gap
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append((indent + spacer.join(cells)).rstrip())
    return lines


def _cell(task: TaskMetrics, run: str) -> str:
    if run in task.scores:
        return score_text(task.scores[run])
    if run in task.incomplete:
        return "incomplete"
    if run in task.excluded:
        return "excluded"
    if run in task.missing:
        return "missing"
    return "-"
