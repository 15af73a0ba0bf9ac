"""The direct job ↔ parent channel: many jobs on one fork server, frames that bypass it, pages
attached by the parent, the answer never sent back, and cancellation that reaches the parent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from typing import Any

import pytest

from tests.fixtures.runner.helpers import fixture_job
from toolkit.backends import ExtractRequest, ScriptedBackend, VerifyRequest
from toolkit.sandbox import pool as pool_module
from toolkit.sandbox import seccomp
from toolkit.sandbox.broker import Broker
from toolkit.sandbox.job import Channel
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import (
    HEADER_SIZE,
    Call,
    Cancel,
    EvalJob,
    FrameBuffer,
    JobStart,
    Reply,
    SandboxLimits,
    decode,
    encode,
)

LIMITS = SandboxLimits(timeout_s=20)
ANSWER = "The capital is Paris, see https://a and https://b. " + "unique-answer-marker " * 50
PAGE_A = "Paris is the capital of France. " * 2000  # ~64 KB: the parent attaches it


class Pages:
    """Two known pages (one large, with a screenshot)."""

    def get(self, url: str) -> str | None:
        return {"https://a": PAGE_A, "https://b": "Lyon is a city."}.get(url)

    def screenshot(self, url: str) -> str | None:
        return "c2hvdA==" if url == "https://a" else None


def job(name: str, answer_name: str = "answer_1") -> EvalJob:
    return fixture_job(name, ANSWER, agent_name="agent", answer_name=answer_name)


def extract(request: ExtractRequest) -> dict[str, Any]:
    return {"city": "Paris"}


@pytest.fixture
def recorded_calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every call the parent's broker answers, as it arrived from a job."""
    calls: list[Call] = []
    handle = Broker.handle

    async def recording(self: Broker, call: Call, *args: Any) -> Any:
        calls.append(call)
        return await handle(self, call, *args)

    monkeypatch.setattr(Broker, "handle", recording)
    return calls


async def test_one_fork_server_runs_every_evaluation_in_flight_at_once() -> None:
    waiting = {"now": 0, "max": 0}
    all_in = asyncio.Event()

    async def verify(request: VerifyRequest) -> bool:
        waiting["now"] += 1
        waiting["max"] = max(waiting["max"], waiting["now"])
        if waiting["now"] == 12:
            all_in.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_in.wait(), timeout=10)
        waiting["now"] -= 1
        return True

    async with WorkerPool(None, LIMITS, ScriptedBackend(extract=extract, verify=verify)) as pool:
        outcomes = await asyncio.gather(
            *(pool.evaluate(job("normal", f"answer_{i}")) for i in range(12))
        )
        assert pool.server is not None
        servers = {pool.server.launch.process.pid}
    assert [o.status for o in outcomes] == ["complete"] * 12
    assert waiting["max"] == 12 and len(servers) == 1


async def test_the_jobs_cap_limits_evaluations_in_flight() -> None:
    waiting = {"now": 0, "max": 0}

    async def verify(request: VerifyRequest) -> bool:
        waiting["now"] += 1
        waiting["max"] = max(waiting["max"], waiting["now"])
        await asyncio.sleep(0.05)
        waiting["now"] -= 1
        return True

    async with WorkerPool(2, LIMITS, ScriptedBackend(extract=extract, verify=verify)) as pool:
        outcomes = await asyncio.gather(
            *(pool.evaluate(job("normal", f"answer_{i}")) for i in range(5))
        )
    assert [o.status for o in outcomes] == ["complete"] * 5
    assert waiting["max"] <= 2


async def test_a_jobs_frames_never_pass_through_the_fork_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    control: list[bytes] = []
    send = pool_module.ForkServer._send
    decode = pool_module.decode

    async def sending(self: Any, data: bytes, fds: list[int]) -> None:
        control.append(data[HEADER_SIZE:])
        await send(self, data, fds)

    def decoding(body: bytes) -> Any:
        control.append(body)
        return decode(body)

    monkeypatch.setattr(pool_module.ForkServer, "_send", sending)
    monkeypatch.setattr(pool_module, "decode", decoding)
    backend = ScriptedBackend(extract=extract)
    async with WorkerPool(None, LIMITS, backend, Pages()) as pool:
        outcome = await pool.evaluate(job("two_sources"))
    assert outcome.status == "complete", outcome.errors
    assert len(backend.calls) >= 3
    types = [json.loads(body)["type"] for body in control]
    assert sorted(set(types)) == ["job_end", "ready", "spawn"]
    # `ready` lists the fork server's code files, once; every other frame is a few bytes
    small = [frame for frame in control if json.loads(frame)["type"] != "ready"]
    assert sum(len(frame) for frame in small) < 4096
    assert not any(b"unique-answer-marker" in frame or b"Paris" in frame for frame in control)


async def test_the_parent_attaches_cited_pages_and_the_answer(recorded_calls: list[Call]) -> None:
    backend = ScriptedBackend(extract=extract)
    async with WorkerPool(None, LIMITS, backend, Pages()) as pool:
        outcome = await pool.evaluate(job("two_sources"))
    assert outcome.status == "complete", outcome.errors
    sent = json.dumps([call.payload for call in recorded_calls])
    assert "unique-answer-marker" not in sent and "Paris is the capital of France." not in sent
    assert {call.method for call in recorded_calls} == {"extract_page", "verify", "verify_sources"}
    page_extract = next(c for c in backend.calls if isinstance(c, ExtractRequest))
    assert page_extract.source == "https://a" and page_extract.source_text == PAGE_A
    assert page_extract.images == ["c2hvdA=="]
    checks = [c for c in backend.calls if isinstance(c, VerifyRequest)]
    assert all(check.answer == ANSWER for check in checks)
    on_a = next(c for c in checks if c.sources == ["https://a"])
    assert on_a.page_texts == [PAGE_A] and on_a.images == ["c2hvdA=="]


async def test_sandboxed_requests_equal_the_in_process_ones() -> None:
    from toolkit.runner.builder import judge_executor

    def verify(request: VerifyRequest) -> bool:
        return request.sources != ["https://a"]  # both pages of the wave are checked

    requests = {}
    for isolation in ("sandbox", "in_process"):
        backend = ScriptedBackend(extract=extract, verify=verify)
        async with judge_executor(
            backend, isolation=isolation, pages=Pages(), limits=LIMITS
        ) as executor:
            outcome = await executor.evaluate(job("two_sources"))
        assert outcome.status == "complete", outcome.errors
        requests[isolation] = sorted(
            c.model_dump_json(exclude={"template_class"}) for c in backend.calls
        )
    assert requests["sandbox"] == requests["in_process"]


async def test_a_call_the_judge_stops_waiting_for_is_cancelled_at_the_parent() -> None:
    seen: dict[str, Any] = {"cancelled": False}

    async def verify(request: VerifyRequest) -> bool:
        if request.claim == "slow claim":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                seen["cancelled"] = True
                raise
        seen["cancelled_before_next_call"] = seen["cancelled"]
        return True

    async with WorkerPool(None, LIMITS, ScriptedBackend(verify=verify)) as pool:
        outcome = await asyncio.wait_for(pool.evaluate(job("gives_up")), timeout=15)
    assert outcome.summary is not None, outcome.errors
    assert seen["cancelled_before_next_call"] is True


async def test_a_reply_read_but_never_taken_is_cancelled_at_the_parent_as_one_not_yet_read() -> (
    None
):
    """The judge stopped waiting for a call whose reply the job had read but not yet handed
    to it: the verification got no verdict all the same, so the parent is told, and cancels
    what the call left running (a claim's wave partners), as for a reply still on its way."""
    parent, child = socket.socketpair()
    loop = asyncio.get_running_loop()
    parent.setblocking(False)
    frames = FrameBuffer()

    async def next_frame() -> Any:
        while True:
            bodies = frames.feed(await loop.sock_recv(parent, 65536))
            if bodies:
                assert len(bodies) == 1
                return decode(bodies[0])

    channel = await Channel.open(child)
    await loop.sock_sendall(parent, encode(JobStart(job=EvalJob(judge_path="j.py", answer=""))))
    await channel.job()
    verifying = asyncio.ensure_future(channel.call("verify_sources", {}))
    call = await next_frame()
    parent.setblocking(True)
    parent.sendall(encode(Reply(call_id=call.call_id, result={"passed": True})))
    parent.setblocking(False)
    await asyncio.sleep(0)  # the job reads the reply (this turn)...
    await asyncio.sleep(0)
    verifying.cancel()  # ...and the judge gives up before the verdict reaches it
    with contextlib.suppress(asyncio.CancelledError):
        await verifying
    later = asyncio.ensure_future(channel.call("verify", {}))
    assert await next_frame() == Cancel(call_id=call.call_id)
    later.cancel()
    parent.close()
    child.close()


async def test_a_judge_cannot_signal_or_write_into_the_fork_server_or_sibling_jobs() -> None:
    siblings_waiting = asyncio.Event()
    probed = asyncio.Event()

    async def verify(request: VerifyRequest) -> bool:
        if "The probes ran" in request.claim:
            probed.set()
        else:
            siblings_waiting.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(probed.wait(), timeout=15)
        return True

    async def neighbours_after_siblings(pool: WorkerPool) -> Any:
        await siblings_waiting.wait()
        return await pool.evaluate(job("neighbours", "hostile"))

    backend = ScriptedBackend(extract=extract, verify=verify)
    async with WorkerPool(None, LIMITS, backend) as pool:
        *siblings, hostile = await asyncio.gather(
            *(pool.evaluate(job("normal", f"answer_{i}")) for i in range(3)),
            neighbours_after_siblings(pool),
        )
        after = await pool.evaluate(job("normal", "after"))
    found = hostile.summary["eval_breakdown"][0]["info"][0]["probes"]
    assert len(found) == 9
    assert all(text.startswith("rc=-1") for text in found.values()), found
    assert [o.status for o in siblings] == ["complete"] * 3
    assert hostile.status == "complete" and after.status == "complete"


def test_the_job_filter_is_bound_to_the_jobs_own_pid_and_refuses_a_filter_without_one() -> None:
    program = seccomp.job_filter(allow_network=False)
    bound = seccomp.bind_self(program, 4242)
    placeholder = struct.pack("=I", seccomp.SELF_PLACEHOLDER)
    instructions = [program[i : i + 8] for i in range(0, len(program), 8)]
    assert any(ins[4:] == placeholder for ins in instructions)  # libseccomp may share the test
    assert placeholder not in [bound[i + 4 : i + 8] for i in range(0, len(bound), 8)]
    assert len(bound) == len(program)
    with pytest.raises(ValueError, match="placeholder"):
        seccomp.bind_self(seccomp.sandbox_filter(), 4242)


async def test_sandboxed_judges_get_registrable_domains_from_the_suffix_list() -> None:
    """The fork server builds the suffix list once it is idle; a job forked before that builds
    it itself (a file read, allowed by every guard), one forked after inherits it. Which of
    the two each job here is depends on timing: both must give the same domains."""
    backend = ScriptedBackend(extract=extract, verify=lambda request: True)
    async with WorkerPool(None, LIMITS, backend) as pool:
        first = await pool.evaluate(job("domains"))
        await asyncio.sleep(0.5)  # the server is idle: its warm-up runs
        later = await pool.evaluate(job("domains", "answer_2"))
    for outcome in (first, later):
        assert outcome.status == "complete", outcome.errors
        assert outcome.summary is not None and outcome.summary["final_score"] == 1.0
