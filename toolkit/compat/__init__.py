"""Mind2Web 2 compatibility: what their published judges import, provided by judgegen.

This package stands for `mind2web2` itself (its top-level names and, as attributes, its
submodules, so `import mind2web2.evaluator` rewritten to `import toolkit.compat as mind2web2`
keeps `mind2web2.evaluator.Evaluator` working). `toolkit.compat.mapping.MODULES` says which
toolkit module stands for each mind2web2 module; `judgegen import` rewrites imports by it.
"""

from __future__ import annotations

from toolkit.backends import DEFAULT_JUDGE_MODEL
from toolkit.compat import api_tools, evaluator, llm_client, utils, verification_tree
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
    "GoogleMapsTool",
    "LLMClient",
    "VerificationNode",
    "api_tools",
    "evaluator",
    "llm_client",
    "utils",
    "verification_tree",
]
