"""Where in the judge a toolkit call came from: the line that runtime evidence findings and the
verification log point a reviewer (or the repairing model) at.

A call the judge runs in a task of its own (`asyncio.gather(ev.verify(...), ...)`,
`ensure_future`, `ev.batch_verify`) has no judge frame on its stack, only the event loop's: its
line is where the task's coroutine was created, which coroutine origin tracking records
(`track_origins`, turned on by every `Evaluator`). Without it such a call would be placed at a
line of asyncio's own, and evidence checks grouping verifications by line would lump every
gathered one together under a line the judge does not have.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

_TOOLKIT_DIR = str(Path(__file__).resolve().parent)
_ASYNCIO_DIR = str(Path(asyncio.__file__).resolve().parent)
ORIGIN_DEPTH = 4
"""Frames kept of where each coroutine was created: enough to pass the toolkit's own frames
(`batch_verify` and its keyword check) up to the judge's."""


def judge_line() -> int | None:
    """The line of the judge's call: the innermost caller outside the toolkit, or, in a task
    whose stack reaches the event loop first, the judge's line that created the task's
    coroutine; None when neither is known."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_ASYNCIO_DIR):
            break  # the loop running a task: the judge's frame is where its coroutine began
        if not filename.startswith(_TOOLKIT_DIR):
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return _task_origin()


def _task_origin() -> int | None:
    """The judge's line among the frames that created the running task's coroutine."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return None
    origin = getattr(task.get_coro(), "cr_origin", None) if task is not None else None
    for filename, line, _ in origin or ():
        if not filename.startswith((_TOOLKIT_DIR, _ASYNCIO_DIR)):
            return int(line)
    return None


def track_origins() -> None:
    """Record where coroutines are created in this thread (`ORIGIN_DEPTH` frames each), for
    `judge_line` in tasks; never lowers a depth set already."""
    if sys.get_coroutine_origin_tracking_depth() < ORIGIN_DEPTH:
        sys.set_coroutine_origin_tracking_depth(ORIGIN_DEPTH)
