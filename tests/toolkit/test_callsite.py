"""A verification is logged at the judge line that asked for it, also when the judge runs it
in a task of its own: evidence checks group verifications by line, and a line of asyncio's
would lump every gathered verification together under a line the judge does not have."""

from __future__ import annotations

import asyncio
import inspect

from toolkit import Evaluator


def _evaluator() -> tuple[Evaluator, list]:
    ev = Evaluator()
    ev.initialize(task_id="t", answer="Paris is the capital.")
    return ev, [ev.add_leaf(id=f"leaf_{i}", desc=f"claim {i}") for i in range(3)]


def _here() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


async def test_an_awaited_verification_is_placed_at_its_line() -> None:
    ev, leaves = _evaluator()
    line = _here() + 1
    await ev.verify(claim="Paris is the capital.", node=leaves[0])
    assert [entry["line"] for entry in ev.verifications] == [line]


async def test_a_verification_the_judge_gathers_is_placed_at_the_line_that_asked_for_it() -> None:
    ev, leaves = _evaluator()
    line = _here() + 2
    await asyncio.gather(
        ev.verify(claim="Paris is the capital.", node=leaves[0]),
        ev.verify(claim="Lyon is a city.", node=leaves[1]),
    )
    assert [entry["line"] for entry in ev.verifications] == [line, line + 1]


async def test_a_verification_in_a_task_the_judge_started_is_placed_at_its_line() -> None:
    ev, leaves = _evaluator()
    line = _here() + 1
    task = asyncio.ensure_future(ev.verify(claim="Paris is the capital.", node=leaves[0]))
    await task
    assert [entry["line"] for entry in ev.verifications] == [line]


async def test_batch_verify_places_each_verification_at_the_judges_call() -> None:
    ev, leaves = _evaluator()
    line = _here() + 1
    await ev.batch_verify(
        [("Paris is the capital.", None, leaves[0], None), ("x", None, leaves[1], None)]
    )
    assert [entry["line"] for entry in ev.verifications] == [line, line]
