"""`judgegen validate`: how well judges agree with human node labels; optionally a CI gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

import click
from pydantic import BaseModel, Field

from generator.cli.common import (
    backend_options,
    load_task,
    location_options,
    open_backend,
    open_pages,
    run_review,
    sandbox_options,
)
from generator.cli.llm_clients import CommandClients
from generator.cli.llm_options import llm_options
from generator.review.labels import AnswerLabels, LabelAgreement, agreement, task_labels
from generator.review.runs import JudgeRunError, ReviewRuns
from generator.review.staleness import task_folders
from generator.stages.spec import LoadedSpec, SampleAnswer, cites_pages
from toolkit.errors import SpecError
from toolkit.llm.settings import LLMSettings

VALIDATION_VERSION = 3  # 2: each answer's missing_pages; 3: from the run's page-read log


class TaskValidation(BaseModel):
    """One labelled task: agreement per label file, and what could not be compared."""

    task_id: str
    answers: list[LabelAgreement] = Field(default_factory=list)
    problems: list[str] = Field(
        default_factory=list, description="Missing judge or answer file, or a judge that failed."
    )


class ValidationReport(BaseModel):
    """Agreement of every labelled task's judge with its labels, and the gate's outcome."""

    version: int = VALIDATION_VERSION
    tasks: list[TaskValidation] = Field(default_factory=list)
    unlabelled: list[str] = Field(default_factory=list, description="Tasks without labels.")
    nodes_labelled: int = 0
    nodes_agreeing: int = 0
    roots_labelled: int = 0
    roots_agreeing: int = 0
    unknown_node_ids: int = Field(default=0, description="Labels naming nodes the judge lacks.")
    min_agreement: float | None = None
    failures: list[str] = Field(default_factory=list, description="Why the gate failed.")

    @property
    def node_agreement(self) -> float | None:
        """Labelled nodes the judges agree on, over all labelled nodes."""
        return self.nodes_agreeing / self.nodes_labelled if self.nodes_labelled else None

    @property
    def root_agreement(self) -> float | None:
        """Labelled root scores the judges reproduce, over all labelled root scores."""
        return self.roots_agreeing / self.roots_labelled if self.roots_labelled else None

    def tally(self) -> None:
        """Fill the totals from the per-answer agreements."""
        for item in (a for t in self.tasks for a in t.answers):
            self.nodes_labelled += item.nodes_labelled
            self.nodes_agreeing += item.nodes_agreeing
            self.unknown_node_ids += len(item.unknown_node_ids)
            if item.root_agrees is not None:
                self.roots_labelled += 1
                self.roots_agreeing += int(item.root_agrees)

    def gate(self, min_agreement: float) -> None:
        """Record every reason the labels gate fails at `min_agreement`."""
        self.min_agreement = min_agreement
        if not self.nodes_labelled and not self.roots_labelled:
            self.failures.append(
                "nothing labelled was compared: add labels/<answer>.yaml to the tasks' folders"
            )
        for name, value in (("node", self.node_agreement), ("root", self.root_agreement)):
            if value is not None and value < min_agreement:
                self.failures.append(f"{name} agreement {value:.3f} < {min_agreement:g}")
        if self.unknown_node_ids:
            self.failures.append(f"{self.unknown_node_ids} label(s) name nodes the judge lacks")
        self.failures += [f"{t.task_id}: {p}" for t in self.tasks for p in t.problems]

    def to_json(self) -> str:
        """JSON with the computed agreements included."""
        data = self.model_dump(mode="json")
        data["node_agreement"] = self.node_agreement
        data["root_agreement"] = self.root_agreement
        data["passed"] = None if self.min_agreement is None else not self.failures
        for task, raw in zip(self.tasks, data["tasks"], strict=True):
            for item, row in zip(task.answers, raw["answers"], strict=True):
                row["node_agreement"] = item.node_agreement
        return _dumps(data)


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def _task_ids(task_ids: tuple[str, ...], tasks_dir: Path) -> list[str]:
    if task_ids:
        return list(task_ids)
    if not tasks_dir.is_dir():
        raise click.UsageError(f"no tasks directory {tasks_dir} (use --tasks DIR)")
    return [folder.name for folder in task_folders(tasks_dir)]


def _labels(loaded: LoadedSpec) -> dict[str, AnswerLabels]:
    try:
        return task_labels(Path(loaded.task_dir))
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


class LabelledTask(NamedTuple):
    """A task to validate: its spec, each label with the sample answer it labels, and the
    labels naming no sample answer."""

    loaded: LoadedSpec
    pairs: list[tuple[SampleAnswer, AnswerLabels]]
    problems: list[str]


def _labelled(loaded: LoadedSpec, labels: dict[str, AnswerLabels]) -> LabelledTask:
    """Match each label to its answer by file name; a label file without `answer:` labels the
    answer of its own name whatever the answer's extension (`labels/x.yaml`: `answers/x.txt`)."""
    by_file = {Path(a.path).name: a for a in loaded.answers}
    by_name = {a.name: a for a in loaded.answers}
    task = LabelledTask(loaded, [], [])
    for answer_file, label in labels.items():
        answer = by_file.get(answer_file)
        if answer is None and label.answer is None:
            answer = by_name.get(Path(answer_file).stem)
        if answer is None:
            task.problems.append(f"labels name answer {answer_file}, which does not exist")
        else:
            task.pairs.append((answer, label))
    return task


def _check_pages(todo: list[LabelledTask], pages: Path | None) -> None:
    """Refuse to judge labelled answers that cite pages without a page store: every cited page
    would be missing, so unsupported, and a `fail` label would agree for that reason alone."""
    if pages is not None:
        return
    citing = [
        f"{task.loaded.task_id}/{Path(answer.path).name}"
        for task in todo
        for answer, _ in task.pairs
        if cites_pages([answer])
    ]
    if citing:
        raise click.UsageError(
            f"the labelled answers cite pages ({', '.join(citing[:3])}"
            f"{', …' if len(citing) > 3 else ''}) and no page store was given: every cited page "
            "would be judged missing (unsupported), which no label assumes. Pass --pages DIR "
            "(see `judgegen cache-pages`)"
        )


async def _validate_task(runs: ReviewRuns, task: LabelledTask, judges: Path) -> TaskValidation:
    loaded = task.loaded
    result = TaskValidation(task_id=loaded.task_id)
    judge = judges / f"{loaded.task_id}.py"
    if not judge.is_file():
        result.problems.append(f"no judge {judge}")
        return result
    result.problems += task.problems
    for answer, label in task.pairs:
        answer_file = Path(answer.path).name
        click.echo(f"[{loaded.task_id}] judging {answer_file}", err=True)
        try:
            judged = await runs.judged(
                judge, answer.text, task_id=loaded.task_id, answer_name=answer.name
            )
        except JudgeRunError as exc:
            result.problems.append(str(exc))
            continue
        result.answers.append(agreement(loaded.task_id, answer_file, judged, label))
    return result


async def _validate(
    todo: list[LabelledTask],
    judges: Path,
    backend: Any,
    clients: CommandClients,
    pages: Any,
    sandbox: bool,
    timeout_s: float,
) -> list[TaskValidation]:
    try:
        async with ReviewRuns(backend, pages=pages, sandbox=sandbox, timeout_s=timeout_s) as runs:
            return [await _validate_task(runs, task, judges) for task in todo]
    finally:
        await clients.aclose()


def _fraction(value: float | None, part: int, whole: int) -> str:
    return "n/a (nothing labelled)" if value is None else f"{value:.3f} ({part}/{whole})"


def render_text(report: ValidationReport) -> str:
    """One line per labelled answer, its disagreements, then the totals and the gate."""
    lines: list[str] = []
    for task in report.tasks:
        for item in task.answers:
            root = ""
            if item.root_agrees is not None:
                mark = "agrees" if item.root_agrees else "DISAGREES"
                root = f"; root {item.root_actual:g} (labelled {item.root_expected:g}) {mark}"
            lines.append(
                f"{task.task_id}/{item.answer}: nodes {item.nodes_agreeing}/"
                f"{item.nodes_labelled} agree{root}"
            )
            lines += [
                f"  disagrees {d.id}: labelled {d.expected}, judge {d.actual}"
                for d in item.disagreements
            ]
            lines += [
                f"  unknown node id {i}: not in the judge's tree" for i in item.unknown_node_ids
            ]
            if item.missing_pages:
                lines.append(
                    f"  judged without {len(item.missing_pages)} cited page(s) missing from the "
                    f"page store (unsupported, never read): {', '.join(item.missing_pages)}"
                )
        lines += [f"{task.task_id}: problem: {p}" for p in task.problems]
    if report.unlabelled:
        lines.append(f"tasks without labels: {', '.join(report.unlabelled)}")
    missing = {url for task in report.tasks for item in task.answers for url in item.missing_pages}
    if missing:
        lines.append(
            f"warning: {len(missing)} cited page(s) missing from the page store: the nodes "
            "checked on them were judged without the page; capture them with `judgegen "
            "cache-pages --answers tasks/<task>/answers --store <pages>` and validate again"
        )
    lines.append(
        "node agreement "
        + _fraction(report.node_agreement, report.nodes_agreeing, report.nodes_labelled)
        + "; root agreement "
        + _fraction(report.root_agreement, report.roots_agreeing, report.roots_labelled)
    )
    if report.min_agreement is not None:
        verdict = "FAILED: " + "; ".join(report.failures) if report.failures else "passed"
        lines.append(f"gate --min-agreement {report.min_agreement:g}: {verdict}")
    return "\n".join(lines) + "\n"


@click.command()
@click.argument("task_ids", nargs=-1)
@click.option(
    "--min-agreement",
    type=click.FloatRange(0, 1),
    help="CI gate: exit 1 when node or root agreement is below this, or a label is stale.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@location_options
@backend_options
@sandbox_options
@llm_options
def validate(
    task_ids: tuple[str, ...],
    min_agreement: float | None,
    as_json: bool,
    judges: Path,
    tasks_dir: Path,
    backend_spec: str | None,
    pages: Path | None,
    no_sandbox: bool,
    timeout_s: float,
    llm_settings: LLMSettings,
) -> None:
    """Compare judges with human labels in tasks/<TASK>/labels/*.yaml (default: all tasks).

    Runs each judge on every labelled sample answer and reports node-level agreement,
    root-score agreement and the disagreeing nodes. A label naming a node id the judge no
    longer builds is reported (and fails the gate). Tasks without labels are listed, not
    failed, but the gate fails when no label at all was compared. A label file
    `labels/<answer>.yaml` (or `.yml`) holds `root_score: 0..1` and/or
    `nodes: {node_id: pass|fail|skip}`; it labels the answer of its name (any extension), or
    the one its `answer:` names. Two label files for one answer are an input error.

    Labelled answers citing pages need --pages: a page missing from the store is judged
    unsupported without being read, so a `fail` label would agree for that reason alone.
    Pages still missing are listed under their answer and in a closing warning.

    \b
    Example:
      judgegen validate first_ascents --min-agreement 0.9 --tasks tests/fixtures/review/tasks --judges tests/fixtures/review/judges \
        --backend tests.fixtures.review.scripted:backend --pages review-pages
      judgegen validate first_ascents --json --tasks tests/fixtures/review/tasks --judges tests/fixtures/review/judges \
        --backend tests.fixtures.review.scripted:backend --pages review-pages

    \b
    Exit codes: 0 ok (or no gate given); 1 below --min-agreement, nothing labelled, stale
    labels, or a judge that failed; 2 usage or input error (bad label file, two label files
    for one answer, no --pages for answers citing pages); 3 infrastructure failure.
    """
    todo: list[LabelledTask] = []
    unlabelled: list[str] = []
    for task_id in _task_ids(task_ids, tasks_dir):
        loaded = load_task(task_id, tasks_dir)
        labels = _labels(loaded)
        if labels:
            todo.append(_labelled(loaded, labels))
        else:
            unlabelled.append(loaded.task_id)
    _check_pages(todo, pages)
    report = ValidationReport(unlabelled=unlabelled)
    if todo:
        backend, client = open_backend(backend_spec, llm_settings)
        clients = CommandClients()
        clients.add(client)
        report.tasks = run_review(
            _validate(todo, judges, backend, clients, open_pages(pages), not no_sandbox, timeout_s),
            "validate",
            llm_settings.cache_mode if client is not None else None,
            clients,
        )
    report.tally()
    if min_agreement is not None:
        report.gate(min_agreement)
    click.echo(report.to_json() if as_json else render_text(report), nl=as_json)
    problems = any(task.problems for task in report.tasks)
    sys.exit(1 if report.failures or problems else 0)
