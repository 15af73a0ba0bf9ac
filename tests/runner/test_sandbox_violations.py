"""A sandbox violation reaches the parent the moment it happens: nothing the judge does after
it (wiping the guard's record, forging its outcome, ending its process) makes the evaluation
clean. Real sandbox (bubblewrap, seccomp, the audit hook)."""

from __future__ import annotations

import asyncio
import socket
import threading

from tests.fixtures.runner.helpers import fixture_job, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.runner.judging import with_violations
from toolkit.sandbox.job import FrameWriter
from toolkit.sandbox.protocol import (
    Call,
    EvalOutcome,
    FrameBuffer,
    SandboxLimits,
    Violation,
    decode,
    encode,
    error_dict,
)

LIMITS = SandboxLimits(timeout_s=10, cpu_s=5, memory_mb=512)
REFUSED = "sandbox: network access is not allowed in a judge (audit event 'socket.__new__')"


async def sandboxed(name: str) -> EvalOutcome:
    job = fixture_job(name, "Paris is the capital, see https://a")
    backend = ScriptedBackend(extract=lambda request: {"city": "Paris", "url": "https://a"})
    return await run_in_sandbox(job, backend, limits=LIMITS)


def kinds(outcome: EvalOutcome) -> list[str]:
    return [error["kind"] for error in outcome.errors]


async def test_a_judge_that_wipes_the_guards_record_of_its_violation_is_still_incomplete() -> None:
    outcome = await sandboxed("hides_violation")
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_violation"]
    assert outcome.errors[0]["message"] == REFUSED
    assert outcome.summary is not None and outcome.summary["status"] == "incomplete"


async def test_a_forged_clean_outcome_after_a_violation_is_still_incomplete() -> None:
    outcome = await sandboxed("forges_clean_outcome")
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_violation"]
    assert outcome.errors[0]["message"] == REFUSED


async def test_a_violation_is_recorded_even_when_the_judge_exits_right_after_it() -> None:
    outcome = await sandboxed("exits_after_violation")
    assert outcome.status == "incomplete" and kinds(outcome) == ["crash", "sandbox_violation"]
    assert outcome.errors[1]["message"] == REFUSED


async def test_a_violation_the_judge_catches_is_reported_once() -> None:
    outcome = await sandboxed("catches_violation")
    assert outcome.status == "incomplete" and kinds(outcome) == ["sandbox_violation"]
    assert outcome.errors[0]["message"] == REFUSED


async def test_a_judge_that_keeps_to_the_sandbox_is_complete_without_errors() -> None:
    outcome = await sandboxed("normal")
    assert outcome.status == "complete" and outcome.errors == []
    assert outcome.summary is not None and outcome.summary["final_score"] == 1.0


def test_an_error_of_another_kind_quoting_a_violation_does_not_stand_for_it() -> None:
    quoted = error_dict("ValueError", "judge_exception", f"the judge raised: {REFUSED}")
    forged = EvalOutcome(status="incomplete", errors=[quoted])
    recorded = with_violations(forged, [REFUSED])
    assert kinds(recorded) == ["judge_exception", "sandbox_violation"]


async def test_a_violation_sent_while_frames_are_queued_follows_them_whole() -> None:
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    frames = FrameWriter(theirs)
    frames.write(encode(Call(call_id=1, method="tool", payload={"blob": "x" * 4_000_000})))
    bodies: list[bytes] = []

    def read_two_frames() -> None:
        buffer = FrameBuffer()
        while len(bodies) < 2:
            bodies.extend(buffer.feed(ours.recv(1 << 16)))

    reader = threading.Thread(target=read_two_frames)
    reader.start()
    frames.send_now(encode(Violation(message=REFUSED)))
    await asyncio.wait_for(frames.drain(), timeout=5)
    reader.join(timeout=5)
    call, violation = (decode(body) for body in bodies)
    assert call.call_id == 1 and len(call.payload["blob"]) == 4_000_000
    assert violation == Violation(message=REFUSED)
    ours.close()
    theirs.close()
