"""Structured-output checking: strict schemas and the JSON Schema validation of model output."""

from __future__ import annotations

from pydantic import BaseModel

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
