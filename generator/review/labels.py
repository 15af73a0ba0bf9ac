"""Human labels for a judge's verdicts, and how well a judge agrees with them.

A label file `tasks/<task_id>/labels/<answer>.yaml` gives, for one sample answer, the expected
root score and/or the expected outcome of individual nodes by id. Agreement is measured the
way Mind2Web 2's human evaluation did: node by node, plus the root score. A label naming a
node the judge no longer builds is reported, never ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from generator.review.rubric import flatten, tree_of
from generator.stages.spec import LoadedSpec
from toolkit.errors import SpecError

if TYPE_CHECKING:
    from generator.review.runs import JudgedAnswer

LABELS_VERSION = 1
LABEL_SUFFIXES = (".yaml", ".yml")
Outcome = Literal["pass", "fail", "skip"]
_STATUS_TO_OUTCOME = {"passed": "pass", "failed": "fail", "skipped": "skip"}


class AnswerLabels(BaseModel):
    """What a human expects the judge to conclude on one sample answer."""

    model_config = ConfigDict(extra="forbid")

    version: int = LABELS_VERSION
    answer: str | None = Field(default=None, description="Answer file name; default <stem>.md")
    root_score: float | None = Field(default=None, ge=0.0, le=1.0)
    nodes: dict[str, Outcome] = Field(default_factory=dict)
    notes: str | None = None


class NodeDisagreement(BaseModel):
    """A labelled node where the judge concluded something else."""

    id: str
    expected: Outcome
    actual: str


class LabelAgreement(BaseModel):
    """Agreement of one judge run with one label file."""

    version: int = LABELS_VERSION
    task_id: str
    answer: str
    nodes_labelled: int = 0
    nodes_agreeing: int = 0
    disagreements: list[NodeDisagreement] = Field(default_factory=list)
    unknown_node_ids: list[str] = Field(default_factory=list)
    root_expected: float | None = None
    root_actual: float | None = None
    root_agrees: bool | None = None
    status: str = "complete"
    missing_pages: list[str] = Field(
        default_factory=list,
        description="Cited pages the judge's run asked for and could not read (not in the page "
        "store, or a failed capture), as the runner's page-read log notes them: judged "
        "unsupported unread, so a node checked on one agrees or not for that.",
    )

    @property
    def node_agreement(self) -> float | None:
        """Fraction of labelled nodes the judge agrees on (None when none were labelled)."""
        return self.nodes_agreeing / self.nodes_labelled if self.nodes_labelled else None


def load_labels(path: Path) -> AnswerLabels:
    """Read and validate one label file; errors name the file, the field and the fix."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SpecError(
            str(path), "(file)", f"is not valid YAML ({exc})", "fix the YAML syntax"
        ) from exc
    if not isinstance(data, dict):
        raise SpecError(
            str(path), "(file)", "is not a mapping", "write `nodes:` and/or `root_score:`"
        )
    try:
        return AnswerLabels.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "(file)"
        raise SpecError(
            str(path),
            field,
            error["msg"],
            "use `root_score: 0..1` and `nodes: {node_id: pass|fail|skip}` only",
        ) from exc


def task_labels(task_dir: Path) -> dict[str, AnswerLabels]:
    """All label files of a task (`*.yaml` or `*.yml`), keyed by the answer file name they
    label (`answer:`, default `<stem>.md`).

    Two files labelling one answer (by name, whatever the extension) are an error naming
    both: keeping either would drop the other's labels without a word.
    """
    labels: dict[str, AnswerLabels] = {}
    seen: dict[str, Path] = {}
    folder = task_dir / "labels"
    paths = sorted(p for p in folder.glob("*") if p.suffix.lower() in LABEL_SUFFIXES)
    for path in (p for p in paths if p.is_file()):
        label = load_labels(path)
        answer = label.answer or f"{path.stem}.md"
        name = Path(answer).stem
        if name in seen:
            raise SpecError(
                str(path),
                "answer",
                f"labels answer '{name}', as {seen[name]} does",
                "merge the two label files into one",
            )
        seen[name] = path
        labels[answer] = label
    return labels


def intended_labels(loaded: LoadedSpec) -> dict[str, AnswerLabels]:
    """What the author intends each sample answer to score, keyed by the answer's name (stem).

    Label files (`tasks/<id>/labels/<answer>.yaml`) give a root score and node outcomes; the
    spec's `intended_scores` gives root scores only. Both may be present; they must agree.
    """
    labels = {Path(name).stem: label for name, label in task_labels(Path(loaded.task_dir)).items()}
    for answer, score in (loaded.spec.intended_scores or {}).items():
        label = labels.get(answer)
        if label is None:
            labels[answer] = AnswerLabels(answer=f"{answer}.md", root_score=score)
        elif label.root_score is None:
            label.root_score = score
        elif abs(label.root_score - score) > 1e-9:
            raise SpecError(
                f"{loaded.task_dir}/labels/{answer}.yaml",
                "root_score",
                f"is {label.root_score:g} but task.yaml intended_scores.{answer} is {score:g}",
                "make the two agree, or drop one",
            )
    names = {a.name for a in loaded.answers}
    unknown = sorted(set(labels) - names)
    if unknown:
        raise SpecError(
            f"{loaded.task_dir}",
            "intended_scores / labels",
            f"name sample answers that do not exist: {', '.join(unknown)}",
            f"use the names of answers/*.md ({', '.join(sorted(names))})",
        )
    return labels


def agreement(
    task_id: str, answer: str, judged: JudgedAnswer, labels: AnswerLabels
) -> LabelAgreement:
    """Compare a judge's run on an answer with the human labels for the same answer.

    Its missing pages are the run's page-read log's (`JudgedAnswer.missing_pages`, as `mutate`
    and acceptance read them), not the summary's `missing_sources`: that list is the judge's
    own, and leaves out a page the judge read itself (`ev.pages.get`) and found missing.
    """
    summary = judged.summary
    nodes = {n.id: n for n in flatten(tree_of(summary))}
    result = LabelAgreement(
        task_id=task_id,
        answer=answer,
        status=summary.get("status", "complete"),
        missing_pages=list(judged.missing_pages),
    )
    for node_id, expected in sorted(labels.nodes.items()):
        if node_id not in nodes:
            result.unknown_node_ids.append(node_id)
            continue
        result.nodes_labelled += 1
        actual = _STATUS_TO_OUTCOME.get(nodes[node_id].status, nodes[node_id].status)
        if actual == expected:
            result.nodes_agreeing += 1
        else:
            result.disagreements.append(
                NodeDisagreement(id=node_id, expected=expected, actual=actual)
            )
    if labels.root_score is not None:
        result.root_expected = labels.root_score
        result.root_actual = float(summary.get("final_score", 0.0))
        result.root_agrees = abs(result.root_actual - labels.root_score) < 1e-9
    return result
