"""What a run did: the in-memory report and its versioned machine-readable record (`--json`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from toolkit.llm.usage import UsageSummary
from toolkit.runner.metrics import SkippedJudge, Summary
from toolkit.runner.results import EarlierAttempts, ResultHead, UsageTotals
from toolkit.util.deferred import DEFERRED

RUN_RECORD_VERSION = 10
"""2: `llm`, the command's own LLM totals (abandoned calls included). 3: `usage` counts the
LLM calls a judge left running when it stopped, as `llm` does (each result is charged them),
those of unknown cost in `usage.unknown_cost_calls`; `earlier_attempts`, what the incomplete
attempts the results written redid cost (not in `usage`). 4: `decided`, the results written
without running a judge (before, a first run's counts left them out). 5: `usage.answered_by`,
the models that answered the run's LLM calls, and each summary's `answered_by` and
`mixed_snapshots` (summary version 7). 6: `llm.unrecorded_calls`, the LLM calls the ledger has
no row of (still running when the LLM client closed). 7: `llm.cached_by_origin` and
`usage.cache_hits_by_origin`, where the cache hits' stored answers came from (result version 4).
8: `llm.saved_usd` counts only the cache hits of answers recorded live (ledger version 4;
records of earlier versions counted every hit's, fixtures too). 9: each summary's
`unanswered_judges` (summary version 8). 10: each summary's `not_counted` entries of outdated
results name what changed (summary version 9)."""


@dataclass(repr=False)
class RunReport:
    """What a run did: the head of every result it holds (the results themselves are in
    their files), what it redid, skipped and why it stopped."""

    results: list[ResultHead] = field(default_factory=list)
    evaluated: int = 0
    decided: int = 0
    """Results written without running a judge: an excluded input, an empty answer."""
    reused: int = 0
    not_started: int = 0
    skipped_judges: list[SkippedJudge] = field(default_factory=list)
    skipped_answers: int = 0
    stopped: str | None = None
    summaries: dict[str, Summary] = field(default_factory=dict)
    input_errors: list[ResultHead] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)
    earlier_attempts: EarlierAttempts = field(default_factory=EarlierAttempts)
    """What the earlier incomplete attempts of the results this run wrote cost (carried in
    them): spent by earlier runs, so not in `usage`."""
    outdated: list[ResultRef] = field(default_factory=list)
    """Result files of this run's answers it stopped before redoing, which no longer stand
    for their inputs, each with the reason naming what changed: the summaries leave them out
    and list them under it (`freshness.outdated_results`)."""
    withdrawn_scores: dict[str, int] = field(default_factory=dict)
    """Score files the run's results folder had written under other score names than the
    run's, which it withdrew (they would keep scores it no longer holds): how many, by name
    (`toolkit.runner.score_names`)."""

    def __repr__(self) -> str:
        """A one-line summary: asyncio prints the result of a run's main task (its SIGINT
        handler check at the end of `asyncio.run` does), which need not list every head."""
        return (
            f"RunReport({len(self.results)} results, evaluated={self.evaluated}, "
            f"decided={self.decided}, reused={self.reused}, stopped={self.stopped!r})"
        )

    @property
    def incomplete(self) -> list[ResultHead]:
        """Results of this run that are incomplete."""
        return [r for r in self.results if r.status == "incomplete"]

    @property
    def failure(self) -> str | None:
        """Why a run with nothing incomplete still failed: it judged nothing, or judges were
        held back for approval reasons (a CI job must not read either as success)."""
        held = [s.task_id for s in self.skipped_judges if s.kind == "approval"]
        if held:
            return f"{len(held)} judge(s) not run for approval reasons: {', '.join(held)}"
        if not self.results and not self.stopped:
            return "nothing was evaluated: no answer has a judge that may run"
        return None

    @property
    def exit_code(self) -> int:
        """3 infrastructure stop; 1 incomplete results, malformed inputs or `failure`; else 0."""
        if self.stopped:
            return 3
        return 1 if self.incomplete or self.input_errors or self.failure else 0

    def to_record(self) -> RunRecord:
        """The machine-readable form of this report."""

        def ref(result: ResultHead) -> ResultRef:
            return ResultRef(
                agent=result.agent_name,
                task_id=result.task_id,
                answer_name=result.answer_name,
                reason=result.reason,
            )

        return RunRecord(
            exit_code=self.exit_code,
            failure=self.failure,
            evaluated=self.evaluated,
            decided=self.decided,
            reused=self.reused,
            not_started=self.not_started,
            skipped_answers=self.skipped_answers,
            stopped=self.stopped,
            skipped_judges=self.skipped_judges,
            incomplete=[ref(r) for r in self.incomplete],
            input_errors=[ref(r) for r in self.input_errors],
            usage=self.usage,
            earlier_attempts=self.earlier_attempts,
            summaries=self.summaries,
        )


class ResultRef(BaseModel):
    """Which result, and (for malformed inputs) why."""

    model_config = DEFERRED

    agent: str
    task_id: str
    answer_name: str
    reason: str | None = None


class RunRecord(BaseModel):
    """`judgegen run --json`: what the run did, and the summary of every agent it touched."""

    model_config = DEFERRED

    version: int = RUN_RECORD_VERSION
    exit_code: int
    failure: str | None = Field(
        default=None, description="Why the run failed although nothing was incomplete."
    )
    evaluated: int = Field(description="Evaluations run now (judge executed).")
    decided: int = Field(
        default=0,
        description="Results written now without running a judge, their input deciding them: "
        "excluded (aborted, binary, too large, malformed) or an empty answer scored 0.",
    )
    reused: int = Field(description="Fresh results kept from earlier runs.")
    not_started: int = Field(description="Left for the next run after an infrastructure stop.")
    skipped_answers: int = Field(description="Answers of tasks whose judge may not run.")
    stopped: str | None = Field(default=None, description="Why the run stopped early.")
    skipped_judges: list[SkippedJudge] = Field(default_factory=list)
    incomplete: list[ResultRef] = Field(default_factory=list)
    input_errors: list[ResultRef] = Field(default_factory=list)
    usage: UsageTotals = Field(
        description="Usage of the evaluations run now: this run's attempts, not the earlier "
        "ones their results carry (`earlier_attempts`)."
    )
    earlier_attempts: EarlierAttempts = Field(
        default_factory=EarlierAttempts,
        description="What the earlier incomplete attempts of the results this run redid "
        "cost, carried in those results (`earlier_attempts`): spent by earlier runs, so in "
        "neither `usage` nor `llm`.",
    )
    llm: UsageSummary | None = Field(
        default=None,
        description="Every LLM call the command made, served from the cache or failed, as its "
        "ledger and the `LLM:` line count them (None with a --backend, which has no LLM). "
        "`usage`, the sum over the evaluations run now, counts the same calls: those a judge "
        "left running when it stopped (timed out, or its process ended, or in tasks of its "
        "own, which are cancelled as it ends) are charged to its "
        "result, which waits for them up to the shorter of --timeout and the LLM call "
        "timeout. The costs can differ by one kind of call only: one still running after "
        "that wait, which its result counts in `usage.unknown_cost_calls` (its notes say "
        "so), and whose cost the ledger records here if it ends before the command does. A "
        "call cancelled (the cache off, or the command ended first) is $0 in both, and also "
        "counted in `unknown_cost_calls`: the provider may still bill it. Not charged to any "
        "result, so in `llm` alone: in a --ray run, calls a node's stopped judge left at the "
        "gateway. A call still running when the client closed (its provider ignored the "
        "cancellation) has no ledger row: `llm.unrecorded_calls` counts those, outside "
        "`llm.calls`, and the run warns.",
    )
    summaries: dict[str, Summary] = Field(default_factory=dict)
    unjudged_files: list[str] = Field(
        default_factory=list, description="Answer files the inputs' layout leaves out."
    )
    missing_pages: dict[str, list[str]] = Field(
        default_factory=dict, description="Cited pages judges could not read, by agent/task/answer."
    )
    clipped_pages: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Cited pages longer than the backend's page limit (judged on their "
        "beginning only), by agent/task/answer.",
    )


Progress = Callable[[str, ResultHead | None], None]
