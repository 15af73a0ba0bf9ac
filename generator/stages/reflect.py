"""The reflect stage's pieces: the checklist, the reflection request, and the model's findings.

The model reviews the judge against `prompts/checklist.yaml` and returns structured findings
(item, status, evidence, fix) and, when something is wrong, a revised module. Whether a
revision is kept (it must pass lint and debug again) is decided by the pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from generator.stages.context import GenerationContext
from generator.stages.draft import NoCodeBlock, extract_code
from prompts import PROMPTS_DIR, render
from toolkit.errors import LLMError, SpecError
from toolkit.llm.models import LLMRequest, LLMResponse, Message, RequestMeta

CHECKLIST_PATH = PROMPTS_DIR / "checklist.yaml"
DEFAULT_MAX_TOKENS = 16_000


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
        default=None, description="The complete corrected module, or null when nothing changes."
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
    earlier: list[str] | None = None,
) -> LLMRequest:
    """The request for one checklist pass over `source` (`earlier`: what past passes did)."""
    text = render(
        "generator/reflect.j2",
        spec=context.loaded.spec,
        source=source,
        skeleton=skeleton,
        results=results,
        checklist=checklist.items,
        pass_number=pass_number,
        max_passes=max_passes,
        earlier=earlier or [],
    )
    return LLMRequest(
        model=model,
        system=[context.system_block()],
        messages=[Message.user(text)],
        output_schema=Reflection.model_json_schema(),
        schema_name="Reflection",
        max_tokens=DEFAULT_MAX_TOKENS,
        metadata=RequestMeta(
            purpose="reflect", task_id=context.loaded.task_id, label=f"reflect_{pass_number}"
        ),
    )


def parse_reflection(response: LLMResponse) -> Reflection:
    """The reflection in `response` (parsed object, else the text as JSON); LLMError if invalid."""
    data = response.parsed
    try:
        if data is None:
            data = json.loads(response.text)
        return Reflection.model_validate(data)
    except (ValueError, ValidationError) as exc:
        raise LLMError(
            f"reflection output is not a valid Reflection: {exc}", kind="invalid_output"
        ) from None
