"""Scripted policies used by the LLM layer tests (loaded by `scripted:tests.llm.policies:...`)."""

from __future__ import annotations

import hashlib

from toolkit.llm.models import LLMRequest


def verdict(request: LLMRequest) -> dict:
    """A deterministic verdict derived from the request text and sample index."""
    digest = hashlib.sha256(f"{request.prompt_text()}|{request.sample_index}".encode()).digest()
    return {"reasoning": f"digest {digest[:4].hex()}", "result": digest[0] % 2 == 0}


def unexpected_extraction(request: LLMRequest) -> dict:
    """Every extraction answers `{"unexpected": 1}` (schema-breaking); verifications say yes."""
    if request.schema_name == "VerificationResult":
        return {"reasoning": "scripted: supported", "result": True}
    return {"unexpected": 1}


def always_supported(request: LLMRequest) -> dict:
    """Every verification says yes."""
    return {"reasoning": "scripted: supported", "result": True}


def never_supported(request: LLMRequest) -> dict:
    """Every verification says no."""
    return {"reasoning": "scripted: unsupported", "result": False}
