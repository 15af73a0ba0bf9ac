"""Structured output: the strict schema sent to the model, and the check of what came back.

Invariant: the schema a model is shown (`sent_schema`: every object closed, every property
required, as OpenAI's strict mode demands) is exactly the one its answer is validated against,
with `jsonschema_rs` (a Draft 2020-12 validator compiled to native code: a check costs
microseconds, where the pure-Python `jsonschema` took ~0.15 ms per answer and ~100 ms to
import). Both are built once per distinct schema (keyed by its JSON text, so a schema
changed in place is never served its old form).
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema_rs import Draft202012Validator

MAX_PROBLEMS = 20
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


_CACHED_SCHEMAS = 512


class _Compiled:
    """One schema's strict form, and its validator once an answer needs checking (so sending
    a request needs neither the validator nor its import)."""

    def __init__(self, strict: dict[str, Any]) -> None:
        self.strict = strict
        self._validator: Draft202012Validator | None = None

    @property
    def validator(self) -> Draft202012Validator:
        if self._validator is None:
            from jsonschema_rs import Draft202012Validator  # loaded on the first answer checked

            self._validator = Draft202012Validator(self.strict)
        return self._validator


def sent_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict form of `schema` that providers send (do not mutate: it is shared)."""
    return _compiled_for(schema).strict


def output_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every way `value` breaks the strict form of `schema`, with a JSON path; [] when valid."""
    validator = _compiled_for(schema).validator
    if validator.is_valid(value):
        return []
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.instance_path])
    return [f"{_json_path(e.instance_path)}: {e.message}" for e in errors[:MAX_PROBLEMS]]


def _json_path(parts: list[str | int]) -> str:
    """`$.authors[0].name` for the instance path ["authors", 0, "name"]."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _compiled_for(schema: dict[str, Any]) -> _Compiled:
    """The compiled form of `schema`, shared by every equal schema."""
    return _compiled(json.dumps(schema, separators=(",", ":")))


@lru_cache(maxsize=_CACHED_SCHEMAS)
def _compiled(schema_json: str) -> _Compiled:
    return _Compiled(strict_schema(json.loads(schema_json)))


def parse_json_output(text: str) -> tuple[Any, str | None]:
    """Parse a model's JSON answer, tolerating a fenced block; returns (value, error)."""
    candidate = text.strip()
    match = _FENCE.search(candidate)
    if match:
        candidate = match.group(1).strip()
    try:
        return json.loads(candidate), None
    except ValueError as exc:
        return None, f"the output is not valid JSON ({exc})"


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Strict-mode copy: every object closed and every property required (nullable stays)."""
    result = copy.deepcopy(schema)
    _make_strict(result)
    return result


def _make_strict(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" or "properties" in node:
        node["additionalProperties"] = False
        node["required"] = list(node.get("properties", {}))
    if "default" in node and node["default"] is None:
        node.pop("default")
    for key in ("properties", "$defs", "definitions"):
        for child in node.get(key, {}).values():
            _make_strict(child)
    for key in ("anyOf", "oneOf", "allOf"):
        for child in node.get(key, []):
            _make_strict(child)
    _make_strict(node.get("items"))
