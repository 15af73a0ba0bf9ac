"""Running one judge on one answer and turning whatever happened into an `EvalOutcome`.

The one way a judge is run, shared by the in-process executor and the sandbox's job process:
load the judge, run it, keep its partial tree when it fails, and call the outcome `complete`
only for a JSON-serializable, complete summary with no errors.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Awaitable, Callable
from types import CodeType
from typing import Any

from toolkit.backends import JudgingBackend
from toolkit.errors import InfraError, JudgeFailed
from toolkit.evaluator import VERIFY_CANCELLED, PageSource
from toolkit.runner.loader import Judge, load_judge_source, user_import_problem
from toolkit.sandbox.confinement import SandboxViolation
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, error_dict
from toolkit.tools import ToolCaller
from toolkit.util.hashing import sha256_text

_TRACEBACK_CHARS = 8000


def exception_kind(exc: BaseException) -> str:
    """The outcome error kind of an exception that ended an evaluation."""
    if isinstance(exc, InfraError):
        return exc.kind
    if isinstance(exc, SandboxViolation):
        return "sandbox_violation"
    if isinstance(exc, MemoryError):
        return "memory_limit"
    if isinstance(exc, SystemExit):
        return "judge_exit"
    return "judge_exception"


def exception_error(exc: BaseException, stage: str, kind: str | None = None) -> dict[str, Any]:
    """An outcome error entry for `exc` (type, kind, `stage: message`, traceback tail)."""
    if isinstance(exc, MemoryError) and exc.__traceback__ is not None:
        traceback.clear_frames(exc.__traceback__)
    try:
        text = "".join(traceback.format_exception(exc))[-_TRACEBACK_CHARS:]
    except MemoryError:
        text = None
    message = str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError):
        message = "the judge ran out of memory (address-space limit reached)"
    kind = kind or exception_kind(exc)
    return error_dict(type(exc).__name__, kind, f"{stage}: {message}", text)


def _first_unserializable(value: Any, path: str = "summary") -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has a non-string key {key!r}"
            found = _first_unserializable(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_unserializable(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(value, float) and value != value:
        return f"{path} is NaN"
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return f"{path} is a {type(value).__name__}"


def check_summary(summary: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the summary, None) when it is a JSON-serializable dict, else (None, the error)."""
    if summary is None:
        return None, None
    if not isinstance(summary, dict):
        problem = f"the judge returned a {type(summary).__name__}, not a summary dict"
        return None, error_dict("TypeError", "summary_not_serializable", problem)
    try:
        json.dumps(summary, allow_nan=False)
    except (TypeError, ValueError) as exc:
        where = _first_unserializable(summary) or str(exc)
        problem = f"the summary does not serialize to JSON: {where}"
        return None, error_dict(type(exc).__name__, "summary_not_serializable", problem)
    return summary, None


def dedupe(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`errors` without repeated entries, in order."""
    seen: set[str] = set()
    unique = []
    for entry in errors:
        key = json.dumps(entry, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return unique


def with_errors(outcome: EvalOutcome, errors: list[dict[str, Any]]) -> EvalOutcome:
    """`outcome` with `errors` added: incomplete, and its summary marked so, when any."""
    if not errors:
        return outcome
    summary = {**outcome.summary, "status": "incomplete"} if outcome.summary else None
    update = {
        "status": "incomplete",
        "errors": dedupe([*outcome.errors, *errors]),
        "summary": summary,
    }
    return outcome.model_copy(update=update)


def with_node_errors(outcome: EvalOutcome, entries: list[dict[str, Any]]) -> EvalOutcome:
    """`outcome` with node-level `entries` (`Evaluator.errors` shape) added to its summary's
    errors, where the judge's evaluator would have put them: incomplete when any. Without a
    summary (the judge failed) they join the outcome's own errors."""
    if not entries or outcome.summary is None:
        return with_errors(outcome, entries)
    held = outcome.summary.get("errors")
    held = held if isinstance(held, list) else []
    summary = {**outcome.summary, "status": "incomplete", "errors": [*held, *entries]}
    return outcome.model_copy(update={"status": "incomplete", "summary": summary})


def with_violations(outcome: EvalOutcome, violations: list[str]) -> EvalOutcome:
    """`outcome` incomplete with a `sandbox_violation` error for each of `violations` it does
    not already hold as one (an outcome claiming complete holds none, whatever its errors)."""
    errors = [] if outcome.status == "complete" else outcome.errors
    held = [
        str(entry.get("message")) for entry in errors if entry.get("kind") == "sandbox_violation"
    ]
    missing = [
        error_dict("SandboxViolation", "sandbox_violation", violation)
        for violation in violations
        if not any(violation in message for message in held)
    ]
    return with_errors(outcome, missing)


def cancelled_verifications(summary: dict[str, Any], timed_out: bool) -> list[dict[str, Any]]:
    """The verifications `summary` says were cancelled before their verdict, taken out of its
    errors (the services' failures the judge met) to be the outcome's: the judge's error, not
    an outage. None when the judge ran out of time: its deadline cancelled them, as the
    `timeout` error says (each leaf still says so in the tree)."""
    entries = summary.get("errors")
    if not isinstance(entries, list):
        return []
    cancelled = [e for e in entries if isinstance(e, dict) and e.get("kind") == VERIFY_CANCELLED]
    if not cancelled:
        return []
    summary["errors"] = [entry for entry in entries if not any(entry is c for c in cancelled)]
    if timed_out:
        return []
    return [
        error_dict("CancelledError", VERIFY_CANCELLED, str(entry.get("message", "")))
        for entry in cancelled
    ]


VERIFY_UNFINISHED = "verify_unfinished"


def unfinished_verifications(summary: dict[str, Any], timed_out: bool) -> list[dict[str, Any]]:
    """The error of the verifications `summary` lists as started and still without a verdict
    (`ev.verify` left running, e.g. `asyncio.ensure_future` never awaited) when the judge
    returned: their leaves got no verdict, so the judge's error, never a complete result
    scoring them as failed. None when the judge ran out of time (`timeout` says why)."""
    entries = summary.get("verifications")
    if timed_out or not isinstance(entries, list):
        return []
    running = sum(1 for e in entries if isinstance(e, dict) and "passed" not in e)
    if not running:
        return []
    some = "a verification was" if running == 1 else f"{running} verifications were"
    message = (
        f"{some} still running when the judge returned, so no verdict reached their leaves: "
        "await every ev.verify (or gather them) before returning"
    )
    return [error_dict("UnfinishedVerification", VERIFY_UNFINISHED, message)]


def settles_partners(outcome: EvalOutcome | None) -> bool:
    """Whether the wave partners' checks a sandboxed job's verifications left running
    (`toolkit.sources`) are waited for, their failures added to its result: only when its
    judge returned with every verification it started ended (its only errors, if any, the
    verifications it cancelled), as `Evaluator.settle_partners` decides in process. A judge
    that raised or left a verification running is incomplete, its own error, and will be
    redone: waiting would cost time, and calls, for checks whose verdict no one uses, so
    they are cancelled, in process and sandboxed alike, their calls accounted as any call
    an evaluation stopped waiting for (`toolkit.llm.abandoned`)."""
    if outcome is None or outcome.summary is None:
        return False
    return all(entry.get("kind") == VERIFY_CANCELLED for entry in outcome.errors)


def load_bound_judge(job: EvalJob, code: CodeType | None = None) -> Judge:
    """Load the judge from the job's own code, refusing code that does not match its hash;
    `code` is that code compiled by the parent (`loader.compile_judge`), when it sent it."""
    if job.judge_source is None or job.judge_sha256 != sha256_text(job.judge_source):
        raise ValueError(f"the code sent for {job.judge_path} does not match its sha256")
    return load_judge_source(job.judge_source.encode("utf-8"), job.judge_path, code)


class UserImports:
    """Refuses a judge that imports a module of the user's (`loader.user_import_problem`),
    in the parent, before any job: in process and sandboxed alike, as an incomplete
    `judge_load` outcome, as for a judge that cannot be read. Each judge revision is read
    once (by digest and path), so an evaluation pays a lookup."""

    def __init__(self) -> None:
        self._problems: dict[tuple[str | None, str], str | None] = {}

    def refusal(self, job: EvalJob) -> EvalOutcome | None:
        """The outcome of bound `job` when its judge is refused, else None."""
        key = (job.judge_sha256, job.judge_path)
        if key not in self._problems:
            self._problems[key] = user_import_problem(job.judge_source or "", job.judge_path)
        problem = self._problems[key]
        if problem is None:
            return None
        return EvalOutcome.failure(job, "judge_load", problem, error_type="JudgeImportError")


async def evaluate_job(
    load: Callable[[], Awaitable[Judge]],
    job: EvalJob,
    *,
    backend: JudgingBackend,
    pages: PageSource | None,
    tools: ToolCaller | None,
    timeout_s: float | None = None,
    noted_kind: Callable[[BaseException], str | None] | None = None,
) -> EvalOutcome:
    """Load the judge with `load` (awaited) and run it on `job`; never raises for the judge's
    failure. `noted_kind` names the service failure an exception that ended the judge was
    (in process, where the judge gets the service's own exception), else it is the judge's."""
    started = time.monotonic()
    errors: list[dict[str, Any]] = []
    summary: Any = None
    timed_out = False
    task_id = job.task_id
    try:
        judge = await load()
    except Exception as exc:
        errors.append(exception_error(exc, "loading the judge failed", "judge_load"))
    else:
        task_id = task_id or judge.task_id
        try:
            summary, _ = await judge.run(
                backend=backend,
                answer=job.answer,
                pages=pages,
                agent_name=job.agent_name,
                answer_name=job.answer_name,
                tools=tools,
                timeout_s=timeout_s,
            )
        except JudgeFailed as failed:
            timed_out = failed.timed_out
            noted = noted_kind(failed.cause) if noted_kind is not None else None
            kind = "timeout" if failed.timed_out else noted
            stage = "the judge ran out of time" if failed.timed_out else "the judge raised"
            errors.append(exception_error(failed.cause, stage, kind))
            if failed.partial_error is not None:
                errors.append(
                    exception_error(failed.partial_error, "building the partial summary failed")
                )
            summary = failed.partial
    summary, problem = check_summary(summary)
    if problem:
        errors.append(problem)
    if summary is not None:
        errors.extend(cancelled_verifications(summary, timed_out))
        errors.extend(unfinished_verifications(summary, timed_out))
    complete = summary is not None and not errors and summary.get("status") == "complete"
    if summary is not None and not complete:
        summary["status"] = "incomplete"
    return EvalOutcome(
        status="complete" if complete else "incomplete",
        task_id=task_id,
        judge_sha256=job.judge_sha256,
        agent_name=job.agent_name,
        answer_name=job.answer_name,
        summary=summary,
        errors=dedupe(errors),
        duration_s=round(time.monotonic() - started, 6),
    )
