"""The review record: what a reviewer reads in the pull request, and its JSON sidecar.

`reviews/<task_id>.md` is rendered from the same `ReviewRecord` that is saved as
`reviews/<task_id>.json`, so the two never disagree. Nothing in a record depends on the clock
or the machine, so regenerating with the same recordings reproduces it byte for byte.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from generator.review.cost import CheckingCost, LLMSpend
from generator.review.mutate import MutationStage, kinds_line, row_cells
from generator.review.rubric import outline
from generator.stages.acceptance import AcceptanceReport
from generator.stages.provenance import Provenance
from generator.stages.reflect import ChecklistFinding

REVIEW_VERSION = 2  # 2: checking_cost (acceptance and mutation testing, each and in total)


StageStatus = Literal["ok", "failed", "kept", "reverted", "unchanged", "stopped", "skipped"]


class StageRecord(BaseModel):
    """One step of the pipeline, in order: what ran, how it ended, and what it found."""

    stage: Literal[
        "spec",
        "context",
        "draft",
        "lint",
        "debug",
        "repair",
        "acceptance",
        "mutation",
        "reflect",
        "publish",
    ]
    round: int = Field(default=0, description="Repair round or reflection pass (0 = first).")
    status: StageStatus
    summary: str
    details: list[str] = Field(default_factory=list, description="Findings or issues, one each.")


class ReflectionPass(BaseModel):
    """One checklist pass: the findings and what became of the revision."""

    pass_number: int
    findings: list[ChecklistFinding]
    outcome: Literal["no_change", "kept", "reverted"]
    reason: str = ""
    changes: list[str] = Field(
        default_factory=list, description="What a kept revision changed: rubric nodes, then code."
    )


class UsageRow(BaseModel):
    """LLM usage of one purpose (draft, repair, reflect, extract)."""

    purpose: str
    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    estimated_live_usd: float | None = Field(
        default=None,
        description="Replayed fixtures cost nothing; what the same calls would cost live.",
    )


class ReviewRecord(BaseModel):
    """Everything the generation found out about one judge revision."""

    version: int = REVIEW_VERSION
    task_id: str
    status: Literal["published", "failed"]
    provenance: Provenance
    judge_sha256: str | None = Field(description="sha256 of the published judge file's bytes.")
    skeleton_tree: dict[str, Any] | None = Field(description="Tree of an all-pass debug run.")
    results: dict[str, dict[str, float | None]] = Field(
        description="Sample answer -> verdict pattern -> root score (None: the run failed)."
    )
    reflections: list[ReflectionPass] = Field(default_factory=list)
    stages: list[StageRecord]
    usage: list[UsageRow] = Field(default_factory=list)
    usage_line: str = ""
    examples: list[str] = Field(default_factory=list, description="Example judges shown.")
    fixtures: list[str] = Field(
        default_factory=list, description="Recorded responses replayed (file names), if any."
    )
    responses: str = Field(
        default="", description="Where the model responses came from, when not a live model."
    )
    acceptance: AcceptanceReport | None = Field(
        default=None, description="Sample answers scored for real vs the intended scores."
    )
    mutation: MutationStage | None = Field(
        default=None, description="Mutation testing of the accepted sample answers."
    )
    checking_cost: CheckingCost | None = Field(
        default=None,
        description="What checking the judge cost in LLM calls: acceptance, mutation testing "
        "and `judgegen mutate --write-review`, each and in total (see its `covers`). None in "
        "version 1 records, whose acceptance cost left mutation testing out.",
    )


def checking_cost(
    acceptance: AcceptanceReport | None, mutation: MutationStage | None
) -> CheckingCost:
    """The checking cost of a generation from its acceptance report and mutation stage."""
    return CheckingCost(
        acceptance=_spend(
            acceptance.calls if acceptance else 0,
            acceptance.cost_usd if acceptance else 0.0,
            acceptance.estimated_live_usd if acceptance else None,
            _not_run(acceptance.ran, acceptance.note) if acceptance else "not run",
        ),
        mutation=_spend(
            mutation.calls if mutation else 0,
            mutation.cost_usd if mutation else 0.0,
            mutation.estimated_live_usd if mutation else None,
            _not_run(mutation.ran, mutation.note) if mutation else "not run",
        ),
    )


def _spend(calls: int | None, cost: float | None, estimate: float | None, note: str) -> LLMSpend:
    return LLMSpend(calls=calls or 0, cost_usd=cost or 0.0, estimated_live_usd=estimate, note=note)


def _not_run(ran: bool, note: str) -> str:
    return "" if ran else f"not run ({note})" if note else "not run"


# What a rerun served from the cache (or a later `judgegen mutate --write-review`) changes
# without changing the judge: its LLM usage and what the checks cost.
USAGE_FIELDS = frozenset({"usage", "usage_line", "checking_cost"})


def same_but_usage(old: ReviewRecord, new: ReviewRecord) -> bool:
    """Whether two records differ at most in LLM usage (a rerun served from the cache), so a
    regeneration that changed nothing can keep the reviewed files as they are."""
    return old.model_dump(exclude=set(USAGE_FIELDS)) == new.model_dump(exclude=set(USAGE_FIELDS))


def _fmt(score: float | None) -> str:
    return "error" if score is None else f"{score:.3f}".rstrip("0").rstrip(".") or "0"


def _results_table(results: dict[str, dict[str, float | None]]) -> list[str]:
    patterns = sorted({p for row in results.values() for p in row}, key=_pattern_order)
    lines = ["| answer | " + " | ".join(patterns) + " |", "|---" * (len(patterns) + 1) + "|"]
    for answer, row in results.items():
        lines.append(f"| {answer} | " + " | ".join(_fmt(row.get(p)) for p in patterns) + " |")
    return lines


def _pattern_order(pattern: str) -> tuple[int, str]:
    order = {"all_pass": 0, "all_fail": 1}
    return order.get(pattern, 2), pattern


def _reflection_lines(passes: list[ReflectionPass]) -> list[str]:
    if not passes:
        return ["No reflection pass ran."]
    lines = []
    for item in passes:
        lines.append(f"### Pass {item.pass_number}: {item.outcome.replace('_', ' ')}")
        if item.reason:
            lines.append(item.reason)
        if item.changes:
            lines += ["", "What changed:", "", *[f"- `{change}`" for change in item.changes]]
        lines.append("")
        lines.append("| item | status | evidence | fix |")
        lines.append("|---|---|---|---|")
        for f in item.findings:
            cells = [f.item, f.status, f.evidence, f.fix or "-"]
            lines.append(
                "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
            )
        lines.append("")
    return lines


def _stage_lines(stages: list[StageRecord]) -> list[str]:
    lines = []
    for index, stage in enumerate(stages, 1):
        lines.append(f"{index}. **{stage.stage}** ({stage.status}): {stage.summary}")
        lines.extend(f"   - {detail}" for detail in stage.details)
    return lines


def _usage_lines(record: ReviewRecord) -> list[str]:
    estimate = any(row.estimated_live_usd is not None for row in record.usage)
    head = "| purpose | calls | cached | input tokens | output tokens | cost (USD) |"
    lines = [head + (" estimate if live (USD) |" if estimate else "")]
    lines.append("|---|---|---|---|---|---|" + ("---|" if estimate else ""))
    for row in record.usage:
        cells = (
            f"| {row.purpose} | {row.calls} | {row.cached} | {row.input_tokens} | "
            f"{row.output_tokens} | {row.cost_usd:.4f} |"
        )
        if estimate:
            cells += f" {row.estimated_live_usd or 0.0:.4f} |"
        lines.append(cells)
    if record.usage_line:
        lines += ["", record.usage_line]
    return lines


def _checking_cost_lines(record: ReviewRecord) -> list[str]:
    lines = ["## Cost of checking the judge", ""]
    cost = record.checking_cost
    if cost is None:
        return [
            *lines,
            f"Not recorded (review record version {record.version}: its acceptance cost, "
            "under Acceptance, left mutation testing's calls out).",
            "",
        ]
    estimate = cost.total_estimated_live_usd is not None
    lines += [
        "LLM calls the checks made: acceptance (every round) and mutation testing (every "
        "pass); drafting, repairs, reflection and debug extraction are under LLM usage."
        + (
            " Replayed fixtures cost $0; the estimate is what the same calls would cost live."
            if estimate
            else ""
        ),
        "",
        "| check | LLM calls | cost (USD) |" + (" estimate if live (USD) |" if estimate else ""),
        "|---|---|---|" + ("---|" if estimate else ""),
    ]
    for label, spend in cost.parts():
        check = (f"{label}: {spend.note}" if spend.note else label).replace("|", "\\|")
        row = f"| {check} | {spend.calls} | {spend.cost_usd:.4f} |"
        if estimate:
            row += f" {spend.estimated_live_usd or 0.0:.4f} |"
        lines.append(row)
    total = f"| total | {cost.total_calls} | {cost.total_usd:.4f} |"
    if estimate:
        total += f" {cost.total_estimated_live_usd or 0.0:.4f} |"
    return [*lines, total, ""]


def _one_line_descs(tree: dict[str, Any]) -> dict[str, Any]:
    children = [_one_line_descs(child) for child in tree.get("children", [])]
    return {**tree, "desc": " ".join(str(tree.get("desc", "")).split()), "children": children}


def skeleton_outline(tree: dict[str, Any] | None) -> str:
    """The all-pass tree as a Markdown outline with critical/sequential marks."""
    return outline(_one_line_descs(tree), style="markdown") if tree else "(none)\n"


def _acceptance_lines(report: AcceptanceReport | None) -> list[str]:
    lines = ["## Acceptance (sample answers scored with the real judging backend)", ""]
    if report is None or not report.ran:
        note = report.note if report is not None else "not run"
        return [*lines, f"Not run: {note}.", ""]
    lines += [report.summary_line() + ".", "", "| answer | intended | actual | result |"]
    lines.append("|---|---|---|---|")
    for item in report.answers:
        intended = "-" if item.intended is None else _fmt(item.intended)
        lines.append(f"| {item.answer} | {intended} | {_fmt(item.actual)} | {item.status} |")
        for note in [*item.node_disagreements, *(f.message for f in item.findings)]:
            escaped = note.replace("|", "\\|").replace("\n", " ")
            lines.append(f"|  | | | {escaped} |")
    return [*lines, ""]


def _mutation_lines(stage: MutationStage | None) -> list[str]:
    lines = ["## Mutation testing (inside generate)", ""]
    if stage is None or not stage.ran:
        note = stage.note if stage is not None else "not run"
        return [*lines, f"Not run: {note}.", ""]
    lines += [stage.summary_line() + ".", ""]
    if stage.reports:
        lines += [kinds_line(stage.reports[0].kinds), ""]
        lines += ["| answer | mutation | change | score | outcome |", "|---|---|---|---|---|"]
    for report in stage.reports:
        for row in report.mutations:
            lines.append(f"| {report.answer} | {row.name} | {row_cells(row)} |")
    if stage.rewrites:
        lines += ["", "Rewrites keeping the meaning (the judge must keep the score):", ""]
        lines += ["| answer | rewrite | change | score | outcome |", "|---|---|---|---|---|"]
    for report in stage.reports:
        for rewrite in report.rewrites:
            lines.append(f"| {report.answer} | {rewrite.name} | {row_cells(rewrite)} |")
    return [*lines, ""]


def render_markdown(record: ReviewRecord) -> str:
    """The review record as Markdown for the pull request."""
    p = record.provenance
    skeleton = skeleton_outline(record.skeleton_tree)
    lines = [
        f"# Review record: `{record.task_id}`",
        "",
        f"Status: **{record.status}**. Judge: `generated_judges/{record.task_id}.py`"
        + (f" (`{record.judge_sha256}`)" if record.judge_sha256 else ""),
        "",
        f"- Spec: `{p.spec_sha256}`",
        f"- Prompts: `{p.prompts_sha256}`",
        f"- Generation model: `{p.model}`; toolkit {p.toolkit_version}",
        f"- Example judges shown: {', '.join(record.examples) or 'none'}",
        *([f"- Model responses: **{record.responses}**"] if record.responses else []),
        "",
        "## Rubric skeleton (all-pass run)",
        "",
        skeleton.rstrip(),
        "",
        "## Checklist reflection",
        "",
        *_reflection_lines(record.reflections),
        *_acceptance_lines(record.acceptance),
        *_mutation_lines(record.mutation),
        *_checking_cost_lines(record),
        "## Sample answers (root score per verdict pattern)",
        "",
        "Extraction is real; verdicts are stubbed (all pass, all fail, two seeded mixes), so",
        "the scores show how the tree gates and averages, not how good each answer is.",
        "",
        *_results_table(record.results),
        "",
        "## Lint and debug history",
        "",
        *_stage_lines(record.stages),
        "",
        "## LLM usage",
        "",
        *_usage_lines(record),
        "",
        "## Recorded fixtures used",
        "",
        *([f"- `{name}`" for name in record.fixtures] or ["none (live or cached calls)"]),
    ]
    return "\n".join(lines).rstrip() + "\n"


def render_json(record: ReviewRecord) -> str:
    """The sidecar JSON (sorted keys, two-space indent, final newline)."""
    return record.model_dump_json(indent=2) + "\n"
