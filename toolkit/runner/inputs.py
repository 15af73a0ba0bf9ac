"""Finding the answers to judge: Mind2Web 2 answer folders and webeval trajectory folders.

Every answer becomes one `AnswerInput` with a decided outcome before any judge runs:
- normal text → judged;
- empty (nothing but whitespace), or a trajectory's `final_answer` left at webeval's
  `"<no_answer>"` (the agent never called `terminate` within its step budget) → scored 0
  without running the judge, as webeval does;
- invalid UTF-8 (in an answer file or a trajectory's JSON file), or a JSON-escaped lone
  surrogate in a final answer → decoded with replacement characters, judged, and a note says
  so;
- a binary answer file (contains NUL bytes), an answer larger than `max_bytes`, an aborted
  trajectory, or a malformed trajectory folder → excluded with a reason, never judged and
  never counted in metrics. A final answer is a decoded JSON string, text whatever it holds
  (an escaped NUL included): the binary rule is for raw file bytes.

Agent, task and answer names are canonical (`toolkit.names`) whatever their spelling on
disk, so results land under one spelling; two answer files or trajectory folders spelled alike
but for Unicode normalization are a `NameCollision`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolkit.names import canonical_name, check_distinct
from toolkit.runner.answers_layout import ANSWER_SUFFIX, AnswersLayout, is_visible, read_layout
from toolkit.util.hashing import sha256_bytes

DEFAULT_MAX_ANSWER_BYTES = 2_000_000
TRAJECTORY_ANSWER_NAME = "final_answer"
NO_ANSWER = "<no_answer>"
"""webeval's `FinalAnswer.final_answer` default, kept when the agent never calls `terminate`
(over budget): no answer, not one to judge (webeval's `filter_no_answer` drops it too)."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass
class AnswerInput:
    """One answer to evaluate, with its decoded text and the outcome decided from the input."""

    kind: Literal["answer", "trajectory"]
    agent_name: str
    task_id: str
    answer_name: str
    path: Path
    answer_sha256: str
    text: str | None = None
    notes: list[str] = field(default_factory=list)
    excluded: str | None = None
    input_error: bool = False
    empty: bool = False
    traj_dir: Path | None = None


def _natural_key(name: str) -> tuple:
    parts = name.replace("-", "_").split("_")
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def decode_answer(input_: AnswerInput, data: bytes, max_bytes: int) -> AnswerInput:
    """Decide the outcome of raw answer bytes (see the module docstring) and set `text`."""
    if len(data) > max_bytes:
        input_.excluded = (
            f"answer too large: {len(data):,} bytes > limit {max_bytes:,} (--max-answer-bytes)"
        )
        return input_
    if b"\x00" in data:
        input_.excluded = "binary file (contains NUL bytes), not a text answer"
        return input_
    text, note = _decode_utf8(data)
    if note:
        input_.notes.append(note)
    return _with_text(input_, text)


def _decode_utf8(data: bytes, where: str = "") -> tuple[str, str | None]:
    """`data` as text (a BOM dropped) and, when it is not valid UTF-8, the note saying where
    it was decoded with replacement characters."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        note = (
            f"invalid UTF-8 at byte {exc.start}{where}: decoded with U+FFFD replacement characters"
        )
        return data.decode("utf-8", errors="replace"), note


def _with_text(input_: AnswerInput, text: str) -> AnswerInput:
    """`input_` judged on `text`, or marked empty when it is blank."""
    input_.text = text
    if not text.strip():
        _mark_empty(input_, "empty answer")
    return input_


def _mark_empty(input_: AnswerInput, what: str) -> AnswerInput:
    input_.empty = True
    input_.notes.append(f"{what}: scored 0 without running the judge")
    return input_


def decode_final_answer(input_: AnswerInput, answer: str, max_bytes: int) -> AnswerInput:
    """Decide the outcome of a trajectory's final answer, a string decoded from JSON: too
    large, empty (blank, or webeval's `NO_ANSWER`), or judged (lone surrogates, which JSON
    escapes allow, replaced and noted)."""
    if answer.strip() == NO_ANSWER:
        input_.text = answer
        return _mark_empty(
            input_, f"no final answer ({NO_ANSWER!r}: the agent never called terminate)"
        )
    data = answer.encode("utf-8", errors="surrogatepass")
    if len(data) > max_bytes:
        input_.excluded = (
            f"answer too large: {len(data):,} bytes > limit {max_bytes:,} (--max-answer-bytes)"
        )
        return input_
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError as exc:
        answer = _SURROGATE.sub("\ufffd", answer)
        input_.notes.append(
            f"final_answer is not valid Unicode at character {exc.start} (a lone surrogate): "
            "decoded with U+FFFD replacement characters"
        )
    return _with_text(input_, answer)


def discover_answers(
    root: str | Path,
    *,
    tasks: set[str] | None = None,
    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    layout: AnswersLayout | None = None,
) -> list[AnswerInput]:
    """Every `<agent>/<task_id>/*.md` under `root` (or `<task_id>/*.md` if `root` is one agent,
    or a task folder's samples; see `read_layout`, whose result may be passed as `layout`).
    `tasks` are matched in any Unicode spelling."""
    layout = layout or read_layout(root)
    wanted = None if tasks is None else {canonical_name(task) for task in tasks}
    found: list[AnswerInput] = []
    for folder in layout.folders:
        if wanted is not None and folder.task_id not in wanted:
            continue
        paths = [p for p in folder.path.glob(f"*{ANSWER_SUFFIX}") if p.is_file()]
        check_distinct(paths, "answer file")
        for path in sorted(paths, key=lambda p: _natural_key(canonical_name(p.stem))):
            found.append(answer_input(path, folder.agent_name, folder.task_id, max_bytes))
    return found


def answer_input(path: Path, agent_name: str, task_id: str, max_bytes: int) -> AnswerInput:
    """The answer file at `path` as a run finds it: hashed, its outcome decided."""
    data = path.read_bytes()
    item = AnswerInput(
        kind="answer",
        agent_name=agent_name,
        task_id=task_id,
        answer_name=canonical_name(path.stem),
        path=path,
        answer_sha256=sha256_bytes(data),
    )
    return decode_answer(item, data, max_bytes)


def trajectory_root(root: str | Path) -> tuple[str, Path]:
    """(run name, folder holding one directory per task) for `<run>`, `<run>/traj` or a traj
    dir; the run name, the agent's, is canonical (`toolkit.names`)."""
    root = Path(root).resolve()
    if (root / "traj").is_dir():
        return canonical_name(root.name), root / "traj"
    if root.name == "traj":
        return canonical_name(root.parent.name), root
    return canonical_name(root.name), root


def trajectory_input(run: str, task_dir: Path, max_bytes: int) -> AnswerInput:
    """The trajectory folder `task_dir` of webeval run `run` as a run finds it: its final
    answer hashed, its outcome decided (malformed: excluded as an input error)."""
    candidates = sorted(task_dir.glob("*final_answer.json"))
    raw = b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in candidates)
    item = AnswerInput(
        kind="trajectory",
        agent_name=run,
        task_id=canonical_name(task_dir.name),
        answer_name=TRAJECTORY_ANSWER_NAME,
        path=candidates[0] if len(candidates) == 1 else task_dir,
        answer_sha256=sha256_bytes(raw),
        traj_dir=task_dir,
    )
    if len(candidates) != 1:
        names = ", ".join(p.name for p in candidates) or "none"
        item.excluded = (
            f"expected exactly one *_final_answer.json, found {len(candidates)}: {names}"
        )
        item.input_error = True
        return item
    problem: str | None
    text, note = _decode_utf8(candidates[0].read_bytes(), f" of {candidates[0].name}")
    if note:
        item.notes.append(note)
    try:
        record = json.loads(text)
    except ValueError as exc:
        record, problem = None, f"not valid JSON ({exc})"
    else:
        problem = _final_answer_problem(record)
    if problem:
        item.excluded = f"{candidates[0].name}: {problem}"
        item.input_error = True
        return item
    if record["is_aborted"]:
        item.excluded = "aborted trajectory (is_aborted: true): excluded, no score file"
        return item
    return decode_final_answer(item, record["final_answer"], max_bytes)


def _final_answer_problem(record: object) -> str | None:
    if not isinstance(record, dict):
        return "top level is not a JSON object"
    if not isinstance(record.get("final_answer"), str):
        return "field 'final_answer' is missing or not a string"
    if not isinstance(record.get("is_aborted"), bool):
        return "field 'is_aborted' is missing or not a boolean"
    return None


def discover_trajectories(
    root: str | Path,
    *,
    tasks: set[str] | None = None,
    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> list[AnswerInput]:
    """One input per `<run>/traj/<task_id>/` folder; malformed folders become excluded inputs.
    Hidden folders (`.ipynb_checkpoints`, `.git`) are no task's, as in an answers folder.
    `tasks` are matched in any Unicode spelling."""
    run, traj = trajectory_root(root)
    task_dirs = sorted(p for p in traj.iterdir() if p.is_dir() and is_visible(p))
    check_distinct(task_dirs, "trajectory task folder")
    wanted = None if tasks is None else {canonical_name(task) for task in tasks}
    return [
        trajectory_input(run, task_dir, max_bytes)
        for task_dir in task_dirs
        if wanted is None or canonical_name(task_dir.name) in wanted
    ]
