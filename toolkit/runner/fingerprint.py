"""What a result depends on, recorded in it so a rerun can tell a fresh result from a stale one.

Invariant: two evaluations with equal fingerprints would produce the same result (given the
response cache and page store), so the runner redoes a result exactly when its fingerprint
differs from the one the current inputs and configuration give.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FINGERPRINT_VERSION = 1


class Fingerprint(BaseModel):
    """The inputs an evaluation result was computed from."""

    model_config = ConfigDict(frozen=True)

    version: int = FINGERPRINT_VERSION
    judge_sha256: str | None = Field(
        default=None, description="Hash of the judge module's bytes; None when no judge ran."
    )
    prompts_sha256: str = Field(description="Hash of every prompt template (prompts_sha256()).")
    toolkit_version: str = Field(description="judgegen toolkit version that ran the judge.")
    judge_model: str | None = Field(default=None, description="Model deciding verifications.")
    extract_model: str | None = Field(default=None, description="Model doing extractions.")
    backend: str = Field(description="Identity of the judging backend (class or factory spec).")
    answer_sha256: str = Field(description="Hash of the answer's raw bytes as read from disk.")


def backend_identity(backend: Any, spec: str | None = None) -> str:
    """A stable name for a judging backend: its factory spec, or class and provider/models."""
    if spec:
        return spec
    cls = type(backend)
    parts = [f"{cls.__module__}.{cls.__qualname__}"]
    for attribute in ("provider", "model", "extract_model", "trials"):
        value = getattr(backend, attribute, None)
        if value not in (None, ""):
            parts.append(f"{attribute}={value}")
    return " ".join(parts)


def make_fingerprint(
    *,
    judge_sha256: str | None,
    answer_sha256: str,
    backend: Any,
    backend_spec: str | None = None,
    prompts_digest: str | None = None,
) -> Fingerprint:
    """The fingerprint the current configuration gives one (judge, answer) pair.

    `prompts_digest` saves rehashing the prompt templates for every answer of a run.
    """
    from prompts import prompts_sha256
    from toolkit import __version__

    return Fingerprint(
        judge_sha256=judge_sha256,
        prompts_sha256=prompts_digest or prompts_sha256(),
        toolkit_version=__version__,
        judge_model=getattr(backend, "model", None),
        extract_model=getattr(backend, "extract_model", None) or getattr(backend, "model", None),
        backend=backend_identity(backend, backend_spec),
        answer_sha256=answer_sha256,
    )
