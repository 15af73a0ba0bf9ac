"""A scripted LLM for the runner bench: answers like a model, after a fixed wall-clock latency.

The answer wakes the event loop as a real provider's reply does, through a file descriptor
that becomes readable at the deadline (a Linux timerfd), not through an asyncio timer: the
loop rounds a timer's wait up to the millisecond (~1 ms late per call, which a 50-call chain
would count against judgegen). Where no timerfd exists (or on the schedule's virtual clock) it
falls back to `asyncio.sleep`, and the bench prints how late the model answered either way.

Used as `judgegen run --provider scripted:latency_model:respond` (bench/ on PYTHONPATH), so
every call goes through the real path — LLMBackend prompts and voting, the response cache,
the run's concurrency limit, budget, ledger, metering, the sandbox broker — and only the
provider itself is simulated. The latency (seconds) comes from `JUDGEGEN_BENCH_LATENCY`.

Answers depend only on the request's content, never on call order or the vote trial, so two
runs (or two runners) asking the same questions get the same answers and every vote agrees.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import hashlib
import json
import os
import re
import time
from typing import Any

from toolkit.llm.models import LLMRequest, TextPart

LATENCY_ENV = "JUDGEGEN_BENCH_LATENCY"
FIRST_CALL_ENV = "JUDGEGEN_BENCH_FIRST_CALL"  # file that receives the wall time of the first call
LAST_CALL_ENV = "JUDGEGEN_BENCH_LAST_CALL"
"""File that receives, at exit, JSON: when the last call was answered (`at`), how long after
its latency each waiting call resumed, in all (`late_s`, over `calls` calls), which timer
answered (`timer`): with "timerfd" the model answers at the deadline and the delay is the
event loop busy with other work; with "asyncio" it also holds the timer's rounding — and
every call's `[task id, when it reached the model, when it was answered]` (`spans`, wall
clock), from which the bench tells where a chain's time went."""
PASS_PERCENT = 75
DATA_MARK = "BENCH-DATA: "
_CLAIM = re.compile(r"Claim:\s*```\s*(.*?)\s*```", re.S)
_URL = re.compile(r"Page URL: (\S+)")
_YEAR = re.compile(r"Year: (\d{4})")


def user_text(request: LLMRequest) -> str:
    """The text of the request's messages (the rendered prompt, without system blocks)."""
    return "\n".join(
        part.text
        for message in request.messages
        for part in message.content
        if isinstance(part, TextPart)
    )


def verdict(text: str) -> bool:
    """Pass or fail from the claim and page URL alone: a stable pseudo-random 75% pass."""
    claim = _CLAIM.search(text)
    url = _URL.search(text)
    key = f"{claim.group(1) if claim else text}|{url.group(1) if url else ''}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100 < PASS_PERCENT


def answer(request: LLMRequest) -> dict[str, Any]:
    """The parsed object a model would return for this extraction or verification."""
    text = user_text(request)
    if request.metadata.purpose == "verify":
        passed = verdict(text)
        return {
            "reasoning": "bench: " + ("supported" if passed else "unsupported"),
            "result": passed,
        }
    if DATA_MARK in text:
        line = text.split(DATA_MARK, 1)[1].splitlines()[0]
        return json.loads(line)
    year = _YEAR.search(text)
    return {"year": int(year.group(1)) if year else None, "official": True}


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_CLOCK_MONOTONIC = 1  # what `time.monotonic` and asyncio's loop clock read on Linux
_TFD_NONBLOCK, _TFD_CLOEXEC, _TFD_TIMER_ABSTIME = 0o4000, 0o2000000, 1


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.timerfd_create  # noqa: B018 - absent outside Linux
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


async def wait_precisely(latency: float) -> str:
    """Wait `latency` seconds, woken by a timerfd at the deadline (asyncio.sleep where there
    is none, or on a loop with its own clock, like the schedule's virtual one); the timer used."""
    loop = asyncio.get_running_loop()
    if _LIBC is None or type(loop).time is not asyncio.BaseEventLoop.time:
        await asyncio.sleep(latency)
        return "asyncio"
    deadline = time.monotonic_ns() + round(latency * 1e9)
    fd = _LIBC.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
    if fd < 0:
        await asyncio.sleep(latency)
        return "asyncio"
    try:
        spec = _Itimerspec(it_value=_Timespec(deadline // 10**9, deadline % 10**9))
        if _LIBC.timerfd_settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")
        rang = loop.create_future()
        loop.add_reader(fd, lambda: rang.done() or rang.set_result(None))
        try:
            await rang
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
    return "timerfd"


def _mark_first_call(path: str | None) -> None:
    """Write the wall time of the run's first call to `path` (one stat per later call)."""
    if path and not os.path.exists(path):
        with open(path, "w") as handle:
            handle.write(repr(time.time()))


class _LastAnswer:
    """When the latest call was answered, how late the calls resumed in all and by which timer, written
    to a file when the process exits (the `judgegen` executable runs exit handlers), so timing
    them costs no I/O per call."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.late_s = 0.0
        self.calls = 0
        self.timer = "asyncio"
        self.spans: list[tuple[str | None, float, float]] = []

    def note(
        self, path: str | None, late_s: float, timer: str, task_id: str | None, began: float
    ) -> None:
        if path and self.at is None:
            atexit.register(self._write, path)
        self.at = time.time()
        self.late_s += late_s
        self.calls += 1
        self.timer = timer
        self.spans.append((task_id, began, self.at))

    def _write(self, path: str) -> None:
        with open(path, "w") as handle:
            record = {
                "at": self.at,
                "late_s": self.late_s,
                "calls": self.calls,
                "timer": self.timer,
                "spans": self.spans,
            }
            json.dump(record, handle)


_LAST_ANSWER = _LastAnswer()


async def respond(request: LLMRequest) -> dict[str, Any]:
    """The scripted provider's policy: wait the configured latency, then answer."""
    began = time.time()
    _mark_first_call(os.environ.get(FIRST_CALL_ENV))
    latency = float(os.environ.get(LATENCY_ENV, "0") or 0)
    late, timer = 0.0, "none"
    if latency > 0:
        started = time.perf_counter()
        timer = await wait_precisely(latency)
        late = time.perf_counter() - started - latency
    path = os.environ.get(LAST_CALL_ENV)
    _LAST_ANSWER.note(path, late, timer, request.metadata.task_id, began)
    return answer(request)
