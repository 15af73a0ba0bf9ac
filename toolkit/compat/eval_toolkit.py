"""`mind2web2.eval_toolkit` for imported judges: names kept so their imports resolve.

Some published judges import `create_evaluator`, `Extractor` and `Verifier` without using
them; under judgegen the Evaluator alone reaches the judging backend. Using one of these
raises `InfraError` naming the Evaluator method to call instead, rather than judging
differently from the reference toolkit.
"""

from __future__ import annotations

from typing import Any, NoReturn

from toolkit.errors import InfraError
from toolkit.keywords import unknown_keyword_error

__all__ = ["EvaluatorConfig", "Extractor", "Verifier", "create_evaluator"]


def _unsupported(name: str, instead: str) -> NoReturn:
    raise InfraError(
        f"mind2web2.eval_toolkit.{name} is not available under judgegen; {instead}",
        kind="compat",
    )


class EvaluatorConfig:
    """Mind2Web 2's evaluator settings, for `Evaluator.initialize(config=...)`.

    The verification defaults apply to every `verify` that does not name its own:
    `default_num_trials` and `default_majority_vote` (one call without voting, else a majority
    of that odd count), `default_use_screenshot`, and `default_additional_instruction` (for a
    verify given an empty one). The page and image limits are the runner's (its backend clips
    pages, its page store takes screenshots) and are kept only so judges that set them run.
    Set values as keywords, as attributes, or in a subclass, as Mind2Web 2 judges do.
    """

    max_text_chars: int = 400_000
    image_max_width: int = 1100
    image_max_height: int = 10000
    jpeg_quality: int = 85
    default_num_trials: int = 3
    default_majority_vote: bool = True
    default_use_screenshot: bool = True
    default_additional_instruction: str = "None"

    def __init__(self, **settings: Any) -> None:
        known = [name for name in vars(EvaluatorConfig) if not name.startswith("_")]
        for name, value in settings.items():
            if name not in known:
                raise unknown_keyword_error("EvaluatorConfig", name, known)
            setattr(self, name, value)


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
