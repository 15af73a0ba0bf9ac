"""--acceptance-budget-usd caps every LLM call the acceptance and mutation stages make: their
extractions as well as their verifications. An extraction the debug stage already asked is
answered from its memo and costs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from generator.stages.checking import acceptance_backend
from generator.stages.context import build_context
from generator.stages.run import GenerationRun, PipelineOptions
from generator.stages.spec import load_spec
from tests.generator.scripted_generation import ROOT
from toolkit.backends import ExtractRequest
from toolkit.errors import BudgetExceeded
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider


class Release(BaseModel):
    version: str | None = None


def spent_run(tmp_path: Path, provider: ScriptedProvider) -> GenerationRun:
    """A run of the rust example whose acceptance budget is already spent ($0)."""
    loaded = load_spec(ROOT / "tasks" / "rust_2024_edition")
    options = PipelineOptions(
        model="m", extract_model="e", repo=tmp_path, commit=False, acceptance_budget_usd=0.0
    )
    client = LLMClient(provider, model="m")
    context = build_context(loaded, judges_dir=tmp_path, reviews_dir=tmp_path)
    return GenerationRun.start(loaded, options, client, None, lambda message: None, context)


def extraction(text: str) -> ExtractRequest:
    return ExtractRequest.for_template(Release, prompt="the release", source_text=text)


async def test_acceptance_extraction_is_refused_once_the_acceptance_budget_is_spent(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(lambda request: {"version": "1.85"})
    backend = acceptance_backend(spent_run(tmp_path, provider))
    assert backend is not None
    with pytest.raises(BudgetExceeded, match="acceptance budget"):
        await backend.extract(extraction("Rust 1.85 shipped the 2024 edition."))
    assert provider.calls == []


async def test_an_extraction_the_debug_stage_already_asked_costs_the_acceptance_budget_nothing(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(lambda request: {"version": "1.85"})
    run = spent_run(tmp_path, provider)
    request = extraction("Rust 1.85 shipped the 2024 edition.")
    asked = await run.extractor.extract(request)  # as the debug stage asks it
    backend = acceptance_backend(run)
    assert backend is not None
    assert await backend.extract(request) == asked
    assert len(provider.calls) == 1
