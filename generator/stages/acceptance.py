"""The acceptance stage: score the sample answers for real and compare with what the author meant.

Debug runs prove a draft *runs*; acceptance checks that it *judges right*. Each sample answer is
scored with the real judging backend (the verification model through the LLM layer, the task's
page store, extraction shared with the debug stage) and compared with the author's intended
root score and node outcomes (`labels/`, or `intended_scores` in the spec). The runtime evidence
checks run on every summary too, and over all of them: answers that cite pages on which the
judge checked no claim against a page each carry that finding. A mismatch becomes a repair
problem carrying the tree and the verification log; the report goes into the review record.
Spending is capped by a budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from generator.review.cost import LLMSpend
from generator.review.labels import AnswerLabels, agreement
from generator.review.rubric import outline, tree_of
from generator.review.runs import JudgedAnswer, JudgeRunError, ReviewRuns
from generator.stages.debug_runs import SharedExtractor
from generator.stages.draft import Problem, offending_lines
from generator.stages.evidence import (
    EvidenceFinding,
    citing_answers,
    evidence_findings,
    pages_never_read,
)
from generator.stages.spec import LoadedSpec, SampleAnswer
from toolkit.backends import ExtractRequest, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded
from toolkit.llm.models import LLMRequest, LLMResponse

ACCEPTANCE_VERSION = 3  # 3: each answer's missing_pages
DEFAULT_BUDGET_USD = 1.0
AnswerStatus = Literal["match", "mismatch", "unlabelled", "error"]


class BudgetedClient:
    """Forwards LLM calls until `budget_usd` is spent, then refuses (`BudgetExceeded`).

    Acceptance and mutation testing share the budget; each call is also counted for the check
    named by `part` (set by whoever runs it), so the review record can say what each cost.
    """

    def __init__(self, client: Any, budget_usd: float, *, replayed: bool = False) -> None:
        self.client, self.budget_usd, self.spent_usd = client, budget_usd, 0.0
        self.calls, self.replayed = 0, replayed
        self.part = "acceptance"
        self.parts: dict[str, LLMSpend] = {}

    def spend(self, part: str) -> LLMSpend:
        """What the calls made for `part` (`acceptance`, `mutation`) cost so far."""
        return self.parts.setdefault(part, LLMSpend())

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.spent_usd >= self.budget_usd:
            raise BudgetExceeded(
                f"acceptance budget ${self.budget_usd:.2f} spent after {self.calls} calls; "
                "raise --acceptance-budget-usd or use --no-acceptance"
            )
        response: LLMResponse = await self.client.complete(request)
        self.calls += 1
        if not response.cache_hit and not self.replayed:  # a replay calls no model
            self.spent_usd += response.cost_usd
        self.spend(self.part).add(response, replayed=self.replayed)
        return response


class AcceptanceBackend:
    """Real verification (the judging model); extraction through `extractor`, which shares
    the debug stage's answers (see `checking.acceptance_backend`)."""

    def __init__(self, extractor: SharedExtractor, judge: Any) -> None:
        self.extractor, self.judge = extractor, judge
        self.model = getattr(judge, "model", "")

    async def extract(self, request: ExtractRequest) -> Any:
        return await self.extractor.extract(request)

    async def verify(self, request: VerifyRequest) -> Verdict:
        verdict: Verdict = await self.judge.verify(request)
        return verdict


class VerificationEntry(BaseModel):
    """One verification as the judge ran it: the evidence reflection and repair read."""

    node_id: str | None = None
    line: int | None = None
    claim: str
    sources: list[str] = Field(default_factory=list)
    passed: bool | None = Field(default=None, description="None: skipped by a prerequisite.")


class AnswerAcceptance(BaseModel):
    """One sample answer: intended vs actual score, and what the run showed."""

    answer: str
    intended: float | None = None
    actual: float | None = None
    status: AnswerStatus
    node_disagreements: list[str] = Field(default_factory=list)
    findings: list[EvidenceFinding] = Field(default_factory=list)
    verifications: list[VerificationEntry] = Field(default_factory=list)
    extracted: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    missing_pages: list[str] = Field(
        default_factory=list,
        description="Cited pages the run asked for that the page store lacks (the runner's "
        "page-read log); mutation testing tells a drop caused by another missing page apart.",
    )


class AcceptanceReport(BaseModel):
    """The acceptance stage's result for one judge revision."""

    version: int = ACCEPTANCE_VERSION
    ran: bool = True
    note: str = Field(default="", description="Why acceptance did not run, when it did not.")
    answers: list[AnswerAcceptance] = Field(default_factory=list)
    calls: int = Field(default=0, description="LLM calls of acceptance (every round) alone.")
    cost_usd: float = Field(
        default=0.0,
        description="What acceptance's calls cost (every round; replays $0). Mutation "
        "testing's are the mutation stage's; the record's checking_cost adds them up.",
    )
    estimated_live_usd: float | None = Field(
        default=None, description="Replays only: what acceptance's calls would cost live."
    )
    budget_usd: float = Field(
        default=DEFAULT_BUDGET_USD, description="Shared by acceptance and mutation testing."
    )
    skeleton: str = Field(default="", description="Outline of the first scored tree.")

    @classmethod
    def skipped(cls, note: str) -> AcceptanceReport:
        """A report saying acceptance was not run, and why."""
        return cls(ran=False, note=note)

    @property
    def ok(self) -> bool:
        """No mismatch, no judge failure, no evidence finding."""
        return all(a.status in ("match", "unlabelled") and not a.findings for a in self.answers)

    def summary_line(self, *, cost: bool = True) -> str:
        """`3/3 sample answers score as intended` (or why not); `cost` adds the spending.

        Prompts leave the cost out: it depends on what the cache held, not on the judge.
        """
        if not self.ran:
            return f"skipped: {self.note}"
        labelled = [a for a in self.answers if a.status != "unlabelled"]
        matching = sum(a.status == "match" for a in labelled)
        findings = sum(len(a.findings) for a in self.answers)
        text = f"{matching}/{len(labelled)} labelled sample answers score as intended"
        if not labelled:
            text = f"{len(self.answers)} sample answers scored; no intended scores given"
        if findings:
            text += f"; {findings} evidence finding(s)"
        return text + (f" (${self.cost_usd:.4f} of ${self.budget_usd:.2f} budget)" if cost else "")

    def problem(self, source: str) -> Problem | None:
        """The mismatches and findings as one repair problem, with tree and verification log."""
        if self.ok:
            return None
        parts, lines = [], []
        for item in self.answers:
            if item.status in ("mismatch", "error") or item.findings:
                parts.append(_answer_evidence(item))
                lines += [v.line for v in item.verifications if v.line]
                lines += [f.line for f in item.findings if f.line]
        signature = "acceptance:" + "; ".join(
            f"{a.answer}={a.actual}" + "".join(f"/{f.kind}" for f in a.findings)
            for a in self.answers
            if a.status != "match" or a.findings
        )
        summary = (
            "Scored with the real verification model on the sample answers, the judge does "
            "not do what the author intends:\n\n" + "\n\n".join(parts)
        )
        return Problem(
            stage="acceptance",
            signature=signature,
            summary=summary,
            details=f"Rubric tree (first sample answer):\n{self.skeleton}",
            lines=offending_lines(source, sorted(set(lines)), context=0),
        )


def _answer_evidence(item: AnswerAcceptance) -> str:
    head = f"### {item.answer}: intended {item.intended}, actual {item.actual} ({item.status})"
    rows = [head]
    if item.error:
        rows.append(f"the judge failed: {item.error}")
    rows += [f"- node {d}" for d in item.node_disagreements]
    rows += [f"- finding (line {f.line}): {f.message}" for f in item.findings]
    rows.append("verification log (line, node, verdict, sources, claim):")
    for v in item.verifications:
        verdict = "skipped" if v.passed is None else ("pass" if v.passed else "fail")
        sources = ", ".join(v.sources) or "no sources"
        rows.append(f"  {v.line} {v.node_id}: {verdict} [{sources}] {v.claim}")
    return "\n".join(rows)


def _entries(summary: dict[str, Any]) -> list[VerificationEntry]:
    return [
        VerificationEntry(
            node_id=v.get("node_id"),
            line=v.get("line"),
            claim=str(v.get("claim") or ""),
            sources=list(v.get("sources") or []),
            passed=v.get("passed"),
        )
        for v in summary.get("verifications") or []
    ]


def judge_answer(
    answer: SampleAnswer, judged: JudgedAnswer, label: AnswerLabels | None, task_id: str
) -> AnswerAcceptance:
    """Compare one complete run on `answer` with the author's label (None: unlabelled)."""
    summary = judged.summary
    info = summary.get("eval_breakdown", [{}])[0].get("info", [])
    item = AnswerAcceptance(
        answer=answer.name,
        actual=float(summary.get("final_score") or 0.0),
        status="unlabelled",
        findings=evidence_findings(summary, "acceptance", answer.text),
        verifications=_entries(summary),
        extracted=[i for i in info if "no_info" not in i],
        missing_pages=list(judged.missing_pages),
    )
    if label is None:
        return item
    agree = agreement(task_id, answer.name, judged, label)
    item.intended = label.root_score
    item.node_disagreements = [
        f"{d.id}: intended {d.expected}, judge {d.actual}" for d in agree.disagreements
    ] + [f"{i}: labelled but the judge builds no such node" for i in agree.unknown_node_ids]
    root_ok = agree.root_agrees is not False
    item.status = "match" if root_ok and not item.node_disagreements else "mismatch"
    return item


async def acceptance_stage(
    judge: Path, loaded: LoadedSpec, runs: ReviewRuns, labels: dict[str, AnswerLabels]
) -> tuple[AcceptanceReport, dict[str, dict[str, Any]]]:
    """Score every sample answer with the judge at `judge`; the report and each summary.

    `runs` carries the real judging backend (an `AcceptanceBackend`) and the page store.
    """
    report = AcceptanceReport()
    summaries: dict[str, dict[str, Any]] = {}
    for answer in loaded.answers:
        label = labels.get(answer.name)
        try:
            judged = await runs.judged(
                judge, answer.text, task_id=loaded.task_id, answer_name=answer.name
            )
        except JudgeRunError as exc:
            report.answers.append(
                AnswerAcceptance(
                    answer=answer.name,
                    intended=label.root_score if label else None,
                    status="error",
                    error=str(exc),
                )
            )
            continue
        summary = summaries[answer.name] = judged.summary
        if not report.skeleton:
            report.skeleton = outline(tree_of(summary))
        item = judge_answer(answer, judged, label, loaded.task_id)
        report.answers.append(item)
    _add_pages_never_read(report, loaded, summaries)
    return report, summaries


def _add_pages_never_read(
    report: AcceptanceReport, loaded: LoadedSpec, summaries: dict[str, dict[str, Any]]
) -> None:
    """The `pages_never_read` finding on every scored answer that cites pages, when it holds.

    Judged only when every answer was scored: a judge that failed on one has a short log.
    """
    if any(item.status == "error" for item in report.answers):
        return
    citing = citing_answers((a.name, a.text) for a in loaded.answers)
    logs = {name: summaries[name].get("verifications") or [] for name in citing}
    finding = pages_never_read(logs)
    if finding is None:
        return
    for item in report.answers:
        if item.answer in citing:
            item.findings.append(finding.model_copy())
