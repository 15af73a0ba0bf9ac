"""Asking for a judge: the draft and repair requests, and pulling the module out of the reply.

A reply must hold the whole module in a fenced ```python block; when it holds several, the
last one defining `evaluate` wins (models often show a snippet before the full module).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from generator.stages.context import GenerationContext
from prompts import render
from toolkit.errors import JudgegenError
from toolkit.llm.models import LLMRequest, Message, Purpose, RequestMeta

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
DEFAULT_MAX_TOKENS = 16_000


class NoCodeBlock(JudgegenError):
    """The model's reply holds no Python code block."""


class Problem(BaseModel):
    """What the repair prompt is told: which stage failed, how, and where."""

    version: int = 1
    stage: str = Field(description="`lint` or `debug`.")
    signature: str = Field(description="Stable identity of the error, to detect repeats.")
    summary: str = Field(description="One paragraph for the model.")
    details: str = Field(default="", description="Traceback or findings, verbatim.")
    lines: list[str] = Field(default_factory=list, description="Offending lines, numbered.")


def extract_code(reply: str) -> str:
    """The judge module in `reply` (last python block defining `evaluate`, else the last one)."""
    blocks = [
        (lang.lower(), body)
        for lang, body in _FENCE.findall(reply)
        if lang.lower() in {"python", "py", ""}
    ]
    if not blocks:
        raise NoCodeBlock("the reply holds no ```python code block")
    with_entry = [body for _, body in blocks if "def evaluate" in body]
    code = (with_entry or [body for _, body in blocks])[-1]
    return code.rstrip() + "\n"


def numbered(source: str) -> str:
    """`source` with right-aligned 1-based line numbers, as repair prompts show it."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}}| {line}" for i, line in enumerate(lines, 1))


def offending_lines(source: str, line_numbers: list[int], context: int = 1) -> list[str]:
    """The numbered lines around each of `line_numbers` (1-based), in order, without repeats."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    wanted = sorted(
        {n for line in line_numbers for n in range(line - context, line + context + 1)}
        & set(range(1, len(lines) + 1))
    )
    return [f"{n:>{width}}| {lines[n - 1]}" for n in wanted]


def _spec_vars(context: GenerationContext) -> dict:
    return {"spec": context.loaded.spec}


def judge_request(
    context: GenerationContext, model: str, text: str, *, purpose: Purpose, label: str
) -> LLMRequest:
    """A request whose reply is a whole judge module: the shared system block, then `text`."""
    return LLMRequest(
        model=model,
        system=(context.system_block(),),
        messages=(Message.user(text),),
        max_tokens=DEFAULT_MAX_TOKENS,
        metadata=RequestMeta(purpose=purpose, task_id=context.loaded.task_id, label=label),
    )


def draft_request(context: GenerationContext, model: str) -> LLMRequest:
    """The request for the first draft of the judge."""
    text = render(
        "generator/draft.j2",
        examples=context.examples,
        answers=context.loaded.answers,
        **_spec_vars(context),
    )
    return judge_request(context, model, text, purpose="draft", label="draft")


def repair_request(
    context: GenerationContext, model: str, source: str, problem: Problem, round_number: int
) -> LLMRequest:
    """The request to fix `source` given the `problem` a stage found."""
    text = render(
        "generator/repair.j2",
        numbered_source=numbered(source),
        problem=problem,
        round=round_number,
        **_spec_vars(context),
    )
    return judge_request(context, model, text, purpose="repair", label=f"repair_{round_number}")
