"""`mind2web2.eval_toolkit` for imported judges: names kept so their imports resolve.

Some published judges import `create_evaluator`, `Extractor` and `Verifier` without using
them; under judgegen the Evaluator alone reaches the judging backend. Using one of these
raises `InfraError` naming the Evaluator method to call instead, rather than judging
differently from the reference toolkit.
"""

from __future__ import annotations

from typing import Any, NoReturn

from toolkit.errors import InfraError

__all__ = ["EvaluatorConfig", "Extractor", "Verifier", "create_evaluator"]


def _unsupported(name: str, instead: str) -> NoReturn:
    raise InfraError(
        f"mind2web2.eval_toolkit.{name} is not available under judgegen; {instead}",
        kind="compat",
    )


class EvaluatorConfig:
    """Mind2Web 2's verification defaults (3 majority-vote trials, screenshots on)."""

    max_text_chars: int = 400_000
    default_num_trials: int = 3
    default_majority_vote: bool = True
    default_use_screenshot: bool = True
    default_additional_instruction: str = "None"


class Extractor:
    """Importable only: constructing it raises InfraError (use `Evaluator.extract`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _unsupported("Extractor", "call evaluator.extract(...)")


class Verifier:
    """Importable only: constructing it raises InfraError (use `Evaluator.verify`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _unsupported("Verifier", "call evaluator.verify(...)")


def create_evaluator(**kwargs: Any) -> NoReturn:
    """Importable only: calling it raises InfraError (use `Evaluator.initialize`)."""
    _unsupported("create_evaluator", "call Evaluator().initialize(...)")
