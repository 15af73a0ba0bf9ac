"""The channel between a sandboxed judge and the parent's broker: fidelity, errors, concurrency."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.fixtures.runner.helpers import HOSTILE_JUDGES, fixture_job, run_in_sandbox
from toolkit.backends import ExtractRequest, ScriptedBackend, Verdict, VerifyRequest
from toolkit.errors import BudgetExceeded, InfraError
from toolkit.pages import PageRecord, PageStore
from toolkit.runner.judging import evaluate_job
from toolkit.runner.loader import Judge, load_judge
from toolkit.runner.page_reads import RecordingPages, recording_page_reads
from toolkit.sandbox.broker import Broker
from toolkit.sandbox.protocol import (
    MAX_FRAME_BYTES,
    Call,
    EvalJob,
    EvalOutcome,
    FrameBuffer,
    ProtocolError,
    Reply,
    SandboxLimits,
    decode,
    encode,
)

LIMITS = SandboxLimits(timeout_s=5)
ANSWER = "The capital is Paris (https://a)."


class Pages:
    """A page source with screenshots: one known page, everything else missing."""

    def get(self, url: str) -> str | None:
        return "Paris is the capital of France." if url == "https://a" else None

    async def screenshot(self, url: str) -> str | None:
        return "aGVsbG8=" if url == "https://a" else None


def extract(request: ExtractRequest) -> dict:
    """The scripted extraction: only the fields the requested template has (output is strict)."""
    values = {"city": "Paris", "url": "https://a"}
    return {name: values[name] for name in request.output_schema["properties"] if name in values}


def job(name: str) -> EvalJob:
    return fixture_job(name, ANSWER, agent_name="agent", answer_name="answer_1")


async def sandboxed(name: str, backend, pages=None, tools=None) -> EvalOutcome:
    return await run_in_sandbox(job(name), backend, pages=pages, limits=LIMITS, tools=tools)


def kinds(outcome: EvalOutcome) -> list[str]:
    return [error["kind"] for error in outcome.errors]


def leaf(outcome: EvalOutcome, node_id: str) -> dict:
    return leaf_of(outcome.summary, node_id)


def leaf_of(summary: dict, node_id: str) -> dict:
    tree = summary["eval_breakdown"][0]["verification_tree"]
    stack = [tree]
    while stack:
        node = stack.pop()
        if node["id"] == node_id:
            return node
        stack.extend(node["children"])
    raise AssertionError(f"no node {node_id}")


async def test_summary_equals_the_in_process_run_with_the_same_backend() -> None:
    def verify(request: VerifyRequest) -> bool:
        return bool(request.sources) or "Paris" in request.claim

    local_backend = ScriptedBackend(extract=extract, verify=verify)
    judge = load_judge(HOSTILE_JUDGES / "normal.py")
    expected, _ = await judge.run(
        backend=local_backend,
        answer=ANSWER,
        pages=Pages(),
        agent_name="agent",
        answer_name="answer_1",
    )
    remote_backend = ScriptedBackend(extract=extract, verify=verify)
    outcome = await sandboxed("normal", remote_backend, Pages())
    assert outcome.status == "complete"
    assert outcome.summary == expected
    local_calls = [c.model_dump(exclude={"template_class"}) for c in local_backend.calls]
    assert [c.model_dump(exclude={"template_class"}) for c in remote_backend.calls] == local_calls


async def test_extract_request_crosses_without_its_template_class() -> None:
    backend = ScriptedBackend(extract=extract)
    outcome = await sandboxed("normal", backend, Pages())
    request = backend.calls[0]
    assert outcome.status == "complete"
    assert isinstance(request, ExtractRequest) and request.template_class is None
    assert request.schema_name == "Capital" and "city" in request.output_schema["properties"]
    assert request.source_text == ANSWER


async def test_parent_backend_returning_a_model_reaches_the_judge_as_its_template() -> None:
    class Whatever(BaseModel):
        city: str
        url: str

    backend = ScriptedBackend(extract=lambda r: Whatever(city="Paris", url="https://a"))
    outcome = await sandboxed("normal", backend, Pages())
    assert outcome.status == "complete"
    assert outcome.summary["eval_breakdown"][0]["info"][0] == {
        "capital": {"city": "Paris", "url": "https://a"}
    }


async def test_page_text_and_screenshot_come_from_the_parents_page_source() -> None:
    backend = ScriptedBackend(extract=extract)
    await sandboxed("normal", backend, Pages())
    cited = [c for c in backend.calls if isinstance(c, VerifyRequest) and c.sources]
    assert cited[0].page_texts == ["Paris is the capital of France."]
    assert cited[0].images == ["aGVsbG8="]


async def test_mind2web2_verification_options_reach_the_parents_backend() -> None:
    backend = ScriptedBackend(extract=extract)
    outcome = await sandboxed("m2w2_options", backend, Pages())
    assert outcome.status == "complete", outcome.errors
    verifications = [c for c in backend.calls if isinstance(c, VerifyRequest)]
    assert [(c.sources, c.trials, c.screenshots) for c in verifications] == [
        ([], 5, True),
        (["https://a"], 1, False),
    ]


async def test_infra_error_in_the_parent_backend_marks_the_node_error_and_the_outcome_incomplete() -> (
    None
):
    def verify(request: VerifyRequest) -> Verdict:
        if request.sources:
            raise InfraError("provider overloaded after 3 retries", kind="llm")
        return Verdict(passed=True)

    outcome = await sandboxed("normal", ScriptedBackend(extract=extract, verify=verify), Pages())
    assert outcome.status == "incomplete"
    assert leaf(outcome, "cited")["status"] == "error"
    assert "provider overloaded" in leaf(outcome, "cited")["error"]
    assert leaf(outcome, "plain")["status"] == "passed"
    assert [e["kind"] for e in outcome.summary["errors"]] == ["llm"]
    assert outcome.summary["status"] == "incomplete"


async def test_budget_exceeded_in_the_parent_reaches_the_judge_as_budget_exceeded() -> None:
    def broke(request: ExtractRequest) -> dict:
        raise BudgetExceeded("budget of $1.00 reached")

    outcome = await sandboxed("normal", ScriptedBackend(extract=broke), Pages())
    assert outcome.status == "incomplete"
    assert outcome.errors[0]["type"] == "BudgetExceeded"
    assert outcome.errors[0]["kind"] == "budget"
    assert "budget of $1.00 reached" in outcome.errors[0]["message"]


async def test_any_backend_exception_becomes_an_infra_error_in_the_judge() -> None:
    def crash(request: VerifyRequest) -> Verdict:
        raise RuntimeError("connection reset")

    outcome = await sandboxed("normal", ScriptedBackend(extract=extract, verify=crash), Pages())
    assert outcome.status == "incomplete"
    assert leaf(outcome, "plain")["status"] == "error"
    assert "RuntimeError: connection reset" in leaf(outcome, "plain")["error"]
    assert {e["kind"] for e in outcome.summary["errors"]} == {"backend"}


async def test_concurrent_verifications_in_one_judge_run_concurrently_over_the_channel() -> None:
    in_flight = {"now": 0, "max": 0}
    all_five = asyncio.Event()

    async def verify(request: VerifyRequest) -> bool:
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        if in_flight["now"] == 5:
            all_five.set()
        await all_five.wait()  # never set unless five run at once: the job is then killed
        in_flight["now"] -= 1
        return True

    outcome = await sandboxed("concurrent", ScriptedBackend(verify=verify))
    assert outcome.status == "complete"
    assert in_flight["max"] == 5
    assert outcome.summary["final_score"] == 1.0


async def test_tool_calls_reach_the_parents_tool_providers() -> None:
    received = []

    async def distance(**args) -> int:
        received.append(args)
        return 42

    outcome = await sandboxed(
        "uses_tool", ScriptedBackend(), tools={"maps.calculate_distance": distance}
    )
    assert outcome.status == "complete"
    assert received == [{"address1": "A", "address2": "B"}]
    assert outcome.summary["final_score"] == 1.0


async def test_a_tool_without_a_provider_is_an_infra_error() -> None:
    outcome = await sandboxed("uses_tool", ScriptedBackend())
    assert outcome.status == "incomplete"
    assert kinds(outcome) == ["tool"]
    assert "maps.calculate_distance" in outcome.errors[0]["message"]


async def test_broker_turns_exceptions_into_error_replies() -> None:
    def verify(request: VerifyRequest) -> Verdict:
        raise InfraError("rate limited", kind="llm")

    broker = Broker(ScriptedBackend(verify=verify))
    call = Call(call_id=7, method="verify", payload={"claim": "x"})
    reply = await broker.handle(call)
    assert reply.call_id == 7 and reply.result is None
    assert reply.error == {"type": "InfraError", "kind": "llm", "message": "rate limited"}


async def test_broker_answers_page_calls_without_a_page_source_as_missing() -> None:
    broker = Broker(ScriptedBackend())
    reply = await broker.handle(Call(call_id=1, method="page_get", payload={"url": "u"}))
    assert reply.error is None and reply.result is None


async def test_a_whole_page_read_of_a_source_without_one_is_hashed_as_reads_are_noted() -> None:
    """A source that is not a page store (no `stored_page`) is read text, then screenshot,
    and each is hashed as `RecordingPages` notes it: the hashes are of what is served."""
    broker = Broker(ScriptedBackend(), Pages())

    async def whole(url: str) -> Reply:
        return await broker.handle(Call(call_id=1, method="page_stored", payload={"url": url}))

    with recording_page_reads() as log:
        pages = RecordingPages(Pages())
        await pages.get("https://a")
        await pages.screenshot("https://a")
    noted = log.reads()
    reply = await whole("https://a")
    assert reply.error is None and reply.result == {
        "text": "Paris is the capital of France.",
        "text_hash": noted.read["https://a"],
        "screenshot": "aGVsbG8=",
        "screenshot_hash": noted.shots["https://a"],
    }
    assert (await whole("https://missing")).result is None
    no_pages = Broker(ScriptedBackend())
    reply = await no_pages.handle(Call(call_id=2, method="page_stored", payload={"url": "u"}))
    assert reply.error is None and reply.result is None


async def test_a_whole_page_read_of_a_page_store_is_its_one_row_read(tmp_path: Path) -> None:
    """What the store serves a check (`stored_page`), never its text and screenshot read
    apart (a capture rewritten between them would pair two captures)."""
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web("https://a.org/", "Page A", b"\xff\xd8jpeg-a"))
    store = PageStore(tmp_path / "pages", readonly=True)

    def separately(url: str) -> None:
        raise AssertionError("read the text and the screenshot of a page store separately")

    broker = Broker(ScriptedBackend(), store)
    store.get = store.screenshot = separately  # type: ignore[method-assign]
    call = Call(call_id=1, method="page_stored", payload={"url": "https://a.org/"})
    reply = await broker.handle(call)
    assert reply.error is None
    assert reply.result == dataclasses.asdict(store.stored_page("https://a.org/"))
    store.close()


def test_frames_round_trip_and_split_on_boundaries() -> None:
    frames = encode(Reply(call_id=1, result={"a": 1})) + encode(Reply(call_id=2, result=[1, 2]))
    buffer = FrameBuffer()
    bodies = buffer.feed(frames[:7]) + buffer.feed(frames[7:])
    assert [decode(body).call_id for body in bodies] == [1, 2]
    assert not buffer.pending


def test_a_frame_with_another_protocol_version_is_rejected() -> None:
    with pytest.raises(ProtocolError, match="protocol version"):
        decode(b'{"type": "reply", "version": 99, "call_id": 1}')


def test_an_oversized_frame_header_is_rejected() -> None:
    header = (MAX_FRAME_BYTES + 1).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="exceeds"):
        FrameBuffer().feed(header)


async def test_mind2web2_style_judge_gives_the_same_summary_as_in_process() -> None:
    local = ScriptedBackend(extract=extract)
    judge = load_judge(HOSTILE_JUDGES / "m2w2_style.py")
    expected, _ = await judge.run(
        backend=local, answer=ANSWER, agent_name="agent", answer_name="answer_1"
    )
    outcome = await sandboxed("m2w2_style", ScriptedBackend(extract=extract))
    assert outcome.status == "complete"
    assert outcome.summary == expected and expected["final_score"] == 1.0


async def test_backend_error_messages_reach_the_judge_without_credentials(monkeypatch) -> None:
    canary = "sk-ant-canary-5e1d7a"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)

    def leaky(request: VerifyRequest) -> Verdict:
        raise RuntimeError(f"401 unauthorized for key {canary}")

    outcome = await sandboxed("normal", ScriptedBackend(extract=extract, verify=leaky), Pages())
    assert outcome.status == "incomplete"
    assert "[REDACTED]" in outcome.summary["errors"][0]["message"]
    assert canary not in outcome.model_dump_json()


async def test_the_parent_answers_at_most_256_calls_of_one_job_at_once() -> None:
    in_flight = {"now": 0, "max": 0}
    cap_reached = asyncio.Event()

    async def verify(request: VerifyRequest) -> bool:
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        if in_flight["now"] == 256:
            cap_reached.set()
        await cap_reached.wait()  # never set unless 256 run at once: the job is then killed
        in_flight["now"] -= 1
        return True

    outcome = await run_in_sandbox(
        job("floods_calls"), ScriptedBackend(verify=verify), limits=SandboxLimits(timeout_s=20)
    )
    assert outcome.status == "complete" and outcome.summary["final_score"] == 1.0
    assert in_flight["max"] == 256


class PartnerLags:
    """Pages a and b; page a supports every claim at once, page b's check answers only once
    released (or fails, with `fail`): the claim's wave partner outlives its verdict."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.release = asyncio.Event()
        self.finished: list[str] = []

    def get(self, url: str) -> str | None:
        return {"https://a": "Paris is the capital.", "https://b": "Lyon is a city."}.get(url)

    async def verify(self, request: VerifyRequest) -> bool:
        if request.sources == ["https://b"]:
            await self.release.wait()
            if self.fail:
                raise InfraError("the provider failed on page b", kind="llm")
        self.finished.append(request.sources[0] if request.sources else "plain")
        return True


def released_by_the_plain_claim(lags: PartnerLags) -> Callable[[VerifyRequest], Awaitable[bool]]:
    """`lags.verify`, with page b's check released once the judge's claim without cited
    pages is answered, a loop turn after it is asked (so after a judge that left it running
    returned): page b's check outlives the verdict it was the partner of, however loaded the
    machine, and a verdict that waited for it would never come."""

    async def verify(request: VerifyRequest) -> bool:
        if request.sources:
            return await lags.verify(request)
        await asyncio.sleep(0)
        passed = await lags.verify(request)
        lags.release.set()
        return passed

    return verify


async def judged(
    where: str, name: str, backend: ScriptedBackend, pages: PartnerLags
) -> EvalOutcome:
    """The outcome of fixture judge `name` run `where` ("in process" or "sandboxed")."""
    if where == "sandboxed":
        return await sandboxed(name, backend, pages)

    async def load() -> Judge:
        return load_judge(HOSTILE_JUDGES / f"{name}.py")

    return await evaluate_job(load, job(name), backend=backend, pages=pages, tools=None)


async def test_a_judge_s_run_waits_for_the_wave_partner_its_verdict_did_not_wait_for() -> None:
    lags = PartnerLags()
    backend = ScriptedBackend(extract=extract, verify=lags.verify)
    judge = load_judge(HOSTILE_JUDGES / "two_sources.py")
    run = asyncio.ensure_future(judge.run(backend=backend, answer=ANSWER, pages=lags))
    for _ in range(200):
        if "plain" in lags.finished:
            break
        await asyncio.sleep(0)
    assert "plain" in lags.finished and not run.done()  # judged on, partner still running
    lags.release.set()
    summary, _ = await run
    assert summary["status"] == "complete" and "https://b" in lags.finished


async def test_a_wave_partner_failing_after_the_verdict_is_recorded_alike_sandboxed_and_not() -> (
    None
):
    summaries = []
    for where in ("in process", "sandboxed"):
        lags = PartnerLags(fail=True)
        lags.release.set()
        backend = ScriptedBackend(extract=extract, verify=lags.verify)
        if where == "sandboxed":  # the parent's record of it, the job having sent its summary
            outcome = await sandboxed("two_sources", backend, lags)
            assert outcome.status == "incomplete" and outcome.errors == []
            summaries.append(outcome.summary)
        else:
            judge = load_judge(HOSTILE_JUDGES / "two_sources.py")
            summary, _ = await judge.run(
                backend=backend,
                answer=ANSWER,
                pages=lags,
                agent_name="agent",
                answer_name="answer_1",
            )
            summaries.append(summary)
    in_process, sandboxed_summary = summaries
    assert sandboxed_summary == in_process
    assert in_process["status"] == "incomplete"
    (entry,) = in_process["errors"]
    assert entry["target"] == "cited" and "the provider failed on page b" in entry["message"]
    assert leaf_of(in_process, "cited")["status"] == "passed"  # the verdict the judge went on with


async def test_a_sandboxed_evaluation_ends_after_the_wave_partner_its_verdict_did_not_wait_for() -> (
    None
):
    lags = PartnerLags()
    backend = ScriptedBackend(extract=extract, verify=released_by_the_plain_claim(lags))
    outcome = await sandboxed("two_sources", backend, lags)  # a verdict that waited: killed
    assert outcome.status == "complete", outcome.errors
    assert lags.finished.index("plain") < lags.finished.index("https://b")  # judged on meanwhile


async def test_a_wave_partner_outliving_the_deadline_leaves_the_finished_judge_s_tree() -> None:
    """The judge returned its summary; only a check its verdict did not wait for ran past the
    evaluation's deadline. The result is incomplete (a timeout) with the tree the judge
    built, as in process, not a judge said to be killed with nothing of its work kept."""
    lags = PartnerLags()  # page b's check is never released
    backend = ScriptedBackend(extract=extract, verify=lags.verify)
    outcome = await run_in_sandbox(
        job("two_sources"), backend, pages=lags, limits=SandboxLimits(timeout_s=1)
    )
    assert outcome.status == "incomplete"
    assert kinds(outcome) == ["timeout"]
    assert "killed" not in outcome.errors[0]["message"]
    assert outcome.summary is not None and outcome.summary["status"] == "incomplete"
    assert leaf(outcome, "cited")["status"] == "passed"
    assert leaf(outcome, "named")["status"] == "passed"


async def test_a_claim_whose_check_failed_notes_the_same_missing_pages_sandboxed_and_not() -> None:
    def verify(request: VerifyRequest) -> Verdict:
        if request.sources == ["https://a"]:
            raise InfraError("the provider failed on page a", kind="llm")
        return Verdict(passed=True)

    judge = load_judge(HOSTILE_JUDGES / "two_sources.py")
    in_process, _ = await judge.run(
        backend=ScriptedBackend(extract=extract, verify=verify), answer=ANSWER, pages=Pages()
    )
    outcome = await sandboxed(
        "two_sources", ScriptedBackend(extract=extract, verify=verify), Pages()
    )
    assert leaf(outcome, "cited")["status"] == leaf_of(in_process, "cited")["status"] == "error"
    assert outcome.summary["missing_sources"] == in_process["missing_sources"]


@pytest.mark.parametrize("where", ["in process", "sandboxed"])
async def test_a_verification_left_running_is_the_judge_s_error_though_a_wave_partner_outlived_it(
    where: str,
) -> None:
    lags = PartnerLags()  # page b's check ends only after the verdict left running
    backend = ScriptedBackend(extract=extract, verify=released_by_the_plain_claim(lags))
    outcome = await judged(where, "leaves_a_verify_running_while_a_partner_lags", backend, lags)
    assert outcome.status == "incomplete"
    assert "verify_unfinished" in kinds(outcome)


@pytest.mark.parametrize(
    "name",
    ["raises_after_a_wave_partner_lags", "leaves_a_verify_running_while_a_partner_lags"],
    ids=["raised", "left a verification running"],
)
async def test_a_judge_that_did_not_finish_drops_its_failing_wave_partner_alike_sandboxed_and_not(
    name: str,
) -> None:
    """A judge that raised, or returned with a verification running, is incomplete (its own
    error) and will be redone: the checks its verdicts did not wait for are cancelled, not
    waited for, in process and sandboxed, so neither lists a partner's failure."""
    outcomes = []
    for where in ("in process", "sandboxed"):
        lags = PartnerLags(fail=True)  # page b's check fails once the plain claim is answered
        backend = ScriptedBackend(extract=extract, verify=released_by_the_plain_claim(lags))
        outcomes.append(await judged(where, name, backend, lags))
    in_process, sandboxed_outcome = outcomes
    assert kinds(sandboxed_outcome) == kinds(in_process)
    assert in_process.status == sandboxed_outcome.status == "incomplete"
    assert sandboxed_outcome.summary["errors"] == in_process.summary["errors"] == []
    assert leaf(sandboxed_outcome, "cited")["status"] == leaf(in_process, "cited")["status"]


async def test_a_wave_partner_of_a_claim_the_judge_stopped_waiting_for_is_never_settled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parent decided the cited claim (its wave partner left running) but the judge
    cancelled its verification before taking the reply: the leaf is `verify_cancelled`, as
    in process, where a verification cancelled before its verdict leaves no partner behind;
    so no partner's failure is listed next to it."""
    lags = PartnerLags(fail=True)
    decided = asyncio.Event()
    handle = Broker.handle

    async def reply_held(self: Broker, call: Call, *args: Any) -> Reply:
        reply = await handle(self, call, *args)
        if call.method == "verify_sources":  # decided, partner detached: its reply held back
            decided.set()
            lags.release.set()
            await asyncio.Event().wait()
        return reply

    async def verify(request: VerifyRequest) -> bool:
        if not request.sources:  # the judge gives up on the cited claim once this is answered
            await decided.wait()
        return await lags.verify(request)

    monkeypatch.setattr(Broker, "handle", reply_held)
    outcome = await sandboxed("gives_up_on_a_decided_claim", ScriptedBackend(verify=verify), lags)
    assert kinds(outcome) == ["verify_cancelled"]
    assert leaf(outcome, "cited")["status"] == "error"
    assert outcome.summary["errors"] == []
