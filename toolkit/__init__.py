"""What a judge imports: the Evaluator, the rubric tree, judging backends and checks.

Everything else (the LLM layer, pages, the runner) sits behind this surface.
"""

from toolkit import checks
from toolkit.backends import (
    DEFAULT_JUDGE_MODEL,
    ExtractRequest,
    JudgingBackend,
    LLMBackend,
    ScriptedBackend,
    Verdict,
    VerifyRequest,
)
from toolkit.errors import BudgetExceeded, InfraError, JudgegenError, SpecError, TreeError
from toolkit.evaluator import Evaluator
from toolkit.tree import AggregationStrategy, NodeStatus, VerificationNode

__version__ = "0.1.0"

__all__ = [
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
]
