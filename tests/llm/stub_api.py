"""A loopback stub that speaks the Anthropic Messages and OpenAI Chat Completions wire formats.

Tests queue replies (status, JSON body, headers, delay); the real SDKs talk to it over HTTP.
Every request body is recorded so tests can count HTTP calls and inspect what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"


@dataclass
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class StubAPI:
    """Queued replies per path and the requests received, in order."""

    server: HTTPServer
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    received: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, suffix: str = "") -> str:
        """Base URL of the stub (`suffix` appended, e.g. '/v1' for OpenAI)."""
        return self.server.url_for(suffix).rstrip("/")

    def queue(self, path: str, *replies: Reply) -> None:
        """Add replies for `path`, served in order."""
        with self.lock:
            self.replies.setdefault(path, []).extend(replies)

    def calls(self, path: str) -> list[dict[str, Any]]:
        """Bodies of the requests received on `path`."""
        return [body for p, body, _ in self.received if p == path]

    def handle(self, request: Request) -> Response:
        """Serve the next queued reply for the request's path."""
        body = json.loads(request.get_data() or b"{}")
        with self.lock:
            self.received.append((request.path, body, dict(request.headers)))
            queue = self.replies.get(request.path, [])
            reply = queue.pop(0) if queue else Reply(500, {"error": "no reply queued"})
        if reply.delay_s:
            time.sleep(reply.delay_s)
        return Response(
            json.dumps(reply.body),
            status=reply.status,
            headers=reply.headers,
            content_type="application/json",
        )


def anthropic_message(
    text: str | None = None,
    *,
    tool_input: dict[str, Any] | None = None,
    stop_reason: str = "end_turn",
    input_tokens: int = 100,
    output_tokens: int = 20,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    """A Messages API response body."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_input is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_1", "name": "respond", "input": tool_input}
        )
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }


def openai_completion(
    content: str | None,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    model: str = "o4-mini",
) -> dict[str, Any]:
    """A Chat Completions response body; `model`: the model it says answered."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An error body both APIs accept."""
    return {"type": "error", "error": {"type": kind, "message": message}}


NOT_FOUND = {"detail": "Not Found"}
"""What an OpenAI-compatible server (vLLM, FastAPI) answers for a path it does not serve."""
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 200000 tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
"""OpenAI's HTTP 400 body for a request longer than the model's context: that request's own."""
