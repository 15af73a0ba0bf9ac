"""Explaining a cache or replay miss: the nearest recorded request and a unified diff to it.

Requests are rendered one text line per line (system blocks and messages expanded, images as
a short digest), so the diff points at the sentence that changed rather than at one huge
JSON line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable

from toolkit.llm.models import ImagePart, LLMRequest
from toolkit.util.hashing import sha256_text

MAX_DIFF_LINES = 80
MAX_CANDIDATES = 500
MAX_CHARS_COMPARED = 20_000


def render_lines(request: LLMRequest) -> list[str]:
    """The answer-relevant parts of `request` as lines, in a stable order."""
    lines = [
        f"provider: {request.provider}",
        f"model: {request.model}",
        f"endpoint: {request.endpoint}",
        f"max_tokens: {request.max_tokens}",
        f"sample_index: {request.sample_index}",
        f"schema_name: {request.schema_name}",
        f"output_schema: {json.dumps(request.output_schema, sort_keys=True)}",
    ]
    for index, block in enumerate(request.system):
        lines.append(f"--- system[{index}]{' (cached prefix)' if block.cache else ''}")
        lines += block.text.splitlines()
    for index, message in enumerate(request.messages):
        lines.append(f"--- message[{index}] {message.role}")
        for part in message.content:
            lines += _part_lines(part)
    return lines


def _part_lines(part: object) -> list[str]:
    if isinstance(part, ImagePart):
        return [f"[image {part.media_type} {sha256_text(part.data)[:23]}]"]
    return getattr(part, "text", "").splitlines()


def nearest(request: LLMRequest, recorded: Iterable[LLMRequest]) -> LLMRequest | None:
    """The recorded request most similar to `request`, preferring the same model, then the
    same purpose; one of another model when none of its own was recorded, so the miss still
    shows what differs. The first MAX_CANDIDATES of the preferred ones are compared."""
    pool = list(recorded)
    same = [r for r in pool if r.model == request.model] or pool
    purpose = [r for r in same if r.metadata.purpose == request.metadata.purpose]
    best_pool = (purpose or same)[:MAX_CANDIDATES]
    if not best_pool:
        return None
    target = render_lines(request)
    scored = [(_similarity(target, render_lines(r)), r) for r in best_pool]
    top = max(score for score, _ in scored)
    tied = [r for score, r in scored if score == top]
    if len(tied) == 1:
        return tied[0]
    text = "\n".join(target)[:MAX_CHARS_COMPARED]
    return max(tied, key=lambda r: _char_similarity(text, r))


def _similarity(a: list[str], b: list[str]) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _char_similarity(text: str, recorded: LLMRequest) -> float:
    other = "\n".join(render_lines(recorded))[:MAX_CHARS_COMPARED]
    return difflib.SequenceMatcher(None, text, other).ratio()


def unified_diff(recorded: LLMRequest, request: LLMRequest) -> str:
    """A unified diff from `recorded` to `request`, cut to MAX_DIFF_LINES lines."""
    lines = list(
        difflib.unified_diff(
            render_lines(recorded), render_lines(request), "recorded", "requested", lineterm="", n=2
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def miss_message(what: str, request: LLMRequest, recorded: Iterable[LLMRequest]) -> str:
    """Names the purpose, the key, and the diff against the nearest recorded request."""
    purpose = request.metadata.purpose
    head = f"{what}: no recorded response for {purpose} request {request.cache_key()} ({request.model})"
    closest = nearest(request, recorded)
    if closest is None:
        return f"{head}; nothing recorded for model {request.model}"
    if closest.model != request.model:
        head += f"; nothing recorded for model {request.model}"
    return (
        f"{head}; diff against the nearest recorded {closest.metadata.purpose} request "
        f"{closest.cache_key()} ({closest.model}):\n{unified_diff(closest, request)}"
    )
