"""What crosses the boundary between the runner (parent) and the sandbox.

Two kinds of channel: the control channel to the fork server (spawn, kill, how a job ended)
and one direct channel per job process (the job, the judge's calls, their replies, each
sandbox violation as it happens, the outcome); the fork server never sees a job's frames.
Every frame is a 4-byte big-endian length followed by one UTF-8 JSON message; every message
is a pydantic model with a `type` discriminator and a `version`. The parent never trusts a
frame: anything malformed, oversized or out of place ends that job (or the fork server),
never the run.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from toolkit.util.hashing import sha256_bytes, sha256_text

PROTOCOL_VERSION = 7
OUTCOME_VERSION = 1
MAX_FRAME_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")
WITH_ANSWER = "with_answer"  # Call payload key: request fields the parent fills with the answer

CallMethod = Literal[
    "extract",
    "verify",
    "extract_page",
    "verify_sources",
    "page_get",
    "page_screenshot",
    "page_stored",
    "tool",
]
"""The calls a broker answers; `page_stored` is a page's text and screenshot with their hashes
in one read (`toolkit.runner.page_reads.stored_page`), for a node reading through the gateway."""


class ProtocolError(Exception):
    """A frame that is malformed, oversized, of the wrong version or unexpected here."""


class SandboxLimits(BaseModel):
    """Resource limits for one evaluation in a job process."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="Wall-clock seconds per evaluation, time waiting for LLM/page calls included.",
    )
    cpu_s: int = Field(default=300, ge=1, description="CPU seconds per evaluation.")
    memory_mb: int = Field(
        default=2048, ge=64, description="Address space allowed on top of the interpreter's own."
    )
    max_output_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Tail of stdout/stderr kept per evaluation."
    )
    max_file_mb: int = Field(default=64, ge=1, description="Largest file a judge may write.")
    max_open_files: int = Field(default=256, ge=32, description="Open file descriptors.")
    network: bool = Field(default=False, description="Allow network access (never by default).")


class EvalJob(BaseModel):
    """One evaluation: which judge to run on which answer.

    The judge travels as its code (`judge_source`), so what runs is exactly the bytes whose
    hash and approval were checked, whatever happens to the file meanwhile.
    """

    version: int = OUTCOME_VERSION
    judge_path: str = Field(description="Where the judge came from; names it in messages.")
    judge_source: str | None = Field(
        default=None,
        description="The judge's code, exactly what runs; None: executors read judge_path once.",
    )
    judge_sha256: str | None = Field(default=None, description="sha256 of judge_source (UTF-8).")
    answer: str
    agent_name: str = "unknown_agent"
    answer_name: str = "unknown_answer"
    task_id: str | None = None

    def bound(self) -> EvalJob:
        """This job with the judge's code read (when not given) and hashed; the code is then
        what runs. Raises OSError / UnicodeDecodeError for an unreadable judge file."""
        if self.judge_source is None:
            data = Path(self.judge_path).read_bytes()
            update = {"judge_source": data.decode("utf-8"), "judge_sha256": sha256_bytes(data)}
            return self.model_copy(update=update)
        if self.judge_sha256 is None:
            return self.model_copy(update={"judge_sha256": sha256_text(self.judge_source)})
        return self


class EvalOutcome(BaseModel):
    """What an evaluation produced; `incomplete` whenever anything but the verdicts went wrong.

    `summary` is the judge's summary (Evaluator.get_summary shape); for a judge that raised it
    is the partial tree, or None when none exists. Node-level infrastructure errors (a failed
    LLM call the Evaluator caught) stay in `summary["errors"]`; `errors` holds what ended the
    evaluation itself, as dicts with `type`, `kind`, `message` and optionally `traceback`.
    Kinds: the judge's fault: `judge_exception`, `judge_load`, `judge_exit`, `timeout`,
    `cpu_limit`, `memory_limit`, `killed`, `crash`, `sandbox_violation`, `protocol_violation`,
    `summary_not_serializable`, `verify_cancelled` (a verification the judge cancelled before
    its verdict), `verify_unfinished` (one still running when the judge returned);
    infrastructure: `sandbox` (the fork server could not start or
    was lost), `sandbox_required` (a guard not in effect under `--require-sandbox`) and any
    `InfraError` kind raised through the broker (`llm`, `budget`, `tool`, `backend`,
    `channel`, ...).
    """

    version: int = OUTCOME_VERSION
    status: Literal["complete", "incomplete"]
    task_id: str | None = None
    judge_sha256: str | None = Field(default=None, description="sha256 of the code that ran.")
    agent_name: str = "unknown_agent"
    answer_name: str = "unknown_answer"
    summary: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = Field(default_factory=list)
    duration_s: float = 0.0
    cpu_s: float | None = Field(
        default=None,
        description="CPU seconds of the sandboxed job process that ran the judge (its start, "
        "the judge, its exit); None in process, where evaluations share one process.",
    )
    stdout_tail: str = ""
    stderr_tail: str = ""
    guards: list[str] = Field(
        default_factory=list,
        description="Sandbox guards measured in effect for this evaluation (empty in process).",
    )

    @classmethod
    def failure(
        cls,
        job: EvalJob,
        kind: str,
        message: str,
        *,
        error_type: str = "SandboxError",
        **extra: Any,
    ) -> EvalOutcome:
        """An incomplete outcome with a single error and no summary."""
        return cls(
            status="incomplete",
            task_id=job.task_id,
            agent_name=job.agent_name,
            answer_name=job.answer_name,
            errors=[error_dict(error_type, kind, message)],
            **extra,
        )


def error_dict(
    error_type: str, kind: str, message: str, traceback: str | None = None
) -> dict[str, Any]:
    """The one shape of an error entry in `EvalOutcome.errors`."""
    entry: dict[str, Any] = {"type": error_type, "kind": kind, "message": message}
    if traceback:
        entry["traceback"] = traceback
    return entry


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = PROTOCOL_VERSION


# -- the control channel: parent <-> fork server (small frames only) ------------------------


class Ready(_Message):
    """Fork server → parent: the toolkit is imported; jobs may be spawned."""

    type: Literal["ready"] = "ready"
    pid: int
    guards: list[str] = Field(default_factory=list, description="Worker guards, as measured.")
    code: dict[str, tuple[int, int, int] | None] = Field(
        default_factory=dict,
        description="The files its code came from — modules, package folders, the native "
        "libraries it mapped — stamped once imported (`toolkit.util.code_files`): the parent "
        "runs no job on it once one changed.",
    )


class Spawn(_Message):
    """Parent → fork server: fork a job process confined by `limits`, which loads its judge
    only with every one of `required_guards` in effect; the frame carries the job's end of
    its channel to the parent as SCM_RIGHTS ancillary data."""

    type: Literal["spawn"] = "spawn"
    job_id: int
    limits: SandboxLimits
    required_guards: list[str] = Field(
        default_factory=list,
        description="Guards the job must measure in effect (its own and the fork server's), "
        "or it refuses to load the judge (`--require-sandbox`); empty: none required.",
    )


class Kill(_Message):
    """Parent → fork server: kill this job's process group now (it broke the protocol)."""

    type: Literal["kill"] = "kill"
    job_id: int


class JobEnd(_Message):
    """Fork server → parent: the job process is gone; how it ended and what it printed."""

    type: Literal["job_end"] = "job_end"
    job_id: int
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""
    cpu_s: float | None = Field(
        default=None, description="CPU seconds (user + system) the job process used in all."
    )


# -- the job channel: parent <-> one job process, directly ----------------------------------


class JobStart(_Message):
    """Parent → job: the evaluation to run (the first frame on the job's channel)."""

    type: Literal["job"] = "job"
    job: EvalJob
    backend_model: str | None = Field(default=None, description="The parent backend's `model`.")
    backend_extract_model: str | None = None
    pages: bool = Field(default=False, description="The parent has a page source.")
    screenshots: bool = Field(default=False, description="The page source offers screenshots.")
    judge_code: str | None = Field(
        default=None,
        description="The judge's source compiled by the parent (`loader.code_to_text`); None: "
        "the job compiles it.",
    )


class JobGuards(_Message):
    """Job → parent, its first frame: the job guards it measured in effect, sent before any
    judge code is loaded. The parent records these (and the fork server's `Ready.guards`),
    never what the judge's process says later."""

    type: Literal["job_guards"] = "job_guards"
    guards: list[str] = Field(default_factory=list)


class Call(_Message):
    """Job → parent: a judge's backend, page or tool request; answered by a `Reply`."""

    type: Literal["call"] = "call"
    call_id: int
    method: CallMethod
    payload: dict[str, Any] = Field(default_factory=dict)


class Cancel(_Message):
    """Job → parent: the judge no longer waits for this call (e.g. a cancelled wave partner);
    the parent stops working on it and sends no reply."""

    type: Literal["cancel"] = "cancel"
    call_id: int


class Reply(_Message):
    """Parent → job: the result of a `Call`, or the error it raised (type, kind, message)."""

    type: Literal["reply"] = "reply"
    call_id: int
    result: Any = None
    error: dict[str, Any] | None = None


class Violation(_Message):
    """Job → parent: the audit hook refused something, sent before the judge's code goes on;
    the parent records it whatever the job's outcome says later."""

    type: Literal["violation"] = "violation"
    message: str = Field(max_length=2000)


class Outcome(_Message):
    """Job → parent: the evaluation's outcome, sent once."""

    type: Literal["outcome"] = "outcome"
    outcome: EvalOutcome


Message = Annotated[
    Ready
    | Spawn
    | Kill
    | JobEnd
    | JobStart
    | JobGuards
    | Call
    | Cancel
    | Reply
    | Violation
    | Outcome,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Message)


def encode(message: _Message) -> bytes:
    """One frame: length prefix plus the message's JSON."""
    body = message.model_dump_json().encode()
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    """Parse one frame body into its message model; ProtocolError when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # nested too deep to parse: not a message
        raise ProtocolError(f"frame is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != PROTOCOL_VERSION:
        raise ProtocolError(f"frame has no or a wrong protocol version (want {PROTOCOL_VERSION})")
    try:
        return _ADAPTER.validate_python(data)
    except ValueError as exc:
        raise ProtocolError(f"invalid message: {str(exc)[:500]}") from None


def frame_length(header: bytes) -> int:
    """The body length a header announces; ProtocolError when it exceeds the cap."""
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"announced frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    return length


HEADER_SIZE = _HEADER.size


READ_BUFFER_BYTES = 64 * 1024
"""What a job channel reads into at a time (a larger frame gets a buffer of its own size)."""


class FrameProtocol(asyncio.BufferedProtocol):
    """One end of a job channel: decodes each frame the moment it is read and hands the message
    to `on_message`, in the event-loop callback that read it.

    No reader task to wake and no `asyncio.StreamReader` in between, and the socket is read
    into one reused buffer: asyncio's plain transports allocate 256 KiB per read, which is an
    mmap and a munmap per frame once the allocator serves that size from the system. Every
    frame still goes through `decode` (version, type, fields). `on_message` may raise
    ProtocolError to refuse a message; the first refused or malformed frame, or the end of the
    stream, settles `ended` (None at a clean end, else the ProtocolError or OSError) and nothing
    read later is handed on. `pause` / `resume` stop and restart the hand-over (frames already
    read wait in the buffer). `write` and `drain` send frames with the transport's flow control.
    """

    def __init__(self, on_message: Callable[[Any], None]) -> None:
        self._on_message = on_message
        self._buffer = bytearray(READ_BUFFER_BYTES)
        self._start = self._end = 0
        self._paused = self._eof = False
        self._writable: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.ended: asyncio.Future[BaseException | None] = (
            asyncio.get_running_loop().create_future()
        )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.ended.done():
            self._start = self._end = 0  # what still arrives after the end is dropped
        elif self._end == len(self._buffer):
            self._make_room()
        return memoryview(self._buffer)[self._end :]

    def _make_room(self) -> None:
        """Move the partial frame to the front of a fresh buffer that can hold all of it (a
        new one each time: the transport may still hold a view of the old)."""
        pending = self._end - self._start
        needed = READ_BUFFER_BYTES
        if pending >= HEADER_SIZE:
            needed = HEADER_SIZE + frame_length(
                bytes(self._buffer[self._start : self._start + HEADER_SIZE])
            )
        buffer = bytearray(max(needed, pending + 1, READ_BUFFER_BYTES))
        buffer[:pending] = self._buffer[self._start : self._end]
        self._buffer, self._start, self._end = buffer, 0, pending

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        self._hand_over()

    def _hand_over(self) -> None:
        """Decode and hand on every complete frame in the buffer, unless paused or ended; at
        the end of the stream, once they are handed on, settle `ended`."""
        try:
            while not self._paused and not self.ended.done():
                if self._end - self._start < HEADER_SIZE:
                    break
                length = frame_length(bytes(self._buffer[self._start : self._start + HEADER_SIZE]))
                stop = self._start + HEADER_SIZE + length
                if stop > self._end:
                    break
                body = bytes(self._buffer[self._start + HEADER_SIZE : stop])
                self._start = stop
                self._on_message(decode(body))
        except ProtocolError as exc:
            self._finish(exc)
        if self._start == self._end:
            self._start = self._end = 0
        if self._eof and not self._paused:
            partial = self._end > self._start
            self._finish(ProtocolError("stream ended inside a frame") if partial else None)

    def pause(self) -> None:
        """Hand on no more messages (and read no more) until `resume`."""
        self._paused = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def resume(self) -> None:
        """Hand on the frames read meanwhile, then read on."""
        if not self._paused:
            return
        self._paused = False
        self._hand_over()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._hand_over()
        return True  # keep the other direction open, as a stream reader's end does

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            self.eof_received()
        else:
            self._finish(exc)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def _finish(self, result: BaseException | None) -> None:
        if self.ended.done():
            return
        self.ended.set_result(result)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()  # nothing read later is handed on

    def write(self, frame: bytes) -> None:
        """Queue one whole frame; OSError when the channel is closed."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the channel is closed")
        self.transport.write(frame)

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    async def drain(self) -> None:
        """Wait until the transport takes more (it buffers beyond its high-water mark)."""
        if self._writable is not None:
            await self._writable


class FrameBuffer:
    """Splits a byte stream into complete frame bodies (for the fork server's selector loop)."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add bytes; return every frame body completed by them."""
        self._data += chunk
        bodies: list[bytes] = []
        while len(self._data) >= HEADER_SIZE:
            length = frame_length(bytes(self._data[:HEADER_SIZE]))
            if len(self._data) < HEADER_SIZE + length:
                break
            bodies.append(bytes(self._data[HEADER_SIZE : HEADER_SIZE + length]))
            del self._data[: HEADER_SIZE + length]
        return bodies

    @property
    def pending(self) -> bool:
        """True when a partial frame is buffered."""
        return bool(self._data)


class OutputTail:
    """The last `limit` bytes of a process's stdout or stderr (what `*_tail` fields carry)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        """Append `chunk`, dropping the oldest bytes beyond the limit."""
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        """The tail decoded as UTF-8 (invalid bytes replaced)."""
        return self.data.decode(errors="replace")
