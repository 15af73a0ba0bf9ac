"""Turning a backend's extraction output into the judge's template, strictly.

A missing page gives an all-null template; an output that shares no field with the template,
or holds a value of the wrong type, is an `InfraError` (the evaluation is incomplete), never a
silently empty result that would score 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from toolkit.errors import InfraError


def empty_template(template_class: type[BaseModel]) -> BaseModel:
    """An instance with every field at its default, or None where there is no default."""
    values = {
        name: (None if field.is_required() else field.get_default(call_default_factory=True))
        for name, field in template_class.model_fields.items()
    }
    return template_class.model_construct(**values)


def coerce_extraction(template_class: type[BaseModel], raw: Any) -> BaseModel:
    """`raw` as the template; an empty result (missing page) is all-null. An output sharing no
    field with the template, or a value of the wrong type, is an `InfraError`, never a silent 0
    (other extra fields are ignored, as pydantic does)."""
    if isinstance(raw, template_class):
        return raw
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw or {})
    if not data:
        return empty_template(template_class)
    fields = template_class.model_fields
    known = set(fields) | {f.alias for f in fields.values() if f.alias}
    if not known & set(data):
        raise InfraError(
            f"extraction output {sorted(data)} has none of the fields of "
            f"{template_class.__name__} ({sorted(fields)})",
            kind="invalid_output",
        )
    missing = {
        name: None for name, field in fields.items() if name not in data and field.is_required()
    }
    try:
        return template_class.model_validate({**data, **missing})
    except ValidationError as exc:
        given = [e for e in exc.errors() if not e["loc"] or e["loc"][0] not in missing]
        if given:
            raise InfraError(
                f"extraction output does not fit {template_class.__name__}: {given[0]['msg']} "
                f"at {'.'.join(map(str, given[0]['loc']))}",
                kind="invalid_output",
            ) from None
        return template_class.model_construct(**{**empty_template(template_class).__dict__, **data})
