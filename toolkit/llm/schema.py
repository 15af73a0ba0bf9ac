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
    """Strict-mode copy: every object closed and every property required (nullable stays),
    and no `$ref` beside other keywords (`_inline_annotated_refs`)."""
    result = copy.deepcopy(schema)
    _inline_annotated_refs(result, result, ())
    _make_strict(result)
    return result


# Keywords that only describe a schema, never narrow what it accepts.
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "$comment",
        "readOnly",
        "writeOnly",
    }
)
# Keywords whose value is a schema, a list of schemas, or a mapping of names to schemas.
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_DEFINITIONS = ("$defs", "definitions")


def _inline_annotated_refs(node: Any, root: dict[str, Any], expanding: tuple[str, ...]) -> None:
    """Replace each `$ref` that has annotations beside it (pydantic writes
    `{"$ref": ..., "description": ...}` for `field: Model = Field(description=...)`) by a copy
    of the schema it names, the annotations kept on top. OpenAI's strict mode refuses a `$ref`
    with any other keyword (HTTP 400 "$ref cannot have keywords"), so without this every
    request of such a template fails. A `$ref` beside keywords that narrow it is left as
    written (merging could drop a constraint); one naming a schema it is already inside
    (`expanding`) keeps the bare reference and loses its annotations, or it would never end.
    A recursive model's root (`{"$defs": ..., "$ref": ...}`) is inlined too, `$defs` kept."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    beside = set(node) - {"$ref"}
    kept = _DEFINITIONS if node is root else ()  # a recursive model's root: `$defs` + `$ref`
    if isinstance(ref, str) and beside and beside <= _ANNOTATIONS.union(kept):
        target = _local_definition(root, ref)
        if target is not None and ref in expanding:
            for key in beside - set(kept):
                del node[key]
        elif target is not None:
            besides = {key: node[key] for key in beside}
            node.clear()
            node.update(copy.deepcopy(target))
            node.update(besides)
            expanding = (*expanding, ref)
    for key in _SUBSCHEMA:
        _inline_annotated_refs(node.get(key), root, expanding)
    for key in _SUBSCHEMA_LISTS:
        for child in node.get(key, ()) if isinstance(node.get(key), list) else ():
            _inline_annotated_refs(child, root, expanding)
    for key in _SUBSCHEMA_MAPS:
        for child in _schemas_in(node.get(key)):
            _inline_annotated_refs(child, root, expanding)
    if node is root:
        for key in _DEFINITIONS:
            definitions = node.get(key)
            for name, child in definitions.items() if isinstance(definitions, dict) else ():
                _inline_annotated_refs(child, root, (f"#/{key}/{name}",))


def _schemas_in(mapping: Any) -> list[Any]:
    """The schemas of a name → schema keyword (`properties`), [] when it is not a mapping."""
    return list(mapping.values()) if isinstance(mapping, dict) else []


def _local_definition(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """The schema `ref` names in `root`'s `$defs` (or `definitions`); None for any other."""
    for key in _DEFINITIONS:
        prefix = f"#/{key}/"
        if ref.startswith(prefix):
            name = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
            definitions = root.get(key)
            target = definitions.get(name) if isinstance(definitions, dict) else None
            return target if isinstance(target, dict) else None
    return None


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
