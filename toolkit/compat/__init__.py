"""Mind2Web 2 compatibility: what their published judges import, provided by judgegen.

This package stands for `mind2web2` itself (its top-level names and, as attributes, its
submodules, so `import mind2web2.evaluator` rewritten to `import toolkit.compat as mind2web2`
keeps `mind2web2.evaluator.Evaluator` working). `toolkit.compat.mapping.MODULES` says which
toolkit module stands for each mind2web2 module; `judgegen import` rewrites imports by it.
"""

from __future__ import annotations

from toolkit.backends import DEFAULT_JUDGE_MODEL
from toolkit.compat import (
    api_tools,
    eval_toolkit,
    evaluator,
    llm_client,
    utils,
    verification_tree,
)
from toolkit.compat.eval_toolkit import EvaluatorConfig, Extractor, Verifier, create_evaluator
from toolkit.compat.evaluator import Evaluator
from toolkit.compat.llm_client import LLMClient
from toolkit.compat.utils import CacheFileSys
from toolkit.tools.maps import GoogleMapsTool
from toolkit.tree import AggregationStrategy, VerificationNode

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "AggregationStrategy",
    "CacheFileSys",
    "Evaluator",
    "EvaluatorConfig",
    "Extractor",
    "GoogleMapsTool",
    "LLMClient",
    "VerificationNode",
    "Verifier",
    "api_tools",
    "create_evaluator",
    "eval_toolkit",
    "evaluator",
    "llm_client",
    "utils",
    "verification_tree",
]
