"""The reflect stage's pieces: the checklist, the reflection request, and the model's findings.

The model reviews the judge against `prompts/checklist.yaml` with the evidence of real runs
(sample answers, extracted values, the verification log, scores vs intended, the cited pages an
answer was judged without, every mutation not killed: survived, error or inconclusive, and
every meaning-preserving rewrite whose score was not kept) and
replies with its findings in a ```json block and, when something is wrong, the whole revised
module in a ```python block: a module escaped inside a JSON string is fragile for real models.
Whether a revision is kept (it must pass every check again) is the pipeline's call.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from generator.review.mutate import REWRITE_FIX
from generator.stages.context import GenerationContext
from generator.stages.draft import NoCodeBlock, extract_code
from prompts import PROMPTS_DIR, render
from toolkit.errors import LLMError, SpecError
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta

if TYPE_CHECKING:
    from generator.review.mutate import MutationStage
    from generator.stages.acceptance import AcceptanceReport
    from generator.stages.spec import LoadedSpec

CHECKLIST_PATH = PROMPTS_DIR / "checklist.yaml"
DEFAULT_MAX_TOKENS = 16_000
MAX_EVIDENCE_CHARS = 600  # per extracted value or claim, so evidence stays bounded
MAX_MUTATION_ROWS = 8  # mutations shown per outcome (survived, error, inconclusive)
_JSON_FENCE = re.compile(r"^```[ \t]*json[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


class ChecklistItem(BaseModel):
    """One question every judge is reviewed against."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str
    question: str


class Checklist(BaseModel):
    """The reflection checklist file; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    items: list[ChecklistItem] = Field(min_length=1)

    @field_validator("items")
    @classmethod
    def _unique_ids(cls, items: list[ChecklistItem]) -> list[ChecklistItem]:
        ids = [item.id for item in items]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate item ids: {', '.join(duplicates)}")
        return items


def load_checklist(path: str | Path = CHECKLIST_PATH) -> Checklist:
    """Read and validate the checklist; a bad file is a `SpecError` naming field and fix."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
        return Checklist.model_validate(data)
    except yaml.YAMLError as exc:
        raise SpecError(str(path), "<yaml>", "is not valid YAML", "fix the syntax") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<root>"
        fix = (
            "remove it (allowed: version, items[id, title, question])"
            if first["type"] == "extra_forbidden"
            else "see the comments at the top of prompts/checklist.yaml"
        )
        raise SpecError(str(path), field, first["msg"].lower(), fix) from None


class ChecklistFinding(BaseModel):
    """What one checklist item found in the judge."""

    item: str = Field(description="Checklist item id.")
    status: Literal["ok", "problem"]
    evidence: str = Field(description="Guidance sentence, node id or code line showing it.")
    fix: str = Field(default="", description="What to change; empty when ok.")


class Reflection(BaseModel):
    """The model's structured answer to a reflection request."""

    findings: list[ChecklistFinding]
    revised_script: str | None = Field(
        default=None,
        description="The complete corrected module (from the reply's ```python block), or None.",
    )

    def problems(self) -> list[ChecklistFinding]:
        """Findings whose status is `problem`."""
        return [f for f in self.findings if f.status == "problem"]

    def revised_source(self) -> str | None:
        """The revised module as source text (a stray code fence is removed)."""
        if not self.revised_script or not self.revised_script.strip():
            return None
        try:
            return extract_code(self.revised_script)
        except NoCodeBlock:
            return self.revised_script.rstrip() + "\n"


def _clip(text: str) -> str:
    return text if len(text) <= MAX_EVIDENCE_CHARS else text[:MAX_EVIDENCE_CHARS] + " …"


def evidence_text(
    loaded: LoadedSpec, acceptance: AcceptanceReport | None, mutation: MutationStage | None
) -> str:
    """What real runs showed, per sample answer, for the reflection prompt (bounded text)."""
    if acceptance is None or not acceptance.ran:
        note = acceptance.note if acceptance is not None else "not run"
        lines = [f"Acceptance did not run ({note}); only stubbed debug runs are known."]
    else:
        lines = [acceptance.summary_line(cost=False)]
        for item in acceptance.answers:
            intended = (
                "no intended score" if item.intended is None else f"intended {item.intended:g}"
            )
            lines += ["", f"### {item.answer}: scored {item.actual}, {intended} ({item.status})"]
            if item.error:
                lines.append(f"the judge failed: {_clip(item.error)}")
            for extracted in item.extracted:
                lines.append("extracted " + _clip(json.dumps(extracted, ensure_ascii=False)))
            for entry in item.verifications:
                verdict = {None: "skipped", True: "pass", False: "fail"}[entry.passed]
                sources = ", ".join(entry.sources) or "no sources"
                lines.append(
                    f"verify line {entry.line} {entry.node_id}: {verdict} [{sources}] "
                    + _clip(entry.claim)
                )
            lines += [f"node disagreement: {d}" for d in item.node_disagreements]
            lines += [f"finding (line {f.line}): {f.message}" for f in item.findings]
            if item.missing_pages:
                lines.append(
                    "judged without cited pages missing from the page store: "
                    + _clip(", ".join(item.missing_pages))
                )
    if mutation is not None and mutation.ran:
        lines += ["", f"Mutation testing: {mutation.summary_line()}."]
        lines += mutation_evidence(mutation)
    return "\n".join(lines)


def mutation_evidence(mutation: MutationStage) -> list[str]:
    """Every mutation the kill rate counts as not killed, labelled with its outcome: `survived`
    (the score did not drop), `error` (the judge failed on the mutated answer) and
    `inconclusive` (the score dropped while a cited page was missing); at most
    `MAX_MUTATION_ROWS` of each, each clipped. Killed ones need no change and are left out."""
    shown: dict[str, list[str]] = {"survived": [], "error": [], "inconclusive": []}
    for report in mutation.reports:
        for row in report.mutations:
            what = f"{report.answer}: {row.name} ({row.description})"
            score = "nothing" if row.score is None else f"{row.score:g}"
            if row.outcome == "survived":
                shown["survived"].append(f"{what} still scored {score}")
            elif row.outcome == "error":
                shown["error"].append(f"{what} the judge failed: {row.error}")
            elif row.outcome == "inconclusive":
                pages = ", ".join(row.missing_pages)
                shown["inconclusive"].append(
                    f"{what} scored {score} while cited pages were missing from the page "
                    f"store: {pages}"
                )
    lines: list[str] = []
    for outcome, rows in shown.items():
        lines += [_clip(f"{outcome}: {text}") for text in rows[:MAX_MUTATION_ROWS]]
        if len(rows) > MAX_MUTATION_ROWS:
            lines.append(f"({len(rows) - MAX_MUTATION_ROWS} more {outcome} mutations not shown)")
    return lines + rewrite_evidence(mutation)


def rewrite_evidence(mutation: MutationStage) -> list[str]:
    """Every rewrite keeping an answer's meaning whose score was not kept: `rewrite changed`
    (the judge reads how a value is written, and how to fix it), or its error or missing pages;
    at most `MAX_MUTATION_ROWS`, each clipped. Kept ones need no change and are left out."""
    rows = [f"rewrite changed: {line}" for line in mutation.rewrites_changed()]
    rows += [f"rewrite {line}" for line in mutation.rewrites_unproven()]
    lines = [_clip(text) for text in rows[:MAX_MUTATION_ROWS]]
    if len(rows) > MAX_MUTATION_ROWS:
        lines.append(f"({len(rows) - MAX_MUTATION_ROWS} more rewrites not shown)")
    if mutation.rewrites_changed():
        lines.append(
            f"a rewrite keeps the answer's meaning, so its score must not change: {REWRITE_FIX}"
        )
    return lines


def reflect_request(
    context: GenerationContext,
    model: str,
    *,
    source: str,
    skeleton: str,
    results: str,
    checklist: Checklist,
    pass_number: int,
    max_passes: int,
    evidence: str = "",
    earlier: list[str] | None = None,
) -> LLMRequest:
    """The request for one checklist pass over `source` (`earlier`: the previous pass)."""
    text = render(
        "generator/reflect.j2",
        spec=context.loaded.spec,
        answers=context.loaded.answers,
        source=source,
        skeleton=skeleton,
        results=results,
        evidence=evidence,
        checklist=checklist.items,
        pass_number=pass_number,
        max_passes=max_passes,
        earlier=earlier or [],
    )
    return LLMRequest(
        model=model,
        system=(context.system_block(),),
        messages=(Message.user(text),),
        max_tokens=DEFAULT_MAX_TOKENS,
        metadata=RequestMeta(
            purpose="reflect", task_id=context.loaded.task_id, label=f"reflect_{pass_number}"
        ),
    )


def parse_reflection(response: LLMResponse) -> Reflection:
    """The reflection in `response`: a ```json findings block plus an optional ```python module.

    A structured (JSON) reply with `revised_script` is still read. LLMError if neither fits.
    """
    try:
        if response.parsed is not None:
            return Reflection.model_validate(response.parsed)
        blocks = _JSON_FENCE.findall(response.text)
        data = json.loads(blocks[-1] if blocks else response.text)
        if isinstance(data, list):
            data = {"findings": data}
        reflection = Reflection.model_validate(data)
    except (ValueError, ValidationError) as exc:
        raise LLMError(
            f"reflection output holds no valid ```json findings block: {exc}",
            kind="invalid_output",
        ) from None
    if reflection.revised_script is None:
        with contextlib.suppress(NoCodeBlock):
            reflection.revised_script = extract_code(response.text)
    return reflection
