"""Task specs: `tasks/<task_id>/task.yaml` plus its sample answers and optional human labels.

A spec may instead be `task.md`: the same fields as YAML front matter between `---` lines,
and a Markdown body that is the rubric guidance (unless the front matter sets it).

Invariant: a spec that loads is complete enough to generate from (an id that matches its
folder and can name a Python module, a description, guidance, at least one sample answer),
and every rejection names the file, the field and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolkit.errors import SpecError
from toolkit.util.hashing import sha256_text

SPEC_VERSION = 1
SPEC_FILE = "task.yaml"
MARKDOWN_SPEC_FILE = "task.md"
ANSWER_SUFFIXES = (".md", ".txt")
TASK_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class TaskSpec(BaseModel):
    """What a benchmark author writes about one task; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=SPEC_VERSION, description="Format version of this file.")
    id: str = Field(description="Task id; equals the folder name and names the judge module.")
    description: str = Field(description="The exact text the agent was given.")
    rubric_guidance: str = Field(
        description="What a good answer must contain, what is critical, what needs a source."
    )
    ground_truth: dict[str, Any] | None = Field(
        default=None, description="Facts the judge may compare against (optional)."
    )
    notes: str = Field(default="", description="Anything else a judge author should know.")
    time_varying: bool = Field(
        default=False, description="True when correct facts change over time (verify on pages)."
    )
    intended_scores: dict[str, float] | None = Field(
        default=None,
        description="Sample answer name -> the root score the author intends (0..1).",
    )

    @field_validator("intended_scores")
    @classmethod
    def _scores_in_range(cls, scores: dict[str, float] | None) -> dict[str, float] | None:
        for name, score in (scores or {}).items():
            if not 0.0 <= score <= 1.0:
                raise ValueError(f"intended score of '{name}' is {score}; use 0..1")
        return scores


class SampleAnswer(BaseModel):
    """One sample answer file under `answers/`."""

    name: str
    path: str
    text: str


class LoadedSpec(BaseModel):
    """A validated spec with its folder, sample answers and label files."""

    spec: TaskSpec
    task_dir: str
    answers: list[SampleAnswer]
    label_files: list[str] = Field(default_factory=list)

    @property
    def task_id(self) -> str:
        """The task id."""
        return self.spec.id

    def sha256(self) -> str:
        """Content hash of the spec (canonical JSON of the fields, so comments don't count)."""
        return spec_sha256(self.spec)


def spec_sha256(spec: TaskSpec) -> str:
    """`sha256:<hex>` of the spec's canonical JSON."""
    data = spec.model_dump(mode="json")
    # Fields added after version 1 enter the hash only when set, so old specs keep theirs.
    for added in ("intended_scores",):
        if data.get(added) is None:
            data.pop(added, None)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_text(canonical)


def _field_fix(kind: str, field: str) -> str:
    allowed = ", ".join(TaskSpec.model_fields)
    if kind == "extra_forbidden":
        return f"remove '{field}' (allowed fields: {allowed}); put free text under 'notes'"
    if kind == "missing":
        return f"add '{field}:' (see `judgegen new` for a commented template)"
    return f"give '{field}' a value of the documented type (see `judgegen new`)"


def _from_validation_error(file: str, error: ValidationError) -> SpecError:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "<root>"
    return SpecError(file, field, first["msg"].lower(), _field_fix(first["type"], field))


def _split_front_matter(text: str, file: str) -> tuple[str, str]:
    """(front matter YAML, Markdown body) of a `task.md`."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SpecError(
            file,
            "<front matter>",
            "does not start with '---'",
            "put the fields between '---' lines",
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SpecError(
            file, "<front matter>", "has no closing '---'", "close it with a '---' line"
        )
    return "".join(lines[1:end]), "".join(lines[end + 1 :])


def parse_spec(text: str, file: str, *, markdown: bool = False) -> TaskSpec:
    """Validate a spec (`task.yaml`, or `task.md` whose body is the rubric guidance).

    Raises `SpecError` naming the file, the field and the fix.
    """
    body = ""
    if markdown:
        text, body = _split_front_matter(text, file)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "<yaml>"
        raise SpecError(file, where, "is not valid YAML", "fix the YAML syntax there") from exc
    if isinstance(data, dict) and body.strip() and "rubric_guidance" not in data:
        data["rubric_guidance"] = body.strip() + "\n"
    if not isinstance(data, dict):
        raise SpecError(file, "<root>", "is not a mapping", "write `key: value` lines")
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise _from_validation_error(file, exc) from None
    if spec.version != SPEC_VERSION:
        raise SpecError(file, "version", f"unsupported version {spec.version}", "set version: 1")
    if not TASK_ID_PATTERN.match(spec.id):
        raise SpecError(
            file, "id", f"'{spec.id}' cannot name a judge module", "use lowercase a-z, 0-9 and _"
        )
    for name in ("description", "rubric_guidance"):
        if not getattr(spec, name).strip():
            raise SpecError(file, name, "is empty", f"write the {name.replace('_', ' ')}")
        if "TODO:" in getattr(spec, name):
            raise SpecError(file, name, "still holds the scaffold's TODO", "replace the TODO text")
    return spec


def _answers(task_dir: Path, file: str) -> list[SampleAnswer]:
    folder = task_dir / "answers"
    paths = sorted(p for p in folder.glob("*") if p.suffix in ANSWER_SUFFIXES and p.is_file())
    if not paths:
        raise SpecError(
            file, "answers/", "no sample answers found", f"add one or more .md files in {folder}"
        )
    return [SampleAnswer(name=p.stem, path=str(p), text=p.read_text("utf-8")) for p in paths]


def cites_pages(answers: Iterable[SampleAnswer]) -> bool:
    """Whether any of `answers` cites a URL (so judging it reads pages)."""
    return any("http://" in a.text or "https://" in a.text for a in answers)


def load_spec(task: str | Path, tasks_root: str | Path = "tasks") -> LoadedSpec:
    """Load `tasks/<task_id>/task.yaml` (or `task.md`, a task folder or a spec path) with answers."""
    path = Path(task)
    if path.name in (SPEC_FILE, MARKDOWN_SPEC_FILE):
        path = path.parent
    elif not path.is_dir():
        path = Path(tasks_root) / str(task)
    spec_file = path / SPEC_FILE
    if not spec_file.is_file() and (path / MARKDOWN_SPEC_FILE).is_file():
        spec_file = path / MARKDOWN_SPEC_FILE
    if not spec_file.is_file():
        raise SpecError(
            str(path / SPEC_FILE), "<file>", "does not exist", f"run `judgegen new {path.name}`"
        )
    markdown = spec_file.name == MARKDOWN_SPEC_FILE
    spec = parse_spec(spec_file.read_text("utf-8"), str(spec_file), markdown=markdown)
    if spec.id != path.name:
        raise SpecError(
            str(spec_file),
            "id",
            f"'{spec.id}' differs from the folder name '{path.name}'",
            f"set id: {path.name} or rename the folder",
        )
    labels = sorted(str(p) for p in (path / "labels").glob("*") if p.is_file())
    return LoadedSpec(
        spec=spec, task_dir=str(path), answers=_answers(path, str(spec_file)), label_files=labels
    )


SCAFFOLD = """\
# Task spec for judgegen. `judgegen generate {task_id}` turns it into a judge script.
# Unknown fields are rejected; free text that fits nowhere else goes under `notes`.

# Format version of this file. Leave at 1.
version: 1

# Task id: lowercase letters, digits and _; must equal this folder's name. It names the
# judge module generated_judges/{task_id}.py.
id: {task_id}

# The exact text the agent was given (copied verbatim into the judge as TASK_DESCRIPTION).
description: |
  TODO: what the agent is asked to find or do.

# Prose for the judge author: what a good answer must contain, which items are critical
# (a wrong or missing one makes the whole answer fail), which facts need a cited URL that
# supports them, what must be checked in order (sequential), and allowed variations
# (date formats, name spellings, rounding).
rubric_guidance: |
  TODO: - The answer names ... (critical; must cite a source that supports it).
  TODO: - ...

# Optional facts the judge may compare against (a mapping); remove if none.
ground_truth: {{}}

# Anything else a reviewer or the generator should know.
notes: ""

# true when the correct facts change over time (prices, rankings, latest versions); the
# judge then verifies against the cited pages rather than fixed values.
time_varying: false

# The root score you intend each sample answer (answers/<name>.md) to get, 0..1. The draft
# prompt shows them, and `generate` scores the samples with the real judging model and
# repairs the judge until it agrees. Node-level outcomes go in labels/<name>.yaml
# (`root_score: 1.0` and `nodes: {{node_id: pass|fail|skip}}`).
intended_scores:
  good: 1.0
  partial: 0.5
  wrong: 0.0

# Sample answers go in answers/*.md (good, partial and wrong ones, citing URLs); the debug
# stage runs the draft judge on each. Optional human node labels go in labels/.
"""


def scaffold_text(task_id: str) -> str:
    """A commented `task.yaml` for `task_id`, explaining each field."""
    if not TASK_ID_PATTERN.match(task_id):
        raise SpecError(
            "<argument>", "TASK_ID", f"'{task_id}' is not a valid id", "use a-z, 0-9, _"
        )
    return SCAFFOLD.format(task_id=task_id)
