"""Reading the shape of an `--answers` folder: where the answers are, and what does not fit.

The layout is Mind2Web 2's `<agent>/<task_id>/<answer>.md` (or one agent's `<task_id>/*.md`).
Two common mistakes are recognized instead of silently judging nothing: pointing at a task
folder (`tasks/<id>`, which holds `task.yaml`) or at its `answers/` folder runs that task's
sample answers as agent `samples`, as `tasks/<id>/samples` would; a folder of loose `.md` files
is a layout error with the fix. Files the layout does not account for (answers in nested
folders, non-`.md` files, loose files) are listed as strays so the run can report them.
Agent names and task ids are the folders' names in their canonical spelling
(`toolkit.names`); two agent (or task) folders spelled alike but for Unicode normalization are
a `NameCollision`, never merged into one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolkit.errors import AnswersLayoutError
from toolkit.names import canonical_name, check_distinct

ANSWER_SUFFIX = ".md"
SAMPLES_AGENT = "samples"
TASK_SPEC_FILES = ("task.yaml", "task.md")
LAYOUT = "<agent>/<task_id>/<answer>.md"


@dataclass(frozen=True)
class StrayFile:
    """A file under the answers folder that is not judged, and why."""

    path: Path
    reason: str

    @property
    def looks_like_answer(self) -> bool:
        """A `.md` file: most likely an answer someone meant to be judged."""
        return self.path.suffix == ANSWER_SUFFIX


@dataclass(frozen=True)
class TaskFolder:
    """One `<task_id>/` folder of answers and the agent whose answers they are (both names
    canonical, whatever the folders' spelling on disk)."""

    agent_name: str
    task_id: str
    path: Path


@dataclass
class AnswersLayout:
    """What an `--answers` folder holds: task folders to judge, strays, and a note for the user."""

    kind: Literal["agents", "agent", "task"]
    folders: list[TaskFolder] = field(default_factory=list)
    strays: list[StrayFile] = field(default_factory=list)
    note: str | None = None


def is_visible(path: Path) -> bool:
    """Whether `path` is not hidden (a dot name): hidden folders and files are no answers."""
    return not path.name.startswith(".")


def _entries(folder: Path) -> tuple[list[Path], list[Path]]:
    """(visible sub-folders, visible files) of `folder`, sorted."""
    children = sorted(p for p in folder.iterdir() if is_visible(p))
    return [p for p in children if p.is_dir()], [p for p in children if not p.is_dir()]


def _task_dir(root: Path) -> Path | None:
    """The task folder `root` is, or whose `answers/` folder it is; else None."""

    def is_task(folder: Path) -> bool:
        return any((folder / name).is_file() for name in TASK_SPEC_FILES)

    if is_task(root):
        return root
    return root.parent if root.name == "answers" and is_task(root.parent) else None


def samples_task(root: str | Path) -> str | None:
    """The task whose sample answers `root` holds — a task folder, its `answers/`, or its
    `samples/` folder (`samples/<id>` links to `../answers`) — else None. Every task's samples
    are one agent, `samples`, each task from its own folder."""
    root = Path(root)
    task_dir = _task_dir(root)
    if task_dir is None and root.name == SAMPLES_AGENT:
        task_dir = _task_dir(root.parent)
    return None if task_dir is None else canonical_name(task_dir.resolve().name)


def _files_below(folder: Path) -> list[Path]:
    found: list[Path] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(current) / f for f in sorted(files) if not f.startswith(".")]
    return found


def _task_strays(task_dir: Path) -> list[StrayFile]:
    subdirs, files = _entries(task_dir)
    strays = [
        StrayFile(p, f"not a {ANSWER_SUFFIX} answer file")
        for p in files
        if p.suffix != ANSWER_SUFFIX
    ]
    for sub in subdirs:
        strays += [
            StrayFile(p, f"in a nested folder {sub.name}/; answers must be {LAYOUT}")
            for p in _files_below(sub)
        ]
    return strays


def _agent_folders(agent_dir: Path) -> tuple[list[TaskFolder], list[StrayFile]]:
    tasks, files = _entries(agent_dir)
    strays = [StrayFile(p, f"outside a task folder; answers must be {LAYOUT}") for p in files]
    check_distinct(tasks, f"task folder of agent {agent_dir.name}")
    agent = canonical_name(agent_dir.name)
    folders = [TaskFolder(agent, canonical_name(t.name), t) for t in tasks]
    for folder in folders:
        strays += _task_strays(folder.path)
    return folders, strays


def _is_agent_dir(path: Path) -> bool:
    return any(child.is_dir() and any(child.glob(f"*{ANSWER_SUFFIX}")) for child in path.iterdir())


def read_layout(root: str | Path) -> AnswersLayout:
    """How `root` is laid out (see the module docstring); raises `AnswersLayoutError` for a
    folder of loose answer files, naming the layout to use. Folders are named as `root` is
    absolutely (`.` names the current folder, not an agent or task named `""`)."""
    root = Path(os.path.abspath(root))
    task_dir = _task_dir(root)
    if task_dir is not None:
        answers = task_dir / "answers"
        note = (
            f"{root} is a task folder, not an answers folder ({LAYOUT}): judging the task's "
            f"sample answers in {answers} as agent '{SAMPLES_AGENT}'"
        )
        folder = TaskFolder(SAMPLES_AGENT, canonical_name(task_dir.name), answers)
        strays = _task_strays(answers) if answers.is_dir() else []
        return AnswersLayout("task", [folder] if answers.is_dir() else [], strays, note)
    subdirs, files = _entries(root)
    loose = [p for p in files if p.suffix == ANSWER_SUFFIX]
    if loose and not subdirs:
        names = ", ".join(p.name for p in loose[:3]) + (" …" if len(loose) > 3 else "")
        raise AnswersLayoutError(
            f"{root} holds answer files directly ({names}); lay answers out as {LAYOUT}, "
            f"e.g. {root}/my_agent/<task_id>/{loose[0].name}"
        )
    if _is_agent_dir(root):
        folders, strays = _agent_folders(root)
        return AnswersLayout("agent", folders, strays)
    specs = [d for d in subdirs if any((d / name).is_file() for name in TASK_SPEC_FILES)]
    if specs:
        raise AnswersLayoutError(
            f"{root} holds task folders ({', '.join(d.name for d in specs[:3])}), not answers; "
            f"pass one task's samples (--answers {specs[0]}/samples) or answers laid out as "
            f"{LAYOUT}"
        )
    check_distinct(subdirs, "agent folder")
    layout = AnswersLayout("agents")
    layout.strays = [
        StrayFile(p, f"outside an agent folder; answers must be {LAYOUT}") for p in files
    ]
    for agent_dir in subdirs:
        folders, strays = _agent_folders(agent_dir)
        layout.folders += folders
        layout.strays += strays
    return layout
