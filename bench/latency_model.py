"""A scripted LLM for the runner bench: answers like a model, after a fixed wall-clock latency.

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
"""File that receives, at exit, JSON: when the last call was answered (`at`), and how late
the simulated model answered in all (`late_s`, over `calls` calls): asyncio rounds a timer's
wait up to the millisecond, so a sleep of the latency takes a little longer."""
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


def _mark_first_call(path: str | None) -> None:
    """Write the wall time of the run's first call to `path` (one stat per later call)."""
    if path and not os.path.exists(path):
        with open(path, "w") as handle:
            handle.write(repr(time.time()))


class _LastAnswer:
    """When the latest call was answered and how late the calls were answered in all, written
    to a file when the process exits (the `judgegen` executable runs exit handlers), so timing
    them costs no I/O per call."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.late_s = 0.0
        self.calls = 0

    def note(self, path: str | None, late_s: float) -> None:
        if path and self.at is None:
            atexit.register(self._write, path)
        self.at = time.time()
        self.late_s += late_s
        self.calls += 1

    def _write(self, path: str) -> None:
        with open(path, "w") as handle:
            json.dump({"at": self.at, "late_s": self.late_s, "calls": self.calls}, handle)


_LAST_ANSWER = _LastAnswer()


async def respond(request: LLMRequest) -> dict[str, Any]:
    """The scripted provider's policy: wait the configured latency, then answer."""
    _mark_first_call(os.environ.get(FIRST_CALL_ENV))
    latency = float(os.environ.get(LATENCY_ENV, "0") or 0)
    late = 0.0
    if latency > 0:
        started = time.perf_counter()
        await asyncio.sleep(latency)
        late = time.perf_counter() - started - latency
    _LAST_ANSWER.note(os.environ.get(LAST_CALL_ENV), late)
    return answer(request)
