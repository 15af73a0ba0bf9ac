"""Usage metering: every LLM request and backend call is charged to the evaluation that made it.

The scheduler sets `current_meter` around each evaluation; the metered wrappers charge the
current meter and the run's meter, so per-result usage and the run total come from one count.
The meter also keeps the infrastructure errors the runner's services raised to the judge
(`note_infra`): what the runner saw itself, whatever the judge then did with them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from toolkit.backends import ExtractRequest, JudgingBackend, Verdict, VerifyRequest
from toolkit.errors import CacheError, InfraError, LLMError, is_infra_failure
from toolkit.llm.abandoned import AbandonedSpend
from toolkit.llm.ledger import ABANDONED
from toolkit.llm.models import Usage
from toolkit.llm.origin import origin_clauses
from toolkit.runner.results import UsageTotals
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, error_dict
from toolkit.util.redact import redact
from toolkit.util.scoped import scoped


@dataclass
class Meter:
    """Usage charged to one evaluation, and the cited pages its backend was sent clipped."""

    usage: UsageTotals = field(default_factory=UsageTotals)
    clipped: set[str] = field(default_factory=set)
    """Cited pages longer than the backend's page limit (`max_page_chars`) sent with a request:
    the model saw only their beginning. A page a judge only read itself is not one."""
    infra: list[dict[str, Any]] = field(default_factory=list)
    """Infrastructure errors of this evaluation seen by the runner itself: raised to its judge
    by the backend, the page source or a tool, or found around it (a failed cache commit,
    missing sandbox guards). A judge that catches one, or rewrites its outcome, cannot make
    the evaluation look complete; and only these can stop a run (a judge raising
    `BudgetExceeded` itself cannot)."""
    tool_calls: int = 0
    """Tool calls (e.g. maps) the judge made: a result that made any depends on the tool
    provider (`Fingerprint.tools`)."""
    notes: list[str] = field(default_factory=list)
    """What the runner has to tell about how this evaluation ran, for its result's notes
    (e.g. what an attempt lost with its Ray node spent, counted in `usage`)."""
    ended: bool = False
    """The evaluation is over (`end_calls`): a task its judge left behind may call nothing more."""
    calling: dict[asyncio.Task[Any], int] = field(default_factory=dict, repr=False)
    """Tasks in a backend or tool call of this evaluation right now (how many calls deep)."""
    _noted: list[tuple[BaseException, str]] = field(default_factory=list, repr=False)

    def note(self, error: BaseException, kind: str) -> None:
        """Keep `error` as a failure of `kind` (once, however many wrappers it passes through
        on its way out)."""
        if self.kind_noted(error) is not None:
            return
        self._noted.append((error, kind))
        message = redact(str(error) or type(error).__name__)[:2000]
        self.infra.append(error_dict(type(error).__name__, kind, message))

    def kind_noted(self, error: BaseException) -> str | None:
        """The kind `error` itself was noted as (`note`), None when it was not."""
        return next((kind for seen, kind in self._noted if seen is error), None)


def note_infra(error: BaseException | dict[str, Any], service: str | None = None) -> None:
    """Note `error` in the current evaluation's meter: an infrastructure error as it leaves
    the service a judge called, or an error entry the runner made itself (`error_dict`).
    With `service` (the kind to note it under: `backend`, `tool`), any exception that service
    raised is one, whatever its type: a `--backend`, page source or tool provider whose own
    call failed (a `ConnectionError`, say) failed the evaluation, not the answer, as a
    sandbox's broker and a cluster's gateway report it. Without, other exceptions are
    ignored."""
    meter = current_meter.get()
    if meter is None:
        return
    if isinstance(error, dict):
        meter.infra.append(error)
    elif isinstance(error, InfraError):
        meter.note(error, error.kind)
    elif service is not None and isinstance(error, Exception):
        meter.note(error, service)


current_meter: ContextVar[Meter | None] = ContextVar("judgegen_meter", default=None)


def noted_kind(error: BaseException) -> str | None:
    """The kind the current evaluation's meter noted `error` as, when a service raised it: an
    outage that escaped the judge is that service's failure, not the judge's exception (as a
    sandboxed judge, which gets it as an `InfraError` of that kind, reports it)."""
    meter = current_meter.get()
    return None if meter is None else meter.kind_noted(error)


def unreported(errors: list[dict[str, Any]], outcome: EvalOutcome) -> list[dict[str, Any]]:
    """The infrastructure errors the runner saw (`Meter.infra`) that `outcome` does not
    report as such: each makes the evaluation incomplete whatever the judge did with it (caught
    it and went on, or left it out of what it sent), and one the judge's tree recorded as an
    error of its own (`kind` exception: a `ConnectionError` its extraction raised, say) is
    still reported as the infrastructure failure it is."""
    reported = [*((outcome.summary or {}).get("errors") or []), *outcome.errors]
    texts = [
        str(entry.get("message", ""))
        for entry in reported
        if isinstance(entry, dict) and is_infra_failure(entry)
    ]
    return [
        error
        for error in errors
        if not error.get("message") or not any(error["message"] in text for text in texts)
    ]


async def metered_evaluation(
    evaluate: Callable[[EvalJob], Awaitable[EvalOutcome]], job: EvalJob
) -> EvalOutcome:
    """`evaluate(job)` under a meter of its own, for a caller running judges outside
    `judgegen run` (review runs, generation's debug runs) with a `MeteredBackend`: a failure
    the backend or the page source raised makes the outcome incomplete even when the judge
    caught it, as in a run, so an outage never reads as the judge's verdict."""
    from toolkit.runner.judging import with_errors

    meter = Meter()
    with scoped(current_meter, meter):
        outcome = await evaluate(job)
    return with_errors(outcome, unreported(meter.infra, outcome))


@contextmanager
def judge_call() -> Iterator[None]:
    """Around a backend or tool call a judge makes: the calling task is known to the
    evaluation's meter while the call runs, and a task calling once its evaluation is over (one
    its judge started and left running) is cancelled instead: its result is written, and a
    sandboxed judge's leftover tasks end with its process."""
    meter = current_meter.get()
    task = asyncio.current_task()
    if meter is None or task is None:
        yield
        return
    if meter.ended:
        raise asyncio.CancelledError("its evaluation is over")
    meter.calling[task] = meter.calling.get(task, 0) + 1
    try:
        yield
    finally:
        depth = meter.calling.pop(task) - 1
        if depth:
            meter.calling[task] = depth


async def end_calls(meter: Meter, wait_s: float) -> None:
    """End the evaluation metered by `meter`: cancel the tasks still in one of its calls (its
    judge returned or stopped and left them running) and wait up to `wait_s` for them to go, so
    the LLM calls they leave are tracked as abandoned and charged like a timed-out judge's.
    Noted in the result when there were any."""
    meter.ended = True
    left = [task for task in meter.calling if not task.done()]
    if not left:
        return
    for task in left:
        task.cancel()
    await asyncio.wait(left, timeout=max(0.0, wait_s))
    meter.notes.append(
        f"its judge left {len(left)} backend or tool call(s) running in tasks it started when "
        "it ended: they were cancelled (a sandboxed judge's end with its process), and what "
        "their LLM calls cost is counted as for any call left running"
    )


def charge_abandoned(meter: Meter, spend: AbandonedSpend, waited_s: float) -> None:
    """Charge the LLM calls an evaluation left running when it ended (`spend`, waited for up
    to `waited_s`) to its meter, as the ledger counts them, with a note saying how many there
    were and whether their cost is counted: a call that ended is charged its ledger figures;
    one cancelled (cache off, or the command ended), or still running after the wait, counts
    as a call whose cost is not known (`UsageTotals.unknown_cost_calls`). Calls of other
    evaluations it was waiting for (`AbandonedSpend.followed`) are their makers' to pay: only
    noted."""
    if spend.followed:
        meter.notes.append(followed_note(spend.followed))
    if not spend.calls:
        return
    counts = meter.usage.__dict__  # plain fields: skip pydantic's per-assignment hook
    counts["llm_calls"] += spend.calls
    counts["unknown_cost_calls"] += spend.running
    for row in spend.rows:
        counts["unknown_cost_calls"] += row.error == ABANDONED
        counts["cache_hits"] += int(row.cache_hit)
        counts["cost_usd"] += row.cost_usd
        if row.cache_hit and row.origin is not None:
            meter.usage.note_hit_origin(row.origin)
        if row.answered_by:
            meter.usage.note_answered(row.model, row.answered_by)
        if not row.cache_hit:
            for name in _TOKEN_FIELDS:
                counts[name] += getattr(row, name)
    meter.notes.append(abandoned_note(spend, waited_s))


def abandoned_note(spend: AbandonedSpend, waited_s: float) -> str:
    """A result's note on the LLM calls its evaluation left running when it ended."""
    ended = [row for row in spend.rows if row.error != ABANDONED]
    cancelled = len(spend.rows) - len(ended)
    parts = []
    if ended:
        cost = sum(row.cost_usd for row in ended)
        tokens_in = sum(r.input_tokens + r.cache_read_tokens + r.cache_write_tokens for r in ended)
        tokens_out = sum(row.output_tokens for row in ended)
        parts.append(
            f"{len(ended)} went on and ended ({tokens_in} input / {tokens_out} output tokens, "
            f"${cost:.6f}): counted in this result's usage"
        )
    if cancelled:
        parts.append(
            f"{cancelled} were cancelled: counted as calls in this result's usage, their cost "
            "is not known (the provider may bill a cancelled request; ledger rows `abandoned`)"
        )
    if spend.running:
        parts.append(
            f"{spend.running} were still running {waited_s:g} s after it ended, when this "
            "result was written: counted as calls in this result's usage, their cost is not "
            "known here (the LLM ledger gets the row of one that ends, a row `abandoned`, its "
            "cost not known, if the command's end cancels it first; one still running when the "
            "LLM client closes, its provider ignoring the cancellation, may get no row: the "
            "`LLM:` line and `llm.unrecorded_calls` of `run --json` count those)"
        )
    return (
        f"{spend.calls} LLM call(s) were still running when this evaluation ended (its judge "
        f"timed out, failed or its process ended): {'; '.join(parts)}"
    )


def origin_notes(usage: UsageTotals) -> list[str]:
    """A result's note naming its cache hits whose stored answers were not recorded from a
    live provider call (`UsageTotals.cache_hits_by_origin`), if it had any."""
    not_live = origin_clauses(usage.cache_hits_by_origin)
    if not_live is None:
        return []
    return [f"of the LLM answers this evaluation was served from the cache, {not_live}"]


def followed_note(calls: int) -> str:
    """A result's note on the LLM calls of other evaluations its evaluation was waiting for
    when it ended (identical requests share one call, which its maker pays for)."""
    return (
        f"when this evaluation ended (its judge timed out, failed or its process ended), it "
        f"was waiting for {calls} LLM call(s) another evaluation had made: identical requests "
        "share one call, charged to the evaluation that made it (its result's usage counts "
        "it), not to this one"
    )


class MeteredBackend:
    """Wraps a judging backend and charges each request to the current evaluation's meter."""

    def __init__(self, inner: JudgingBackend, run_meter: Meter | None = None) -> None:
        self.inner = inner
        self.run_meter = run_meter or Meter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _charge(self, kind: str) -> None:
        for meter in _meters(current_meter.get(), self.run_meter):
            counts = meter.usage.__dict__  # plain fields: skip pydantic's per-assignment hook
            counts["backend_calls"] += 1
            counts["extract_calls" if kind == "extract" else "verify_calls"] += 1

    def _note_clipped(self, url: str | None, text: str | None) -> None:
        """Note `url` when its `text`, sent to the backend, is longer than its page limit."""
        limit = getattr(self.inner, "max_page_chars", None)
        if url and isinstance(limit, int) and isinstance(text, str) and len(text) > limit:
            for meter in _meters(current_meter.get(), self.run_meter):
                meter.clipped.add(url)

    async def extract(self, request: ExtractRequest) -> Any:
        with judge_call():
            self._charge("extract")
            self._note_clipped(request.source, request.source_text)
            try:
                return await self.inner.extract(request)
            except Exception as exc:
                note_infra(exc, "backend")
                raise

    async def verify(self, request: VerifyRequest) -> Verdict:
        with judge_call():
            self._charge("verify")
            if request.sources and request.page_texts:
                self._note_clipped(request.sources[0], request.page_texts[0])
            try:
                return await self.inner.verify(request)
            except Exception as exc:
                note_infra(exc, "backend")
                raise


class MeteredClient:
    """Wraps an LLM client (`complete`) and charges calls, tokens and cost to the meter as the
    LLM ledger counts them: failed calls too, tokens of paid calls only (hits cost nothing);
    and notes the model each answer names (`UsageTotals.answered_by`; not a hit's of unknown
    origin, which no provider named) and where each hit's answer came from."""

    def __init__(self, inner: Any, run_meter: Meter | None = None) -> None:
        self.inner = inner
        self.run_meter = run_meter or Meter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: Any) -> Any:
        try:
            response = await self.inner.complete(request)
        except (LLMError, CacheError) as exc:  # the ledger counts both (e.g. an unstored answer)
            self._charge(exc.usage if isinstance(exc.usage, Usage) else Usage(), exc.cost_usd)
            raise
        hit = bool(getattr(response, "cache_hit", False))
        origin = getattr(response, "origin", None) if hit else None
        answered = getattr(response, "model", "")
        if origin is not None and not origin.names_its_model:
            answered = ""
        asked = (request.model, answered) if answered else None
        source = None if origin is None else origin.source
        usage = Usage() if hit else response.usage
        self._charge(usage, response.cost_usd, hit=hit, asked=asked, source=source)
        return response

    def _charge(
        self,
        usage: Usage,
        cost_usd: float,
        hit: bool = False,
        asked: tuple[str, str] | None = None,
        source: str | None = None,
    ) -> None:
        """Charge one call; `asked`: the model it asked for and the one that answered;
        `source`: where a hit's stored answer came from."""
        tokens = usage.__dict__
        for meter in _meters(current_meter.get(), self.run_meter):
            counts = meter.usage.__dict__  # plain fields: skip pydantic's per-assignment hook
            counts["llm_calls"] += 1
            counts["cache_hits"] += int(hit)
            for name in _TOKEN_FIELDS:
                counts[name] += tokens[name]
            counts["cost_usd"] += cost_usd
            if asked is not None:
                meter.usage.note_answered(*asked)
            if source is not None:
                meter.usage.note_hit_origin(source)


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _meters(current: Meter | None, run: Meter) -> list[Meter]:
    """The meters a call is charged to: the evaluation's and the run's (once if the same)."""
    return [run] if current is None or current is run else [current, run]
