"""Structured-output checking: the small JSON Schema validator and the strict rewrite."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.llm.schema import parse_json_output, strict_schema, validate


class Author(BaseModel):
    name: str
    year: int | None = None


class Paper(BaseModel):
    title: str
    authors: list[Author]


SCHEMA = Paper.model_json_schema()


def test_a_valid_nested_object_has_no_errors() -> None:
    assert validate({"title": "T", "authors": [{"name": "A", "year": None}]}, SCHEMA) == []


def test_errors_name_the_path_of_each_problem() -> None:
    errors = validate({"authors": [{"name": 3}]}, SCHEMA)
    assert "$.title: required field is missing" in errors
    assert "$.authors[0].name: expected string, got int" in errors


def test_booleans_are_not_integers() -> None:
    assert validate({"title": "T", "authors": [{"name": "A", "year": True}]}, SCHEMA)


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
