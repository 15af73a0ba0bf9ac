"""Which stored results still hold: the judges a run may use, the fresh-result test, and the
report of a run that has nothing to redo.

The scheduler keeps a stored result exactly when `fresh_result` says so. `judgegen run` asks
`fresh_run` first: when every answer already has a fresh result, the run is answered from the
results folder alone — no executor, no sandbox, no LLM client, no judge runtime imported.
Anything else (a result to redo, a file to repair) returns None and the scheduler does the run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from toolkit.errors import PageStoreError
from toolkit.names import NamedEntries, canonical_name, same_name
from toolkit.runner.approval import approval_problem_for
from toolkit.runner.fingerprint import (
    Fingerprint,
    judge_templates_sha256,
    make_fingerprint,
    pages_unchanged,
)
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.metrics import Listed, SkippedJudge, compute_summary
from toolkit.runner.report import Progress, ResultRef, RunReport
from toolkit.runner.results import (
    SUMMARY_FILE,
    EarlierAttempts,
    EvaluationResult,
    ResultHead,
    ResultStore,
    ScoreFiles,
    check_input_roots,
    write_output,
)
from toolkit.runner.score_names import record_score_names, score_files_for
from toolkit.util.hashing import sha256_bytes

ANSWER_GONE = "its answer is gone: restore the answer, or delete this result file"
"""Why a result whose answer was removed is left out (`_counted`); `judgegen report` says
it too."""


class JudgePolicy(Protocol):
    """Where the judges and their approvals live, and whether unapproved judges may run."""

    judges_dir: Path
    reviews_dir: Path
    include_unreviewed: bool


class FreshnessOptions(JudgePolicy, Protocol):
    """What deciding freshness needs of a run's options (`RunOptions` has it)."""

    results_dir: Path
    pages_dir: Path | None
    max_answer_bytes: int
    backend_spec: str | None
    tools: str | None
    tasks: frozenset[str] | None
    score_name: str
    inputs_by_task: bool


@dataclass
class JudgeInfo:
    """The judge that serves one task, and whether it may run."""

    task_id: str
    path: Path
    sha256: str | None
    problem: str | None = None
    unreviewed: bool = False
    source: str | None = None
    missing: bool = False


def resolve_judges(task_ids: Iterable[str], options: JudgePolicy) -> dict[str, JudgeInfo]:
    """The judge of each task, read once, with the reason it may not run (missing, unreviewed,
    changed, not UTF-8). A judge is found by its task id in any Unicode spelling; two judges
    of one task spelled apart only so are a `NameCollision`."""
    judges: dict[str, JudgeInfo] = {}
    near = _NearMisses(Path(options.judges_dir))
    files = NamedEntries(options.judges_dir, ".py", "judge")
    for task_id in sorted(set(task_ids)):
        path = files.path(task_id).resolve()
        if not path.is_file():
            reason = f"no judge at {path}{near.hint(task_id)}"
            judges[task_id] = JudgeInfo(task_id, path, None, reason, missing=True)
            continue
        data = path.read_bytes()  # read once: these bytes are checked, hashed and run
        info = JudgeInfo(task_id, path, sha256_bytes(data))
        try:
            info.source = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            info.problem = f"{path} is not UTF-8 ({exc}); save it as UTF-8"
            judges[task_id] = info
            continue
        problem = approval_problem_for(info.sha256 or "", options.reviews_dir, task_id)
        if problem and options.include_unreviewed:
            info.unreviewed = True
        elif problem:
            info.problem = f"{problem}; run `judgegen approve {task_id}` or --include-unreviewed"
        judges[task_id] = info
    return judges


class _NearMisses:
    """The judges whose file name differs from a task id only in case, `-` or `_` (a webeval
    folder `Louvre-Hours` beside `louvre_hours.py`): judges are found by the exact id (in any
    Unicode spelling, `toolkit.names`), never matched loosely, so such a task is reported as
    having no judge, and the hint names the judge it missed. The folder is listed once, on the
    first task without a judge."""

    def __init__(self, judges_dir: Path) -> None:
        self.judges_dir = judges_dir
        self._by_key: dict[str, list[str]] | None = None

    @staticmethod
    def _key(name: str) -> str:
        return canonical_name(name).casefold().replace("-", "_")

    def hint(self, task_id: str) -> str:
        """`; <judge> differs only in ...` for the judges `task_id` nearly names, else ""."""
        if self._by_key is None:
            self._by_key = {}
            for path in sorted(self.judges_dir.glob("*.py")):
                self._by_key.setdefault(self._key(path.stem), []).append(path.name)
        found = self._by_key.get(self._key(task_id), [])
        if not found:
            return ""
        return (
            f"; {', '.join(found)} differs from the task id '{task_id}' only in case, '-' or "
            "'_': judges are found by the exact task id (rename the task folder or the judge)"
        )


def skipped_judges(judges: dict[str, JudgeInfo]) -> list[SkippedJudge]:
    """The judges that may not run, and why."""
    return [
        SkippedJudge(
            task_id=j.task_id, reason=j.problem, kind="no_judge" if j.missing else "approval"
        )
        for j in judges.values()
        if j.problem
    ]


def skips_answer(item: AnswerInput, judge: JudgeInfo | None) -> bool:
    """An answer is skipped (not judged, not recorded) when its judge is missing or may not run;
    a malformed input is still recorded."""
    return not item.input_error and (judge is None or judge.problem is not None)


async def fresh_result(
    store: ResultStore, item: AnswerInput, fp: Fingerprint, pages: Any
) -> EvaluationResult | None:
    """The stored result of `item` if it still holds: computed from the same inputs (`fp`),
    with the outcome the input has now (`same_outcome`), not incomplete, and every page it
    read (or found missing) is as it was in `pages`."""
    stored = store.read(item.agent_name, item.task_id, item.answer_name)
    return await kept_result(stored, item, fp, pages)


async def kept_result(
    stored: EvaluationResult | None, item: AnswerInput, fp: Fingerprint, pages: Any
) -> EvaluationResult | None:
    """`stored`, the result read for `item`, if it still holds (see `fresh_result`)."""
    if stored is None or stored.status == "incomplete":
        return None
    return await _standing(stored, item, fp, pages)


def carried_attempts(stored: EvaluationResult | None, fp: Fingerprint) -> EarlierAttempts | None:
    """What the result that redoes `stored` carries of earlier attempts: `stored`'s own
    attempt and those it carried, when it is an incomplete attempt of the judgement `fp`
    stands for (the same fingerprint but for the pages read: `Fingerprint.same_inputs`),
    which the new result retries; else None. A complete result redone is a new judgement,
    and so is an attempt of another judge, answer or configuration: their spend was a
    different judgement's, counted by the run that made it."""
    if stored is None or stored.status != "incomplete" or not stored.fingerprint.same_inputs(fp):
        return None
    own = EarlierAttempts.model_construct(attempts=1, usage=stored.usage)
    return own if stored.earlier_attempts is None else own + stored.earlier_attempts


async def _standing(
    stored: EvaluationResult, item: AnswerInput, fp: Fingerprint, pages: Any
) -> EvaluationResult | None:
    """`stored` if it was computed from the inputs `item` has now, whatever its status
    (`stale_reason` gives none)."""
    return stored if await stale_reason(stored, item, fp, pages) is None else None


_CHANGED = {
    "version": "the fingerprint format",
    "judge_sha256": "its judge",
    "templates_sha256": "the judge templates (prompts/toolkit)",
    "toolkit_version": "judgegen's toolkit code or runtime",
    "judge_model": "the judge model",
    "extract_model": "the extraction model",
    "backend": "the judging backend",
    "answer_sha256": "its answer",
    "tools": "the --maps provider",
}
"""How a reason names each fingerprint field that changed."""


async def stale_reason(
    stored: EvaluationResult,
    item: AnswerInput,
    fp: Fingerprint,
    pages: Any,
    *,
    check_pages: bool = True,
) -> str | None:
    """Why `stored` no longer stands for `item` now, whatever its status (None: it stands):
    another fingerprint than `fp`, the one the inputs give now (which fields changed), another
    outcome, or a page it read (or found missing) other now in `pages` (not looked at without
    `check_pages`: its caller has no page source to ask). A complete result without a score
    (an earlier version recorded a judge's scoreless summary so) stands for nothing."""
    if stored.status == "complete" and stored.final_score is None:
        return "it is complete without a score (as an earlier judgegen recorded some)"
    changed = stored.fingerprint.changed(fp)
    if changed:
        names = ", ".join(_CHANGED.get(name, name) for name in changed)
        if "toolkit_version" in changed:
            names += f" ({stored.fingerprint.toolkit_version} then, {fp.toolkit_version} now)"
        return f"{names} changed since it was computed"
    if not same_outcome(stored, item):
        now = f"excluded now ({item.excluded})" if item.excluded else "no longer excluded"
        return f"its answer's outcome changed since it was computed: {now}"
    reads = stored.fingerprint.pages
    if check_pages and reads is not None and not await pages_unchanged(reads, pages):
        return (
            "a cited page it read changed since it was computed, or one it found missing is "
            "in the page source now"
        )
    return None


async def unstanding_reason(
    stored: EvaluationResult,
    item: AnswerInput,
    fp: Fingerprint,
    pages: Any,
    *,
    check_pages: bool = True,
) -> str | None:
    """Why `stored` is not known to stand for `item` now (None: it stands): `stale_reason`,
    or a page store too damaged to confirm the pages it read (`PageStoreError`), which a
    run's summary and `judgegen report` leave it out for alike."""
    try:
        return await stale_reason(stored, item, fp, pages, check_pages=check_pages)
    except PageStoreError as exc:
        return f"its cited pages could not be checked ({exc})"


def outdated_reason(why: str, *, stopped: bool = False) -> str:
    """How a result left out of the metrics because it no longer stands for its inputs is
    listed, in a run's summary (`stopped`: the run stopped before redoing it) and in
    `judgegen report` alike: `why` (`unstanding_reason`) names what changed."""
    then = ", and the run stopped before redoing it" if stopped else ""
    return f"outdated: {why}{then}; run again"


async def outdated_results(
    store: ResultStore,
    planned: Iterable[tuple[AnswerInput, Fingerprint]],
    report: RunReport,
    pages: Any,
) -> list[ResultRef]:
    """The result files of `planned` answers that `report` neither reused nor wrote (the run
    stopped first) and that are not known to stand for the answer's inputs now (`fp`, pages,
    outcome), each with the reason its summary lists it under (`outdated_reason`, naming what
    changed): the summary must not count them as this run's. A result that still stands
    (incomplete, or left by --overwrite) is counted as it is."""
    done = {(h.agent_name, h.task_id, h.answer_name) for h in report.results}
    outdated: list[ResultRef] = []
    for item, fp in planned:
        if (item.agent_name, item.task_id, item.answer_name) in done:
            continue
        stored = store.read(item.agent_name, item.task_id, item.answer_name)
        why = None if stored is None else await unstanding_reason(stored, item, fp, pages)
        if why is not None:
            outdated.append(
                ResultRef(
                    agent=item.agent_name,
                    task_id=item.task_id,
                    answer_name=item.answer_name,
                    reason=outdated_reason(why, stopped=True),
                )
            )
    return outdated


def same_outcome(stored: EvaluationResult, item: AnswerInput) -> bool:
    """Whether `stored` was decided as `item` is now: excluded for the same reason, or not
    excluded. The fingerprint does not cover every reason: an answer too large for
    `--max-answer-bytes` depends on the flag, so a result is redone when the limit changes
    the answer's outcome, and only then (a judged answer still within it is reused)."""
    if item.excluded is not None:
        return stored.status == "excluded" and stored.reason == item.excluded
    return stored.status != "excluded"


def unreviewed_mark(judge: JudgeInfo | None) -> bool:
    """The `unreviewed_judge` mark a result of `judge` carries now: whether it runs without
    a current approval."""
    return judge is not None and judge.unreviewed


def needs_repair(
    stored: EvaluationResult, item: AnswerInput, judge: JudgeInfo | None, scores: ScoreFiles
) -> bool:
    """Whether a fresh result still needs a file written: its unreviewed mark no longer says
    whether its judge is approved (approved since it ran, or the approval withdrawn: the same
    bytes either way), or a trajectory's score file (of `scores`) does not agree with it
    (missing, left by an earlier result when a run failed between writing the two files, or
    written by another results folder, gone, or by a judgegen that recorded none)."""
    traj = item.traj_dir
    return stored.unreviewed_judge != unreviewed_mark(judge) or (
        traj is not None and not scores.agrees(traj, item.task_id, stored)
    )


def fingerprint_for(
    item: AnswerInput,
    judge: JudgeInfo | None,
    backend: Any,
    backend_spec: str | None,
    templates_digest: str,
    tools: str | None = None,
) -> Fingerprint:
    """The fingerprint the current judge and configuration give `item` (`backend` may be the
    run's metering wrapper: its inner backend is the one identified; `tools`, the tool
    provider offered)."""
    return make_fingerprint(
        judge_sha256=judge.sha256 if judge else None,
        answer_sha256=item.answer_sha256,
        backend=getattr(backend, "inner", backend),
        backend_spec=backend_spec,
        templates_digest=templates_digest,
        tools=tools,
    )


async def fresh_run(
    inputs: list[AnswerInput],
    *,
    options: FreshnessOptions,
    backend: Any,
    pages: Any,
    progress: Progress | None = None,
) -> RunReport | None:
    """The report of this run if it has nothing to redo — every answer that may be judged has a
    fresh result needing no repair, no trajectory whose judge may not run has a score file
    left, and none has a score file of the results folder under another score name — with
    each agent's summary rewritten (and the run's score name recorded); else None (and
    nothing reported to `progress` or written). A fresh run, about to write, is refused
    (`ResultsOfAnotherInput`) as the scheduler refuses it: only then, so a run that is not
    fresh reads the results' inputs once, in the scheduler."""
    judges = resolve_judges((i.task_id for i in inputs), options)
    store = ResultStore(options.results_dir)
    trajectories = [(i.traj_dir, i.task_id) for i in inputs if i.traj_dir is not None]
    scores = score_files_for(Path(options.results_dir), options.score_name, trajectories)
    digest = judge_templates_sha256()
    report = RunReport(skipped_judges=skipped_judges(judges))
    for item in inputs:
        judge = judges.get(item.task_id)
        if item.traj_dir is not None and scores.earlier_files(item.traj_dir, item.task_id):
            return None  # the scheduler withdraws the folder's files under other names
        if skips_answer(item, judge):
            if item.traj_dir is not None and scores.path(item.traj_dir, item.task_id).exists():
                return None  # the scheduler withdraws it
            report.skipped_answers += 1
            continue
        fp = fingerprint_for(item, judge, backend, options.backend_spec, digest, options.tools)
        try:
            stored = await fresh_result(store, item, fp, pages)
        except PageStoreError:
            return None  # the scheduler stops the run on it, and reports what it kept
        if stored is None or needs_repair(stored, item, judge, scores):
            return None
        head = ResultHead.of(stored)
        report.reused += 1
        report.results.append(head)
        if item.input_error:
            report.input_errors.append(head)
    check_input_roots(options.results_dir, inputs, by_task=options.inputs_by_task)
    if trajectories:
        record_score_names(Path(options.results_dir), scores)
    for agent in sorted({i.agent_name for i in inputs}):
        store.remove_stray_temp_files(agent)
    for result in report.results:
        if progress is not None:
            progress("reused", result)
    write_summaries(
        store,
        inputs,
        report,
        include_unreviewed=options.include_unreviewed,
        tasks=options.tasks,
        scores=scores,
        judged=judged_tasks(options),
        read_from=(options.judges_dir, options.pages_dir),
        max_answer_bytes=options.max_answer_bytes,
    )
    return report


def judged_tasks(options: FreshnessOptions) -> frozenset[str]:
    """The tasks with a judge in the run's judges folder, when the run covers its agents'
    answers whole (no --task, not each task's samples), for their summaries to name those
    an agent did not answer; else none."""
    if options.tasks is not None or options.inputs_by_task:
        return frozenset()
    judges = Path(options.judges_dir).glob("*.py")
    return frozenset(canonical_name(p.stem) for p in judges if not p.name.startswith(("_", ".")))


def write_summaries(
    store: ResultStore,
    inputs: list[AnswerInput],
    report: RunReport,
    *,
    include_unreviewed: bool,
    tasks: frozenset[str] | None,
    scores: ScoreFiles,
    judged: frozenset[str] = frozenset(),
    read_from: tuple[Path, Path | None],
    max_answer_bytes: int,
) -> None:
    """Compute and write the summary of every agent among `inputs`, over its results (those
    in `report` as they are in memory, the others read from their files) that still stand
    for an answer and judge of this run and, for its answers, for their inputs now
    (`_counted`). `tasks` is the limit the inputs were found with (None: every task);
    `judged`, the tasks with a judge (`judged_tasks`); `read_from`, the judges folder and
    page store (None: none) the run read, recorded absolute, and `max_answer_bytes`, its
    limit, recorded for `judgegen report` to check the results against. A trajectory whose input is gone loses its score file (of
    `scores`), if its folder is still there."""
    judges_dir, pages_dir = (None if p is None else str(Path(p).resolve()) for p in read_from)
    answers_by_agent: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for item in inputs:
        answers_by_agent[item.agent_name][item.task_id].add(item.answer_name)
    for agent, answers in sorted(answers_by_agent.items()):
        skipped = [s for s in report.skipped_judges if s.task_id in answers]
        outdated = {
            (r.task_id, r.answer_name): r.reason
            or outdated_reason("its inputs changed since it was computed", stopped=True)
            for r in report.outdated
            if r.agent == agent
        }
        scope = _Scope(answers, skipped, outdated, tasks)
        counted, left_out, gone = _counted(store, agent, scope, report.results)
        _withdraw_score_files(store, gone, scores)
        summary = compute_summary(
            agent,
            counted,
            skipped_judges=skipped,
            include_unreviewed=include_unreviewed,
            not_counted=left_out,
            unchecked_tasks={head.task_id for head in counted} - answers.keys(),
            answered=answers,
            removed_tasks={head.task_id for head in gone} - answers.keys(),
            judged_tasks=judged,
        )
        summary.judges_dir, summary.pages_dir = judges_dir, pages_dir
        summary.max_answer_bytes = max_answer_bytes
        write_output(store.root / agent / SUMMARY_FILE, summary.model_dump_json(indent=2) + "\n")
        report.summaries[agent] = summary


@dataclass
class _Scope:
    """What one agent's summary is checked against: its answers now (names by task), the
    judges the run held back, the results it left outdated (the reason each is listed under,
    by task and answer), and the `--task` limit the answers were found with (None: every
    task)."""

    answers: dict[str, set[str]]
    skipped: list[SkippedJudge]
    outdated: dict[tuple[str, str], str]
    tasks: frozenset[str] | None

    def checks(self, task: str) -> bool:
        """Whether the run checked `task`: it has answers now, or it lies within the limit
        (every task without one), so a result of it without an answer has lost it."""
        return task in self.answers or self.tasks is None or task in self.tasks


def _counted(
    store: ResultStore, agent: str, scope: _Scope, known: list[ResultHead]
) -> tuple[list[ResultHead], list[Listed], list[ResultHead]]:
    """(the results of `agent` the metrics count, the result files they leave out and why,
    the results among those whose answer is gone).

    For a task the run checked (`_Scope.checks`), a result stands only while its answer is
    still there, its judge ran now and it was computed from the inputs its answer has now: a
    result of a removed answer (or of a task whose answers are all gone), one a judge the run
    held back computed earlier, or one the run stopped before redoing would otherwise count
    unseen. Results of tasks outside a `--task` run are counted as they are (runs may cover
    tasks in turns); the summary names those tasks. A file that cannot be read, or holds another
    pair's result (a copy), is listed, never silently dropped or counted."""
    held_back = {s.task_id: s.reason for s in scope.skipped}
    answers = scope.answers
    unreadable: dict[Path, str] = {}
    counted: list[ResultHead] = []
    left_out: list[Listed] = []
    gone: list[ResultHead] = []
    for head in store.iter_heads(agent, known=known, unreadable=unreadable):
        task, name = head.task_id, head.answer_name
        if task in held_back:
            reason = f"its judge did not run now ({held_back[task]})"
        elif scope.checks(task) and name not in answers.get(task, ()):
            reason = ANSWER_GONE
            gone.append(head)
        elif (task, name) in scope.outdated:
            reason = scope.outdated[(task, name)]
        else:
            counted.append(head)
            continue
        left_out.append(Listed(task_id=task, answer_name=name, reason=reason))
    for path, reason in unreadable.items():
        left_out.append(Listed(task_id=path.parent.name, answer_name=path.stem, reason=reason))
    return counted, left_out, gone


def _withdraw_score_files(store: ResultStore, gone: list[ResultHead], scores: ScoreFiles) -> None:
    """Remove the webeval score file of each trajectory among `gone` (its input is no longer
    among the run's) whose folder is still there, and the results folder's files under its
    earlier score names: webeval would read them as current."""
    for head in gone:
        result = store.result(head) if head.input_kind == "trajectory" else None
        if result is None or not result.input_path:
            continue
        recorded = Path(result.input_path)  # the final answer file, or the task folder
        folder = recorded if same_name(recorded.name, head.task_id) else recorded.parent
        if same_name(folder.name, head.task_id) and folder.is_dir():
            scores.remove(folder, head.task_id)
