"""How a job channel reads frames (`FrameProtocol`): each message decoded and handed on as it
is read, one reused buffer, the first bad frame ends the channel, and pausing holds the rest."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from toolkit.sandbox.protocol import (
    READ_BUFFER_BYTES,
    FrameProtocol,
    ProtocolError,
    Reply,
    decode,
    encode,
)


async def channel(on_message: Any, protocol: type[FrameProtocol] = FrameProtocol) -> Any:
    """(the protocol reading one end of a socket pair, the other end, blocking)."""
    ours, theirs = socket.socketpair()
    reading = protocol(on_message)
    await asyncio.get_running_loop().create_unix_connection(lambda: reading, sock=ours)
    return reading, theirs


async def until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("timed out")


def reply(call_id: int, result: Any = None) -> bytes:
    return encode(Reply(call_id=call_id, result=result))


async def test_frames_split_across_reads_or_larger_than_the_buffer_arrive_whole_in_order() -> None:
    got: list[Reply] = []
    reading, theirs = await channel(got.append)
    big = "x" * (3 * READ_BUFFER_BYTES)
    data = reply(1, "a") + reply(2, big) + reply(3, [1, 2])
    for start in range(0, len(data), 50_000):
        theirs.sendall(data[start : start + 50_000])
        await asyncio.sleep(0)
    theirs.sendall(reply(4)[:3])  # half a header, then the rest
    await asyncio.sleep(0.01)
    theirs.sendall(reply(4)[3:])
    await until(lambda: len(got) == 4)
    assert [m.call_id for m in got] == [1, 2, 3, 4]
    assert got[1].result == big and got[2].result == [1, 2]
    theirs.close()
    assert await asyncio.wait_for(reading.ended, 5) is None


async def test_small_frames_are_read_into_one_reused_buffer() -> None:
    buffers: set[int] = set()

    class Watching(FrameProtocol):
        def get_buffer(self, sizehint: int) -> memoryview:
            view = super().get_buffer(sizehint)
            buffers.add(id(view.obj))
            return view

    got: list[Reply] = []
    reading, theirs = await channel(got.append, Watching)
    for call_id in range(200):
        theirs.sendall(reply(call_id, {"passed": True}))
        await until(lambda n=call_id: len(got) == n + 1)
    assert len(buffers) == 1 and not reading.ended.done()
    theirs.close()


async def test_a_stream_ending_inside_a_frame_breaks_the_protocol() -> None:
    reading, theirs = await channel(lambda message: None)
    theirs.sendall(reply(1)[:10])
    theirs.close()
    ended = await asyncio.wait_for(reading.ended, 5)
    assert isinstance(ended, ProtocolError) and "inside a frame" in str(ended)


async def test_the_first_refused_message_ends_the_channel_and_nothing_later_is_handed_on() -> None:
    got: list[Reply] = []

    def refuse(message: Reply) -> None:
        got.append(message)
        raise ProtocolError(f"unexpected {message.call_id}")

    reading, theirs = await channel(refuse)
    theirs.sendall(reply(1) + reply(2) + b"\x00\x00\x00\x02{}")
    ended = await asyncio.wait_for(reading.ended, 5)
    assert str(ended) == "unexpected 1" and [m.call_id for m in got] == [1]
    theirs.sendall(reply(3))
    await asyncio.sleep(0.02)
    assert [m.call_id for m in got] == [1]
    theirs.close()


async def test_a_malformed_frame_ends_the_channel() -> None:
    got: list[Reply] = []
    reading, theirs = await channel(got.append)
    theirs.sendall(reply(1) + b"\x00\x00\x00\x05nope!" + reply(2))
    ended = await asyncio.wait_for(reading.ended, 5)
    assert isinstance(ended, ProtocolError) and [m.call_id for m in got] == [1]
    theirs.close()


async def test_paused_frames_wait_in_the_buffer_until_resumed() -> None:
    got: list[Reply] = []
    reading: FrameProtocol

    def take(message: Reply) -> None:
        got.append(message)
        reading.pause()

    reading, theirs = await channel(take)
    theirs.sendall(reply(1) + reply(2) + reply(3))
    await until(lambda: len(got) == 1)
    await asyncio.sleep(0.02)
    assert len(got) == 1
    reading.resume()
    await until(lambda: len(got) == 2)
    await asyncio.sleep(0.02)
    assert [m.call_id for m in got] == [1, 2]
    reading.resume()
    await until(lambda: len(got) == 3)
    assert [m.call_id for m in got] == [1, 2, 3]
    theirs.close()


def test_a_frame_nested_too_deep_to_parse_is_a_protocol_error() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    body = (
        b'{"version":5,"type":"call","call_id":1,"method":"tool","payload":{"a":' + nested + b"}}"
    )
    with pytest.raises(ProtocolError, match="not JSON"):
        decode(body)
