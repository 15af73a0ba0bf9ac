"""Just enough JSON Schema to check a model's structured output, plus the strict-mode rewrite.

Covers what pydantic's `model_json_schema()` emits for judge templates: `type` (single or
list), `properties`, `required`, `items`, `anyOf`/`oneOf`/`allOf`, `enum`, `const`, `$ref`
into `$defs`. Anything else is accepted as is; the output is re-validated by the caller's
pydantic template anyway.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

_TYPE_CHECKS: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def validate(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every way `value` breaks `schema`, as short messages with a JSON path; empty when valid."""
    errors: list[str] = []
    _check(value, schema, schema, "$", errors)
    return errors[:20]


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part, {}) if isinstance(target, dict) else {}
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


def _check(value: Any, schema: Any, root: dict[str, Any], path: str, errors: list[str]) -> None:
    if not isinstance(schema, dict):
        return
    schema = _resolve(schema, root)
    if not _check_type(value, schema, path, errors):
        return
    _check_choices(value, schema, root, path, errors)
    if isinstance(value, dict):
        _check_object(value, schema, root, path, errors)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check(item, schema["items"], root, f"{path}[{index}]", errors)


def _check_type(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> bool:
    expected = schema.get("type")
    if expected is None:
        return True
    names = expected if isinstance(expected, list) else [expected]
    if any(_TYPE_CHECKS.get(name, lambda v: True)(value) for name in names):
        return True
    errors.append(f"{path}: expected {' or '.join(names)}, got {type(value).__name__}")
    return False


def _check_choices(
    value: Any, schema: dict[str, Any], root: dict[str, Any], path: str, errors: list[str]
) -> None:
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must equal {schema['const']!r}")
    for sub in schema.get("allOf", []):
        _check(value, sub, root, path, errors)
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants and not any(not validate_at(value, v, root) for v in variants):
        errors.append(f"{path}: matches none of the allowed shapes")


def validate_at(value: Any, schema: Any, root: dict[str, Any]) -> list[str]:
    """Validate `value` against a sub-schema whose `$ref`s point into `root`."""
    errors: list[str] = []
    _check(value, schema, root, "$", errors)
    return errors


def _check_object(
    value: dict[str, Any],
    schema: dict[str, Any],
    root: dict[str, Any],
    path: str,
    errors: list[str],
) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"{path}.{name}: required field is missing")
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], root, f"{path}.{name}", errors)
        elif schema.get("additionalProperties") is False:
            errors.append(f"{path}.{name}: unexpected field")


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
    """OpenAI strict-mode copy: every object closed and every property required (nullable stays)."""
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
