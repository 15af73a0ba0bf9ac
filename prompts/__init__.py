"""Every Jinja2 template judgegen sends to a model, and the one way to render them.

Templates render with StrictUndefined (a missing variable is an error, never an empty
string) and a plain `json` filter (`tojson` HTML-escapes, which corrupts prompts).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Jinja2 loads on the first render: hashing the templates does not need it
    from jinja2 import Environment

PROMPTS_DIR = Path(__file__).resolve().parent


def _json(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


@cache
def environment() -> Environment:
    """The shared Jinja2 environment for prompt templates."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(PROMPTS_DIR)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates do not change during a command; skip a stat per render
    )
    env.filters["json"] = _json
    return env


def render(name: str, **context: Any) -> str:
    """Render the template at `name` (relative to the prompts directory)."""
    return environment().get_template(name).render(**context)


def prompts_sha256(under: str = "") -> str:
    """Hash of every template and data file under prompts/ (or its subfolder `under`, e.g.
    "toolkit" for the templates judges use), for provenance and fingerprints."""
    digest = hashlib.sha256()
    for path in sorted((PROMPTS_DIR / under).rglob("*")):
        if path.is_file() and path.suffix in {".j2", ".yaml", ".md"}:
            digest.update(path.relative_to(PROMPTS_DIR).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()
