"""Where in the judge a toolkit call came from: the line that runtime evidence findings and the
verification log point a reviewer (or the repairing model) at."""

from __future__ import annotations

import sys
from pathlib import Path

_TOOLKIT_DIR = str(Path(__file__).resolve().parent)


def judge_line() -> int | None:
    """The line of the innermost caller outside the toolkit (the judge's call), if any."""
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_TOOLKIT_DIR):
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None
