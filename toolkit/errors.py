"""Every exception judgegen raises, in one place. Each survives pickling (as a process pool or
a Ray cluster sends it), with its attributes: those built from more than a message say how
(`__reduce__`).

JudgegenError
 ├── SpecError        a user-written input is wrong; names the file, the field and the fix
 ├── TreeError        a judge built an invalid rubric tree (also a ValueError)
 ├── TemplateError    a judge's extraction template cannot be filled (also a TypeError)
 ├── InfraError       an infrastructure failure: the node becomes `error`, the evaluation
 │    │               `incomplete`; never scored as a wrong answer
 │    ├── LLMError    the LLM call still failed after retries / re-asks (keeps usage)
 │    ├── ReplayMiss  the replay provider has no recording for a request
 │    ├── CacheError  the response cache cannot be read or written (stops the command: exit 3)
 │    ├── PageStoreError  the page store cannot be read or written (stops the command: exit 3)
 │    └── LedgerError  the usage ledger file cannot be written (stops the command: exit 3)
 ├── BudgetExceeded   the dollar cap was reached; no new calls are made (also an InfraError)
 ├── AnswersLayoutError  an --answers folder cannot be read as <agent>/<task_id>/<answer>.md
 ├── NameCollision    two entries of one folder whose names differ only in Unicode normalization
 ├── ResultsBusy      another run holds the results folder's lock (and we were told not to wait)
 ├── ScoreFilesTaken  the score files a run would write are another results folder's
 ├── ResultsOfAnotherInput  RESULTS/<agent> holds results of another input with that agent name
 └── JudgeFailed      a judge raised or ran out of time; carries the partial tree it built
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class JudgegenError(Exception):
    """Base of every error judgegen raises on purpose."""


class AnswersLayoutError(JudgegenError):
    """An answers folder is not laid out as answers; the message says how to lay them out."""


class NameCollision(JudgegenError):
    """Two entries of one folder (agent or task folders, answer, judge or review files) whose
    names differ only in Unicode normalization (NFC `café`, NFD `café`): judgegen takes them as
    one name (`toolkit.names`), so it refuses them; the message names both and the fix."""


class ResultsBusy(JudgegenError):
    """Another run is writing the results folder and the caller chose not to wait."""


class ScoreFilesTaken(JudgegenError):
    """The webeval score files a run would write were written by another results folder that
    is still there; the message names both folders and the fix (`--score-name`)."""


class ResultsOfAnotherInput(JudgegenError):
    """An agent's results folder (`RESULTS/<agent>`) holds results computed from another input
    with the same agent name (two webeval runs with one run id, two answers folders with one
    agent folder name): the runs would overwrite each other's results, each summary counting
    the other's. The message names both inputs and the fix (another results folder)."""


class SpecError(JudgegenError):
    """A user-written file (task spec, checklist, label, config) is invalid."""

    def __init__(self, file: str, field: str, problem: str, fix: str) -> None:
        self.file, self.field, self.problem, self.fix = file, field, problem, fix
        super().__init__(f"{file}: field '{field}': {problem}. Fix: {fix}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.file, self.field, self.problem, self.fix), self.__dict__)


class TreeError(JudgegenError, ValueError):
    """A rubric tree rule was broken while building it (e.g. non-critical child of a critical node)."""


class TemplateError(JudgegenError, TypeError):
    """A judge's extraction template has a field structured output cannot fill (a map: every
    object is closed, so it could only come back `{}`); the message names the field and the fix."""


class InfraError(JudgegenError):
    """An infrastructure failure that must mark a node `error`, never a failed verdict."""

    def __init__(self, message: str, *, kind: str = "infra", usage: Any = None) -> None:
        self.kind = kind
        self.usage = usage
        super().__init__(message)


class LLMError(InfraError):
    """An LLM request failed for good (after the SDK's retries and our bounded re-asks).

    A stop's message (an outage, a refused key, endpoint, model or parameter) ends with the
    fix: what to check, alike for every command that calls the LLM, naming only settings they
    all have; what a rerun then keeps and redoes is each command's to say."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "llm",
        usage: Any = None,
        attempts: int = 1,
        body: str | None = None,
    ) -> None:
        self.attempts = attempts
        self.body = body
        self.cost_usd = 0.0
        """What the failed call was billed, once the budget has priced it."""
        self.answer: object | None = None
        """What the server answered, for an HTTP error (`toolkit.llm.server_answer`)."""
        super().__init__(message, kind=kind, usage=usage)

    @classmethod
    def standing_for(cls, message: str, kind: str, cause: LLMError | None) -> LLMError:
        """A stop (`kind`: an outage, a rejection) raised instead of `cause`, the failed call
        it stands for, carrying that call's usage, attempts and cost so the ledger and budget
        still count them; none when the call was refused before reaching the provider."""
        error = cls(
            message,
            kind=kind,
            usage=cause.usage if cause is not None else None,
            attempts=cause.attempts if cause is not None else 0,
        )
        if cause is not None:
            error.cost_usd = cause.cost_usd
        return error


class ReplayMiss(InfraError):
    """The replay provider was asked for a response it never recorded."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="replay_miss")


DAMAGED_CACHE_FIX = (
    "move it aside or delete it (a new cache starts empty), or pass --cache-path elsewhere or "
    "--cache-mode off"
)
CACHE_ACCESS_FIX = (
    "check its disk (free space, permissions) and that no other process holds it locked, "
    "then rerun; or pass --cache-path elsewhere or --cache-mode off"
)


class CacheError(InfraError):
    """The response cache cannot be used: its file is not SQLite, truncated or of a newer
    format (`DAMAGED_CACHE_FIX`), or reading or writing it failed: a disk error, a full disk, a
    lock held too long (`CACHE_ACCESS_FIX`)."""

    def __init__(self, path: object, cause: str, fix: str = DAMAGED_CACHE_FIX) -> None:
        self.path = path
        self.cause = cause
        self.fix = fix
        self.usage: object | None = None
        """The usage of an answer that was paid for but could not be stored (for the ledger)."""
        self.cost_usd = 0.0
        """What that answer was billed, once the ledger has priced it (for the usage meter)."""
        super().__init__(f"response cache {path} is unusable: {cause}. Fix: {fix}", kind="cache")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cause, self.fix), self.__dict__)

    def for_caller(self, usage: object | None) -> CacheError:
        """This failure as one caller of the failed store raises it: a copy of its own,
        carrying the `usage` that caller paid (one store's error reaches every caller whose
        answer was in it; none may overwrite another's usage, or count another's)."""
        copy = CacheError(self.path, self.cause, self.fix)
        copy.usage = usage
        return copy


DAMAGED_PAGES_FIX = (
    "capture the pages again into a new store (`judgegen cache-pages --answers DIR --store "
    "NEW`) and pass --pages NEW"
)
NEWER_PAGES_FIX = (
    "upgrade judgegen (`pip install -U judgegen`) to the version that wrote the store, or "
    "capture the pages again with this one into a new store (`judgegen cache-pages --answers "
    "DIR --store NEW`) and pass --pages NEW"
)
PAGES_ACCESS_FIX = (
    "if `judgegen cache-pages` is writing this store, let it finish; otherwise check its disk "
    "(free space, permissions); then rerun"
)


class PageStoreError(InfraError):
    """The page store cannot be used: its file is damaged (`DAMAGED_PAGES_FIX`), or reading
    or writing it failed (`PAGES_ACCESS_FIX`). Every evaluation citing a page would fail the
    same way, so a run stops at the first (exit 3) instead of paying for the rest."""

    def __init__(self, path: object, cause: str, fix: str = DAMAGED_PAGES_FIX) -> None:
        self.path = path
        self.cause = cause
        self.fix = fix
        super().__init__(f"page store {path} is unusable: {cause}. Fix: {fix}", kind="page_store")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cause, self.fix), self.__dict__)


class LedgerError(InfraError):
    """The usage ledger's file cannot be written (a full disk, a read-only folder): the spend
    of the calls that follow could not be accounted for, so a command stops (exit 3)."""

    def __init__(self, path: object, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(
            f"usage ledger {path} cannot be written: {cause}. Fix: free space on its disk or "
            "make its folder writable, or point JUDGEGEN_LEDGER_PATH (or `ledger_path` under "
            "[llm] in judgegen.toml) at a file elsewhere",
            kind="ledger",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cause), self.__dict__)


class ResultsError(InfraError):
    """A run's output file (a result, a score file, an agent's summary) cannot be written: a
    full disk, a read-only folder, a file where a folder belongs. Every later result would
    fail the same way, so a run stops (exit 3) instead of paying for evaluations it cannot
    keep."""

    def __init__(self, path: object, cause: str, what: str = "result file") -> None:
        self.path = path
        self.cause = cause
        self.what = what
        elsewhere = ", or pass --results DIR" if what == "result file" else ""
        super().__init__(
            f"{what} {path} cannot be written: {cause}. Fix: free space on its disk, make "
            f"its folder writable (or move the file away){elsewhere}",
            kind="results",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cause, self.what), self.__dict__)


class BudgetExceeded(InfraError):
    """The run's dollar budget is spent; the request was not sent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="budget")


class CodeChanged(InfraError):
    """A file judgegen's code identity is hashed over changed during the run: an evaluation
    now would run code other than the one its result's fingerprint names. Stops the run."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="code_changed")


class JudgeFailed(JudgegenError):
    """A judge raised (or overran its time): the original exception and the partial summary.

    `partial` is the summary of the tree the judge had built (native judges), or None.
    `timed_out` is True when the judge was stopped by its deadline rather than raising.
    """

    def __init__(
        self,
        cause: BaseException,
        partial: dict[str, Any] | None,
        *,
        timed_out: bool = False,
        partial_error: BaseException | None = None,
    ) -> None:
        self.cause = cause
        self.partial = partial
        self.timed_out = timed_out
        self.partial_error = partial_error
        super().__init__(f"{type(cause).__name__}: {cause}")


INFRA_KINDS = frozenset(
    {
        "llm",
        "backend",
        "replay_miss",
        "budget",
        "infra",
        "tool",
        "sandbox",
        "protocol",
        "channel",
        "cache",
        "page_store",
        "page_capture",
        "cluster",
        "ledger",
        "results",
        "code_changed",
    }
)
"""Kinds of the infrastructure failures a recorded error may carry without its type
(`backend`: any exception a runner service raised to a judge, a sandbox's broker and a
cluster's gateway name so, and the runner's meter too)."""


def is_infra_failure(error: Mapping[str, Any]) -> bool:
    """Whether a recorded error (an evaluation keeps its `type` name and `kind`) is an
    infrastructure failure, not the judge's: an `InfraError`, of any subclass — walked when
    asked, so a subclass added later is never missed — or one of `INFRA_KINDS`."""
    if error.get("kind") in INFRA_KINDS:
        return True
    found: list[type[InfraError]] = [InfraError]
    while found:
        cls = found.pop()
        if cls.__name__ == error.get("type"):
            return True
        found += cls.__subclasses__()
    return False
