"""Structured-output checking: strict schemas and the JSON Schema validation of model output."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from toolkit.llm.schema import output_problems, parse_json_output, sent_schema, strict_schema


class Author(BaseModel):
    name: str
    year: int | None = None


class Paper(BaseModel):
    title: str
    authors: list[Author]


SCHEMA = Paper.model_json_schema()


def test_a_valid_nested_object_has_no_problems() -> None:
    assert output_problems({"title": "T", "authors": [{"name": "A", "year": None}]}, SCHEMA) == []


def test_problems_name_the_path_of_each_violation() -> None:
    problems = output_problems({"authors": [{"name": 3, "year": None}]}, SCHEMA)
    assert '$: "title" is a required property' in problems
    assert '$.authors[0].name: 3 is not of type "string"' in problems


def test_unexpected_fields_are_rejected() -> None:
    problems = output_problems({"unexpected": 1}, SCHEMA)
    assert any("'unexpected' was unexpected" in p for p in problems)


def test_fields_with_defaults_are_still_required_in_model_output() -> None:
    problems = output_problems({"title": "T", "authors": [{"name": "A"}]}, SCHEMA)
    assert problems == ['$.authors[0]: "year" is a required property']


def test_booleans_are_not_integers() -> None:
    assert output_problems({"title": "T", "authors": [{"name": "A", "year": True}]}, SCHEMA)


def test_the_schema_sent_is_the_strict_one_validation_uses() -> None:
    assert sent_schema(SCHEMA) == strict_schema(SCHEMA)
    assert sent_schema(SCHEMA) is sent_schema(Paper.model_json_schema())


def test_fenced_json_is_accepted_and_garbage_is_reported() -> None:
    assert parse_json_output('```json\n{"a": 1}\n```') == ({"a": 1}, None)
    value, error = parse_json_output("{oops")
    assert value is None and error.startswith("the output is not valid JSON")


def test_strict_schema_closes_objects_and_requires_every_field() -> None:
    strict = strict_schema(SCHEMA)
    author = strict["$defs"]["Author"]
    assert author["additionalProperties"] is False
    assert author["required"] == ["name", "year"]
    assert "default" not in author["properties"]["year"]
    assert SCHEMA["$defs"]["Author"]["required"] == ["name"]


class Place(BaseModel):
    name: str
    country: str | None = None


class Visit(BaseModel):
    place: Place = Field(description="Where the visit was.")
    backup: Place = Field(title="Backup place")
    plain: Place


class Chain(BaseModel):
    label: str
    next: Chain = Field(description="The next link.")


def _refs_with_siblings(node: Any) -> list[dict[str, Any]]:
    """Every object of `node` holding a `$ref` beside another keyword."""
    if isinstance(node, list):
        return [found for child in node for found in _refs_with_siblings(child)]
    if not isinstance(node, dict):
        return []
    here = [node] if "$ref" in node and len(node) > 1 else []
    return here + [found for child in node.values() for found in _refs_with_siblings(child)]


def test_a_described_nested_model_is_sent_inline_without_ref_siblings() -> None:
    sent = sent_schema(Visit.model_json_schema())
    assert _refs_with_siblings(sent) == []
    place = sent["properties"]["place"]
    assert place["description"] == "Where the visit was."
    assert (place["additionalProperties"], place["required"]) == (False, ["name", "country"])
    assert sent["properties"]["backup"]["title"] == "Backup place"
    assert sent["properties"]["plain"] == {"$ref": "#/$defs/Place"}


def test_an_inlined_nested_model_accepts_and_rejects_what_its_reference_did() -> None:
    schema = Visit.model_json_schema()
    good = {"name": "Oslo", "country": None}
    assert output_problems({"place": good, "backup": good, "plain": good}, schema) == []
    problems = output_problems({"place": {"name": 3}, "backup": good, "plain": good}, schema)
    assert '$.place: "country" is a required property' in problems
    assert '$.place.name: 3 is not of type "string"' in problems


def test_a_described_reference_to_its_own_model_keeps_the_bare_reference() -> None:
    sent = sent_schema(Chain.model_json_schema())
    assert _refs_with_siblings(sent) == []
    assert sent["$defs"]["Chain"]["properties"]["next"] == {"$ref": "#/$defs/Chain"}


def test_a_recursive_model_is_sent_as_its_own_schema_not_a_root_reference() -> None:
    sent = sent_schema(Chain.model_json_schema())
    assert "$ref" not in sent
    assert (sent["type"], sent["required"]) == ("object", ["label", "next"])
    assert output_problems({"label": "a", "next": {"label": "b"}}, Chain.model_json_schema()) == [
        '$.next: "next" is a required property'
    ]


def test_a_reference_beside_a_constraint_is_left_as_written() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N", "maximum": 3}},
        "$defs": {"N": {"type": "integer"}},
    }
    assert sent_schema(schema)["properties"]["n"] == {"$ref": "#/$defs/N", "maximum": 3}
