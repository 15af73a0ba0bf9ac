"""Evaluation results on disk: one atomic JSON file per (agent, task, answer), plus score files.

`results/<agent>/<task_id>/<answer>.json` holds Mind2Web 2's result fields and judgegen's
(status, errors, usage, duration, fingerprint). Files are written through a temp file and
`os.replace`, so a killed run leaves either the old file, the new file, or a stray temp file
that the next run deletes — never a half-written result.

A webeval trajectory's complete result also gets a score file,
`<traj dir>/scores/<name>_<task_id>.json` (`name`: `--score-name`, by default `judgegen`), in
webeval's shape `{"score", "gpt_response_text"}`. `gpt_response_text` is JSON: the result's
fields and, first, `judgegen_results_folder`, the results folder that wrote it (absolute,
symlinks resolved). Two results folders (say two judge models) judging the same trajectories
would otherwise write the same files, the last run silently winning: `score_writers` tells a
run which results folders wrote the score files it is about to replace, reading one file per
trajectory and, for a file of the usual shape, only its first KiB.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, computed_field

from toolkit.errors import NameCollision, ResultsError, ResultsOfAnotherInput, ScoreFilesTaken
from toolkit.names import canonical_name, collision, same_name
from toolkit.runner.fingerprint import Fingerprint
from toolkit.runner.inputs import AnswerInput
from toolkit.runner.options import DEFAULT_SCORE_NAME
from toolkit.util.deferred import DEFERRED
from toolkit.util.files import write_atomic

RESULT_VERSION = 4
"""2: `usage.unknown_cost_calls`, the LLM calls counted whose cost is not known (earlier
results count none: they left such calls out of `usage` altogether); `earlier_attempts`, what
the incomplete attempts a result redid cost, and `usage_all_attempts` (earlier results carry
none: a redone result's file showed its last attempt alone). 3: `usage.answered_by`, the
models that answered its LLM calls (earlier results read with none: not recorded). 4:
`usage.cache_hits_by_origin`, where its cache hits' stored answers came from (earlier results
read with none: not recorded)."""
SUMMARY_FILE = "summary.json"
_DECODER = json.JSONDecoder()
_EDGE_BYTES = 16 * 1024
"""How much of a result's start and end `recorded_roots` reads for its task and input."""

Status = Literal["complete", "incomplete", "excluded"]


class UsageTotals(BaseModel):
    """Work one evaluation (or a whole run) cost: backend requests, LLM calls, tokens, dollars."""

    model_config = DEFERRED

    backend_calls: int = Field(default=0, description="extract + verify requests to the backend.")
    extract_calls: int = 0
    verify_calls: int = 0
    llm_calls: int = Field(default=0, description="LLM requests, including cache hits.")
    cache_hits: int = 0
    cache_hits_by_origin: dict[str, int] = Field(
        default_factory=dict,
        description="Of `cache_hits`, those by where their stored answers came from "
        "(`RecordOrigin.source`): `live` from a provider call; `scripted` fixtures (no model "
        "called); `unknown`, records that do not say, such as imported hand-written ones (no "
        "model is known to have given them, and `answered_by` does not list the model they "
        "name); `before_origins`, entries stored before the cache kept origins; `replay`, "
        "entries an older judgegen stored while replaying, their recordings' origin not kept "
        "(a replayed answer now has its record's). The result's notes name every one but "
        "`live`. Results of versions 1 to 3 list none.",
    )
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unknown_cost_calls: int = Field(
        default=0,
        description="LLM calls, among `llm_calls`, whose cost is not known and so not in "
        "`cost_usd`: a judge left them running when it stopped and they were cancelled (the "
        "provider may bill a cancelled request), or were still running when the result was "
        "written (the LLM ledger has their cost once they end). The result's notes say which.",
    )
    answered_by: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The models that answered the LLM calls counted, by the model asked for, "
        'sorted (e.g. `{"o4-mini": ["o4-mini-2025-04-16"]}`): what each answer names, a cache '
        "hit's the stored answer's. Two under one name: the vendor re-pointed an alias between "
        "the calls, and answers of both snapshots are counted. A call whose provider named no "
        "model is not listed; results of version 1 and 2 list none (not recorded).",
    )

    def __add__(self, other: UsageTotals) -> UsageTotals:
        mine, theirs = self.__dict__, other.__dict__
        merged = ("answered_by", "cache_hits_by_origin")
        sums = {name: mine[name] + theirs[name] for name in mine if name not in merged}
        answered = merge_answered(mine["answered_by"], theirs["answered_by"])
        origins = dict(mine["cache_hits_by_origin"])
        for source, count in theirs["cache_hits_by_origin"].items():
            origins[source] = origins.get(source, 0) + count
        return UsageTotals.model_construct(
            **sums, answered_by=answered, cache_hits_by_origin=origins
        )

    def note_answered(self, asked: str, answered: str) -> None:
        """Count that `answered` (a response's model) answered a call asking for `asked`."""
        models = self.__dict__["answered_by"].setdefault(asked, [])
        if answered not in models:
            bisect.insort(models, answered)

    def note_hit_origin(self, source: str) -> None:
        """Count a cache hit whose stored answer came from `source` (`cache_hits_by_origin`)."""
        by_origin = self.__dict__["cache_hits_by_origin"]
        by_origin[source] = by_origin.get(source, 0) + 1


def merge_answered(
    first: Mapping[str, list[str]], second: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    """The union of two `UsageTotals.answered_by` (new lists: neither is shared)."""
    merged = {asked: list(models) for asked, models in first.items()}
    for asked, models in second.items():
        merged[asked] = sorted({*merged.get(asked, ()), *models})
    return merged


class EarlierAttempts(BaseModel):
    """What earlier incomplete attempts of one judgement cost, carried by the result that
    redid them (or, in a summary, by the results counted)."""

    model_config = DEFERRED

    attempts: int = Field(default=0, description="How many earlier attempts.")
    usage: UsageTotals = Field(default_factory=UsageTotals, description="What they cost, added up.")

    def __add__(self, other: EarlierAttempts) -> EarlierAttempts:
        return EarlierAttempts.model_construct(
            attempts=self.attempts + other.attempts, usage=self.usage + other.usage
        )


class EvaluationResult(BaseModel):
    """One answer's evaluation: a superset of Mind2Web 2's result file."""

    model_config = DEFERRED

    version: int = RESULT_VERSION
    task_id: str
    agent_name: str
    answer_name: str
    status: Status = Field(
        description="complete: scored; incomplete: an infrastructure failure, retried next run; "
        "excluded: not judged by rule (aborted, binary, too large, malformed input)."
    )
    final_score: float | None = Field(
        description="Root score; None unless complete (incomplete trees keep `partial_score`)."
    )
    partial_score: float | None = Field(
        default=None, description="Root score of an incomplete evaluation's partial tree."
    )
    reason: str | None = Field(default=None, description="Why the answer was excluded.")
    errors: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list,
        description="How the input was read, any model the judge asked for but the run's "
        "backend did not use, and what the runner saw of how it ran that the rest does not say "
        "(e.g. what an attempt lost with its Ray node spent, counted in `usage`).",
    )
    judge_model: str | None = Field(
        default=None, description="Model the run's backend verified with (else the judge's)."
    )
    extract_model: str | None = Field(
        default=None, description="Model the run's backend extracted with (else the judge's)."
    )
    eval_breakdown: list[dict[str, Any]] = Field(default_factory=list)
    tree_statistics: dict[str, int] = Field(default_factory=dict)
    verifications: list[dict[str, Any]] = Field(default_factory=list)
    missing_sources: list[str] = Field(default_factory=list)
    clipped_pages: list[str] = Field(
        default_factory=list,
        description="Cited pages longer than the judging backend's page limit: the judge saw "
        "only their beginning, so a claim supported further on was found unsupported.",
    )
    usage: UsageTotals = Field(
        default_factory=UsageTotals,
        description="What this attempt cost: the evaluation that wrote this result, the LLM "
        "calls its judge left running when it stopped included.",
    )
    earlier_attempts: EarlierAttempts | None = Field(
        default=None,
        description="What the earlier incomplete attempts of this judgement cost (same "
        "answer, judge and configuration: the same fingerprint but for the pages read), "
        "carried when a run redid them; None when there were none. A complete result redone, "
        "or an incomplete one of another judge, answer or configuration, is another "
        "judgement: its spend is not carried (its run's usage and LLM ledger counted it).",
    )
    duration_s: float = 0.0
    judge_cpu_s: float | None = Field(
        default=None,
        description="CPU seconds of the sandboxed process that ran the judge on this answer "
        "(its start, the judge, its exit); None in process. A judge that computes more than "
        "it waits shows here.",
    )
    sandbox_guards: list[str] = Field(
        default_factory=list,
        description="Sandbox guards measured in effect for this evaluation (empty: in process).",
    )
    input_kind: Literal["answer", "trajectory"] = "answer"
    input_path: str = ""
    unreviewed_judge: bool = Field(
        default=False, description="The judge ran without a current approval."
    )
    fingerprint: Fingerprint

    @computed_field(  # type: ignore[prop-decorator]
        description="What judging this answer cost in all: `usage` plus `earlier_attempts`."
    )
    @property
    def usage_all_attempts(self) -> UsageTotals:
        """`usage` plus what the earlier incomplete attempts cost."""
        return all_attempts(self.usage, self.earlier_attempts)


def all_attempts(usage: UsageTotals, earlier: EarlierAttempts | None) -> UsageTotals:
    """`usage` of an attempt plus what `earlier` attempts cost, if any."""
    return usage if earlier is None else usage + earlier.usage


@dataclass(frozen=True, slots=True)
class ResultHead:
    """What a run keeps in memory of a result it wrote or reused: what its outcome, the
    agents' summaries and the `--json` record read. The tree, verifications and fingerprint
    stay in the result's file (`ResultStore.result` reads it), so a run's memory does not grow with
    every evaluation's tree — and, being another type, a head cannot be mistaken for a
    result whose tree was emptied."""

    task_id: str
    agent_name: str
    answer_name: str
    status: Status
    final_score: float | None
    reason: str | None
    first_error: Mapping[str, Any] | None
    error_count: int
    judge_model: str | None
    usage: UsageTotals
    earlier_attempts: EarlierAttempts | None
    duration_s: float
    unreviewed_judge: bool
    input_kind: Literal["answer", "trajectory"]
    missing_pages: tuple[str, ...]
    clipped_pages: tuple[str, ...]

    @classmethod
    def of(cls, result: EvaluationResult) -> ResultHead:
        """The head of `result`."""
        reads = result.fingerprint.pages
        missing = reads.missing if reads is not None else result.missing_sources
        return cls(
            task_id=result.task_id,
            agent_name=result.agent_name,
            answer_name=result.answer_name,
            status=result.status,
            final_score=result.final_score,
            reason=result.reason,
            first_error=result.errors[0] if result.errors else None,
            error_count=len(result.errors),
            judge_model=result.judge_model,
            usage=result.usage,
            earlier_attempts=result.earlier_attempts,
            duration_s=result.duration_s,
            unreviewed_judge=result.unreviewed_judge,
            input_kind=result.input_kind,
            missing_pages=tuple(missing),
            clipped_pages=tuple(result.clipped_pages),
        )

    def error_text(self) -> str:
        """The first error as `type: message`, with how many more there are."""
        if self.first_error is None:
            return "incomplete"
        first = self.first_error
        text = f"{first.get('type', 'error')}: {first.get('message', '')}".strip()
        more = self.error_count - 1
        return text + (f" (+{more} more)" if more else "")


UNREADABLE = "the result file cannot be read: run its task again, or delete the file"
MISPLACED = "not the result of its own path (a copy?), so not counted: delete the file"
SPELLED_TWICE = (
    "the result file beside it under the NFC spelling of the same names holds the result of "
    "this path (an earlier judgegen wrote this one under the names' spelling on disk), so "
    "this one is not counted: delete it"
)


class ScoreFile(BaseModel):
    """webeval's score file shape: the top-line score and the judge's full output as a string."""

    model_config = DEFERRED

    score: float
    gpt_response_text: str


class ResultStore:
    """The results directory: paths, atomic writes, tolerant reads."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, agent: str, task_id: str, answer_name: str) -> Path:
        """Where the result of (agent, task, answer) lives: under their canonical spelling
        (`toolkit.names`), so a run finds the results of the same names however its inputs
        spell them on disk."""
        names = (canonical_name(agent), canonical_name(task_id), canonical_name(answer_name))
        return self.root / names[0] / names[1] / f"{names[2]}.json"

    def read(self, agent: str, task_id: str, answer_name: str) -> EvaluationResult | None:
        """The stored result, or None when missing, unreadable or of another schema."""
        return read_result(self.path(agent, task_id, answer_name))

    def read_incomplete(
        self, agent: str, task_id: str, answer_name: str
    ) -> EvaluationResult | None:
        """The stored result if it is incomplete, else None. A result as `write` lays it out
        shows its status near its start: one of another status is not parsed (a complete
        result's tree can be 100+ KiB)."""
        path = self.path(agent, task_id, answer_name)
        try:
            with open(path, "rb") as handle:
                head = handle.read(_EDGE_BYTES)
        except OSError:
            return None
        if _top_level_string(head, "status") not in (None, "incomplete"):
            return None
        result = read_result(path)
        return result if result is not None and result.status == "incomplete" else None

    def result(self, head: ResultHead) -> EvaluationResult | None:
        """The whole result `head` stands for (None when its file is missing or unreadable)."""
        return self.read(head.agent_name, head.task_id, head.answer_name)

    def write(self, result: EvaluationResult) -> Path:
        """Write `result` atomically and return its path."""
        path = self.path(result.agent_name, result.task_id, result.answer_name)
        write_output(path, result.model_dump_json(indent=2) + "\n")
        return path

    def withdraw_summary(self, agent: str) -> None:
        """Delete `agent`'s summary.json before a run rewrites any of its results: a run
        interrupted (Ctrl-C, killed) before it writes the new one would leave the old one
        showing scores its results no longer hold. A failure is a `ResultsError`."""
        path = self.root / agent / SUMMARY_FILE
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ResultsError(path, exc.strerror or str(exc), "summary") from exc

    def remove_stray_temp_files(self, agent: str) -> int:
        """Delete temp files a killed run left behind; returns how many."""
        count = 0
        for path in (self.root / agent).rglob(".*.tmp"):
            path.unlink(missing_ok=True)
            count += 1
        return count

    def iter_heads(
        self,
        agent: str,
        known: Iterable[ResultHead] = (),
        unreadable: dict[Path, str] | None = None,
    ) -> Iterator[ResultHead]:
        """The head of every readable result of `agent`, in path order. A head in `known`
        (of a result this run wrote or read) is used as it is, its file not parsed again:
        summaries at the end of a run then read only results the run did not touch. Files
        that cannot be read as results, or hold the result of another task or answer than
        their path names (a copy: counted, it would stand in for that pair's result), are
        put in `unreadable`, with why; so is a file beside the same file in the canonical
        spelling (`toolkit.names`), which would count one result twice."""
        mine = {_spelled(self.path(h.agent_name, h.task_id, h.answer_name)): h for h in known}
        paths = _result_paths(self.root / agent)
        listed = {str(path) for path in paths}
        for path in paths:
            if str(path) != _spelled(path) and _spelled(path) in listed:
                if unreadable is not None:
                    unreadable[path] = SPELLED_TWICE
                continue
            head = mine.get(_spelled(path))
            why = UNREADABLE
            if head is None:
                result = read_result(path)
                head = None if result is None else ResultHead.of(result)
                if head is not None and _spelled(path) != _spelled(
                    self.path(agent, head.task_id, head.answer_name)
                ):
                    why = f"it holds the result of {head.task_id}/{head.answer_name}: {MISPLACED}"
                    head = None
            if head is not None:
                yield head
            elif unreadable is not None:
                unreadable[path] = why


def agent_folder_spellings(results_dir: Path, folders: Iterable[Path]) -> list[NameCollision]:
    """For each agent with two or more of `folders` (agent folders of `results_dir`) spelled
    apart only by Unicode normalization, the error naming them and the fix: `judgegen run`
    writes under the NFC spelling only, so the others are an earlier judgegen's (it wrote the
    spelling on disk) or a copy, which no run updates."""
    by_name: dict[str, list[Path]] = {}
    for folder in folders:
        spelled = by_name.setdefault(canonical_name(folder.name), [])
        if folder not in spelled:
            spelled.append(folder)
    found = []
    for name, spelled in by_name.items():
        if len(spelled) < 2:
            continue
        older = " and ".join(str(f) for f in spelled if f.name != name)
        consequence = (
            f"and `judgegen run` writes the results of agent {name} under its NFC spelling only"
        )
        fix = (
            "the one not spelled NFC holds those of an earlier judgegen (which wrote the "
            f"spelling on disk) or a copy, which no run updates: delete it ({older}) or move it "
            f"out of {results_dir}"
        )
        found.append(collision(spelled, "agent results folder", fix, consequence))
    return found


def leftover_agent_folders(results_dir: Path, agents: Iterable[str]) -> list[NameCollision]:
    """`agent_folder_spellings` of the folders a run writing `agents`' results leaves alone:
    each folder of `results_dir` spelled apart only by Unicode normalization from one of
    `agents`, beside the one the run writes (`ResultStore.path`)."""
    written = {canonical_name(agent) for agent in agents}
    try:
        entries = sorted(results_dir.iterdir())
    except OSError:  # no results folder yet: nothing left over
        return []
    left = [p for p in entries if p.name not in written and canonical_name(p.name) in written]
    folders = [results_dir / canonical_name(p.name) for p in left if p.is_dir()]
    return agent_folder_spellings(results_dir, [*folders, *(p for p in left if p.is_dir())])


def _spelled(path: Path) -> str:
    """`path` in the canonical spelling: the same file on macOS, which may list a name in
    another spelling than the one it was written under (`toolkit.names`)."""
    return canonical_name(str(path))


def _task_folder(path: Path, task_id: str) -> Path:
    """The task folder of an input's recorded path (the folder itself, named by the task id
    in any spelling, or the answer file in it)."""
    return path if same_name(path.name, task_id) else path.parent


def input_root(input_path: str | Path, task_id: str) -> Path:
    """The folder holding the task folders of an input (a webeval run's `traj/`, an answers
    folder's agent folder), from its path (the answer file, or a malformed trajectory's task
    folder): resolved when the path is absolute; a relative one (recorded by a judgegen before
    results recorded absolute paths) is kept relative, normalized, as its run's working
    directory is unknown. Another root means other answers under the same agent name."""
    folder = _task_folder(Path(input_path), task_id).parent
    return folder.resolve() if folder.is_absolute() else Path(os.path.normpath(folder))


def same_root(recorded: Path, root: Path) -> bool:
    """Whether `recorded` (from a stored result) is the input root (or folder) `root`
    (absolute): equal, or, for a relative record, `root`'s trailing folders (without the `..`
    it may start with)."""
    if recorded.is_absolute():
        return recorded == root
    parts = [part for part in recorded.parts if part not in ("..", ".")]
    return not parts or list(root.parts[-len(parts) :]) == parts


def input_folder(input_path: str | Path, task_id: str) -> Path:
    """The task folder an input came from (the answer file's folder, a trajectory's task
    folder), from its path as `input_root` takes it: resolved when absolute, so a task folder
    reached through a link (`tasks/<id>/samples/<id>` links to `../answers`) is the one it
    links to; a relative one is kept relative, normalized."""
    folder = _task_folder(Path(input_path), task_id)
    return folder.resolve() if folder.is_absolute() else Path(os.path.normpath(folder))


def recorded_roots(root: str | Path, agent: str) -> dict[Path, str]:
    """The input roots the results of `agent` under `root` were computed from, each with one
    task that has a result from it, read from the first readable result of each task folder:
    a task's answers come from one input, and reading every result (trees included) costs
    ~0.1–0.2 s per 450 on each run. Results recording no input are skipped."""
    roots: dict[Path, str] = {}
    agent_dir = Path(root) / agent
    for task_dir in sorted(p for p in agent_dir.glob("*") if p.is_dir()):
        found = _task_input(task_dir)
        if found is not None:
            roots.setdefault(input_root(*found), found[1])
    return roots


def _task_input(task_dir: Path) -> tuple[str, str] | None:
    """(`input_path`, `task_id`) of the first readable result in `task_dir` that records its
    input; None when none does (or the folder is missing)."""
    for path in sorted(task_dir.glob("*.json")):
        try:
            recorded, task = _recorded_input(path)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(recorded, str) and recorded and isinstance(task, str):
            return recorded, task
    return None


_OTHER_INPUT_FIX = (
    "Give this run its own results folder (--results DIR; `RunOptions.results_dir` for a "
    "library run), or remove the other results"
)


def check_input_roots(
    results_dir: str | Path, inputs: Iterable[AnswerInput], *, by_task: bool = False
) -> None:
    """Refuse (`ResultsOfAnotherInput`) a run whose agent's results folder holds results of
    another input root: two webeval runs (or answers folders) whose folders share a name
    would share RESULTS/<agent>, one overwriting the other's results, each summary counting
    the other's. With `by_task` (`RunOptions.inputs_by_task`: each task's inputs come from
    their own folder) only the run's tasks are checked, each against its own folder."""
    results = Path(results_dir)
    if by_task:
        _check_task_folders(results, inputs)
        return
    by_agent: dict[str, set[Path]] = {}
    for item in inputs:
        root = input_root(Path(item.path).absolute(), item.task_id)
        by_agent.setdefault(item.agent_name, set()).add(root)
    for agent, mine in sorted(by_agent.items()):
        for root, task in sorted(recorded_roots(results, agent).items()):
            if not any(same_root(root, ours) for ours in mine):
                ours = ", ".join(str(r) for r in sorted(mine))
                raise ResultsOfAnotherInput(
                    f"{results / agent} holds results of another input with the agent name "
                    f"'{agent}': {root} (e.g. {task}); this run's input is {ours}. "
                    + _OTHER_INPUT_FIX
                )


def _check_task_folders(results: Path, inputs: Iterable[AnswerInput]) -> None:
    """`check_input_roots` task by task: RESULTS/<agent>/<task> must hold results of this
    run's folder for the task (reading one result of each of the run's tasks); the agent's
    other tasks, fed from their own folders, are not this run's to check."""
    folders: dict[tuple[str, str], set[Path]] = {}
    for item in inputs:
        folder = input_folder(Path(item.path).absolute(), item.task_id)
        folders.setdefault((item.agent_name, item.task_id), set()).add(folder)
    for (agent, task), mine in sorted(folders.items()):
        found = _task_input(results / agent / task)
        if found is None:
            continue
        theirs = input_folder(*found)
        if not any(same_root(theirs, ours) for ours in mine):
            ours = ", ".join(str(f) for f in sorted(mine))
            raise ResultsOfAnotherInput(
                f"{results / agent / task} holds results of another input for task '{task}' "
                f"of agent '{agent}': {theirs}; this run's input for it is {ours}. "
                + _OTHER_INPUT_FIX
            )


def _recorded_input(path: Path) -> tuple[Any, Any]:
    """(`input_path`, `task_id`) of the result file at `path`. A result as `ResultStore`
    writes it (indented by 2) has them as top-level lines, `task_id` near its start and
    `input_path` near its end, found there without reading its tree (a trajectory's result,
    one per task folder, can be 100+ KiB: parsing 450 of them took 0.25 s); anything else
    is parsed whole."""
    with open(path, "rb") as handle:
        head = handle.read(_EDGE_BYTES)
        if os.fstat(handle.fileno()).st_size > 2 * _EDGE_BYTES:
            handle.seek(-_EDGE_BYTES, os.SEEK_END)
            tail = handle.read()
        else:  # small enough to search whole: no line is cut between head and tail
            head = tail = head + handle.read()
        task, recorded = _top_level_string(head, "task_id"), _top_level_string(tail, "input_path")
        if task is not None and recorded is not None:
            return recorded, task
        handle.seek(0)
        record = json.loads(handle.read())
    return record["input_path"], record["task_id"]


def _top_level_string(data: bytes, key: str) -> str | None:
    """The string value of top-level `key` in part of a result file indented by 2 (a line
    `  "key": "value",`; deeper keys are indented more, and a JSON string holds no line
    break), or None when that part has no such line."""
    marker = b'\n  "' + key.encode() + b'": "'
    at = data.rfind(marker)
    end = data.find(b"\n", at + 1)
    if at < 0 or end < 0:
        return None
    try:
        value = _DECODER.raw_decode(data[at + len(marker) - 1 : end].decode())[0]
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, str) else None


def read_result(path: Path) -> EvaluationResult | None:
    """Parse one result file; None when it is missing or not a valid result."""
    try:
        return EvaluationResult.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def iter_results(agent_dir: str | Path) -> Iterator[EvaluationResult]:
    """Every readable `<task>/<answer>.json` result under one agent's directory."""
    for _, result in iter_result_files(agent_dir):
        yield result


def iter_result_files(agent_dir: str | Path) -> Iterator[tuple[Path, EvaluationResult]]:
    """Every readable `<task>/<answer>.json` result under one agent's directory, with its
    file (which a copy's result does not name)."""
    for path in _result_paths(Path(agent_dir)):
        result = read_result(path)
        if result is not None:
            yield path, result


def _result_paths(agent_dir: Path) -> list[Path]:
    return sorted(agent_dir.glob("*/*.json"))


WRITER_KEY = "judgegen_results_folder"
"""The key of `gpt_response_text`'s JSON naming the results folder that wrote the score file."""
_SCORE_HEAD = re.compile(rb'\{\s*"score"\s*:\s*[-+0-9.eE]+\s*,\s*"gpt_response_text"\s*:\s*"')
_HEAD_BYTES = 1024
_WRITER_START = "{" + json.dumps(WRITER_KEY) + ": "


@dataclass(frozen=True, slots=True)
class ScoreFiles:
    """The webeval score files one run writes: `<traj dir>/scores/<name>_<task_id>.json`, each
    naming `writer`, the run's results folder (absolute, symlinks resolved: `of`). `earlier`:
    the other names the folder wrote score files under (`toolkit.runner.score_names`); its
    files under them are withdrawn, never written, as they would keep scores it no longer
    holds."""

    writer: Path
    name: str = DEFAULT_SCORE_NAME
    earlier: tuple[str, ...] = ()

    @classmethod
    def of(cls, results_dir: str | Path, name: str = DEFAULT_SCORE_NAME) -> ScoreFiles:
        """The score files of a run writing its results to `results_dir`."""
        return cls(Path(results_dir).resolve(), name)

    def path(self, traj_dir: Path, task_id: str) -> Path:
        return score_file_path(traj_dir, task_id, self.name)

    def write(self, traj_dir: Path, task_id: str, result: EvaluationResult) -> Path:
        return write_score_file(traj_dir, task_id, result, writer=self.writer, name=self.name)

    def remove(self, traj_dir: Path, task_id: str) -> None:
        """Withdraw the trajectory's score file, and its earlier names' files naming `writer`."""
        remove_score_file(traj_dir, task_id, self.name)
        self.withdraw_earlier(traj_dir, task_id)

    def earlier_files(self, traj_dir: Path, task_id: str) -> list[str]:
        """The earlier names under which the trajectory has a score file naming `writer`
        (a file another results folder wrote, or naming none, is not this folder's)."""
        ours = str(self.writer)
        found = []
        for name in self.earlier:
            try:
                writer = score_file_writer(score_file_path(traj_dir, task_id, name), ours)
            except FileNotFoundError:
                continue
            if writer == ours:
                found.append(name)
        return found

    def withdraw_earlier(self, traj_dir: Path, task_id: str) -> list[str]:
        """Remove the trajectory's score files under earlier names that name `writer`; the
        names removed."""
        found = self.earlier_files(traj_dir, task_id)
        for name in found:
            remove_score_file(traj_dir, task_id, name)
        return found

    def agrees(self, traj_dir: Path, task_id: str, result: EvaluationResult) -> bool:
        return score_file_agrees(traj_dir, task_id, result, writer=self.writer, name=self.name)


def score_file_task(traj_dir: str | os.PathLike[str], task_id: str) -> str:
    """The task id as a score file in `traj_dir` names it: as the trajectory's folder spells
    it on disk when that folder is the task's (a webeval reader builds the name from the
    folder it lists, though results use the canonical spelling, `toolkit.names`)."""
    folder = os.path.basename(traj_dir)
    return folder if folder != task_id and same_name(folder, task_id) else task_id


def score_file_path(traj_dir: Path, judge_name: str, name: str = DEFAULT_SCORE_NAME) -> Path:
    """`<traj dir>/scores/<name>_<judge>.json` (the judge's task id spelled as by
    `score_file_task`)."""
    return traj_dir / "scores" / f"{name}_{score_file_task(traj_dir, judge_name)}.json"


def has_score(result: EvaluationResult) -> bool:
    """Whether `result` gives webeval a score: complete, with a final score."""
    return result.status == "complete" and result.final_score is not None


def write_score_file(
    traj_dir: Path,
    judge_name: str,
    result: EvaluationResult,
    *,
    writer: Path,
    name: str = DEFAULT_SCORE_NAME,
) -> Path:
    """Write the webeval score file for a complete result; `gpt_response_text` is its JSON,
    led by `judgegen_results_folder`: `writer`, the results folder writing it. A result
    without a score has no score file (a `ValueError`): it never reads as 0."""
    path = score_file_path(traj_dir, judge_name, name)
    try:
        write_output(path, _score_file_of(result, writer).model_dump_json(indent=2) + "\n")
    except ResultsError as exc:
        raise ResultsError(path, exc.cause, SCORE_FILE) from exc
    return path


SCORE_FILE = "webeval score file"  # how a `ResultsError` names a score file


def remove_score_file(traj_dir: Path, judge_name: str, name: str = DEFAULT_SCORE_NAME) -> None:
    """Delete the score file `name` of `judge_name` if there is one; a failure is a
    `ResultsError` (as a write's is), which stops the run. A file where the `scores` folder
    belongs holds no score file: nothing to delete, so the result is still written first
    (writing the score file then fails, naming it)."""
    path = score_file_path(traj_dir, judge_name, name)
    try:
        path.unlink(missing_ok=True)
    except NotADirectoryError:
        return
    except OSError as exc:
        raise ResultsError(path, exc.strerror or str(exc), SCORE_FILE) from exc


def score_file_agrees(
    traj_dir: Path,
    judge_name: str,
    result: EvaluationResult,
    *,
    writer: Path,
    name: str = DEFAULT_SCORE_NAME,
) -> bool:
    """Whether the score file `name` of `judge_name` is the one `result` gives when `writer`
    writes it: present with its score and, as JSON values, its result and `writer` for a
    complete result with a score, absent otherwise (an unreadable file, or one another
    results folder or an earlier judgegen wrote, never agrees)."""
    path = score_file_path(traj_dir, judge_name, name)
    if not has_score(result):
        return not path.exists()
    try:
        found = ScoreFile.model_validate_json(path.read_bytes())
        full = json.loads(found.gpt_response_text)
    except (OSError, ValidationError, ValueError):
        return False
    expected = _score_file_of(result, writer)
    return found.score == expected.score and full == json.loads(expected.gpt_response_text)


def _score_file_of(result: EvaluationResult, writer: Path) -> ScoreFile:
    if result.final_score is None:
        raise ValueError(
            f"{result.agent_name}/{result.task_id}/{result.answer_name} has no final score"
        )
    full = json.dumps(result.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)
    # the writer first, where `score_file_writer` finds it without parsing the whole result
    payload = f"{_WRITER_START}{json.dumps(str(writer), ensure_ascii=False)}, {full[1:]}"
    return ScoreFile(score=result.final_score, gpt_response_text=payload)


def score_file_writer(path: str | Path, expected: str | None = None) -> str | None:
    """The results folder the score file at `path` records as its writer; None when it
    records none (written before judgegen recorded it, or unreadable). When the writer is
    `expected`, as it usually is, a file as `write_score_file` lays it out is read no
    further than its first KiB and nothing is decoded; any other file is parsed whole.
    Raises FileNotFoundError when there is no file (a file where the `scores` folder belongs
    holds none)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # not open(): its buffered reader costs µs per file
    except FileNotFoundError:
        raise
    except NotADirectoryError as exc:
        raise FileNotFoundError(str(path)) from exc
    except OSError:
        return None
    try:
        head = os.read(fd, _HEAD_BYTES)
        if expected is not None and _names_writer(head, expected):
            return expected
        data = head + _read_rest(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        payload = json.loads(ScoreFile.model_validate_json(data).gpt_response_text)
    except (ValidationError, ValueError):
        return None
    found = payload.get(WRITER_KEY) if isinstance(payload, dict) else None
    return found if isinstance(found, str) and found else None


def _read_rest(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _names_writer(head: bytes, writer: str) -> bool:
    """Whether a score file's first bytes show `gpt_response_text` led by `writer`, as
    `_score_file_of` writes it (the writer first, before anything an answer could make up)."""
    start = _SCORE_HEAD.match(head)
    return start is not None and head.startswith(_encoded_lead(writer), start.end())


@functools.lru_cache(maxsize=8)
def _encoded_lead(writer: str) -> bytes:
    """How `gpt_response_text` begins in a score file `writer` wrote, JSON-encoded twice as
    `write_score_file` encodes it, up to the writer's closing quote (so `/a/b` is not taken
    for `/a/bc`). A file encoded otherwise (another JSON library's escapes) is decoded."""
    lead = f"{_WRITER_START}{json.dumps(writer, ensure_ascii=False)}"
    return json.dumps(lead, ensure_ascii=False)[1:-1].encode("utf-8")


@dataclass
class ScoreWriters:
    """Who wrote the score files a run is about to write, other than the run's results
    folder: other results folders still there and those gone (each with a task whose
    score file names it), and the tasks whose score file names no writer."""

    others: dict[Path, str]
    gone: dict[Path, str]
    unnamed: list[str]


def score_writers(trajectories: Iterable[tuple[Path, str]], scores: ScoreFiles) -> ScoreWriters:
    """The writers of the score files `scores` would write for `trajectories` ((traj dir,
    task id) pairs), reading one file per trajectory."""
    found = ScoreWriters({}, {}, [])
    ours = str(scores.writer)
    for traj_dir, task_id in trajectories:  # paths as strings: pathlib costs µs per file
        spelled = score_file_task(traj_dir, task_id)
        path = os.path.join(traj_dir, "scores", f"{scores.name}_{spelled}.json")
        try:
            writer = score_file_writer(path, ours)
        except FileNotFoundError:
            continue
        if writer is None:
            found.unnamed.append(task_id)
        elif writer != ours:
            folder = Path(writer)
            (found.others if folder.is_dir() else found.gone).setdefault(folder, task_id)
    return found


def free_score_files(
    trajectories: Iterable[tuple[Path, str]], scores: ScoreFiles, where: Path | None = None
) -> ScoreWriters:
    """The writers of the score files `scores` would write for `trajectories` (see
    `score_writers`); `ScoreFilesTaken` when another results folder still there wrote any:
    the runs would overwrite each other's scores, the last one silently winning. `where`
    names the trajectories' folder in the message (default: a trajectory's own folder)."""
    pairs = list(trajectories)
    found = score_writers(pairs, scores)
    if not found.others:
        return found
    others = sorted(found.others.items())
    named = ", ".join(f"{folder} (e.g. for {task})" for folder, task in others)
    them = "it" if len(others) == 1 else "them"
    place = where if where is not None else pairs[0][0]
    raise ScoreFilesTaken(
        f"the score files scores/{scores.name}_<task_id>.json in {place} were written by "
        f"another results folder: {named}; this run's results folder is {scores.writer}. Both "
        "would write the same score files, each run overwriting the other's scores. Give this "
        "run its own score files with --score-name NAME (`RunOptions.score_name`; it writes "
        f"scores/NAME_<task_id>.json), or delete {them} to let this run take the score files "
        "over"
    )


def write_output(path: Path, text: str) -> None:
    """Write one of a run's output files atomically; a failure is a `ResultsError` naming the
    file and the fix, which stops the run (not an `OSError` that reads like a judge's)."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        cause = exc.strerror or str(exc)
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            cause = f"{cause}: {blocking} is a file where a folder belongs"
        raise ResultsError(path, cause) from exc
