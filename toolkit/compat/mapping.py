"""The one table `judgegen import` rewrites by: each mind2web2 module → the toolkit module
that provides the same names.

A name is importable from a mind2web2 module when its toolkit module lists it in `__all__`
(or, for modules without `__all__`, defines it publicly). Anything else is reported, never
guessed.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: dict[str, str] = {
    "mind2web2": "toolkit.compat",
    "mind2web2.evaluator": "toolkit.compat.evaluator",
    "mind2web2.eval_toolkit": "toolkit.compat.eval_toolkit",
    "mind2web2.verification_tree": "toolkit.compat.verification_tree",
    "mind2web2.utils": "toolkit.compat.utils",
    "mind2web2.utils.cache_filesys": "toolkit.compat.utils.cache_filesys",
    "mind2web2.utils.cache": "toolkit.compat.utils.cache",
    "mind2web2.llm_client": "toolkit.compat.llm_client",
    "mind2web2.llm_client.base_client": "toolkit.compat.llm_client.base_client",
    "mind2web2.api_tools": "toolkit.compat.api_tools",
    "mind2web2.api_tools.tool_googlemap": "toolkit.tools.maps",
}
"""mind2web2 module (as judges import it) → toolkit module that stands for it."""

ROOT_PACKAGE = "mind2web2"
"""Imports of this package or anything under it are rewritten; all others are left alone."""


def is_mind2web2(module: str) -> bool:
    """True when `module` is `mind2web2` or one of its submodules."""
    return module == ROOT_PACKAGE or module.startswith(ROOT_PACKAGE + ".")


def target_module(module: str) -> str | None:
    """The toolkit module standing for mind2web2 `module`, or None when there is none."""
    return MODULES.get(module)


def _public_names(module: ModuleType) -> frozenset[str]:
    listed = getattr(module, "__all__", None)
    if listed is not None:
        return frozenset(listed)
    return frozenset(name for name in vars(module) if not name.startswith("_"))


def exported_names(module: str) -> frozenset[str]:
    """The names a judge may import from mind2web2 `module` (empty when it is unmapped)."""
    target = target_module(module)
    if target is None:
        return frozenset()
    return _public_names(importlib.import_module(target))
