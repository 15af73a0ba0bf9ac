"""What a judge imports: the Evaluator, the rubric tree, judging backends and checks.

Everything else (the LLM layer, pages, the runner) sits behind this surface. Names load on
first use (PEP 562), so importing a light submodule such as `toolkit.errors` — as the CLI's
`run --help` does — does not pull in pydantic models, the Evaluator or the checks.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from toolkit.util.lazy import lazy_exports

IMPORTING_SINCE_NS = time.time_ns()
"""When this process began importing the toolkit: a toolkit file changed since may have been
loaded as it was before (`toolkit.runner.fingerprint.toolkit_code`)."""

if TYPE_CHECKING:
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

# exported name -> the module that defines it ("checks" is the module itself)
_HOMES = {
    "DEFAULT_JUDGE_MODEL": "toolkit.backends",
    "ExtractRequest": "toolkit.backends",
    "JudgingBackend": "toolkit.backends",
    "LLMBackend": "toolkit.backends",
    "ScriptedBackend": "toolkit.backends",
    "Verdict": "toolkit.backends",
    "VerifyRequest": "toolkit.backends",
    "BudgetExceeded": "toolkit.errors",
    "InfraError": "toolkit.errors",
    "JudgegenError": "toolkit.errors",
    "SpecError": "toolkit.errors",
    "TreeError": "toolkit.errors",
    "Evaluator": "toolkit.evaluator",
    "AggregationStrategy": "toolkit.tree",
    "NodeStatus": "toolkit.tree",
    "VerificationNode": "toolkit.tree",
    "checks": "toolkit.checks",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
