"""Pins what a judge can import from `toolkit`: changing it is a deliberate, reviewed act."""

from __future__ import annotations

import toolkit

EXPECTED = {
    "DEFAULT_JUDGE_MODEL",
    "AggregationStrategy",
    "BudgetExceeded",
    "Evaluator",
    "ExtractRequest",
    "InfraError",
    "JudgegenError",
    "JudgingBackend",
    "LLMBackend",
    "NodeStatus",
    "ScriptedBackend",
    "SpecError",
    "TreeError",
    "Verdict",
    "VerificationNode",
    "VerifyRequest",
    "__version__",
    "checks",
}


def test_toolkit_exports_exactly_the_judge_surface():
    assert set(toolkit.__all__) == EXPECTED


def test_every_exported_name_exists():
    missing = [name for name in toolkit.__all__ if not hasattr(toolkit, name)]
    assert missing == []


def test_evaluator_keeps_the_mind2web2_method_names():
    for name in (
        "initialize",
        "add_parallel",
        "add_sequential",
        "add_leaf",
        "add_custom_node",
        "extract",
        "verify",
        "batch_verify",
        "add_ground_truth",
        "add_custom_info",
        "score",
        "get_summary",
        "find_node",
    ):
        assert callable(getattr(toolkit.Evaluator, name)), name
