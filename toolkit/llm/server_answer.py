"""What a failed SDK call sent and what the server answered, read off the SDK's own exception.

Both SDKs' HTTP errors carry the request they sent (`error.request`) and the server's parsed
error body (`error.body`). A `ServerAnswer` holds what judgegen's messages name from them: the
call (`POST` and the URL without credentials), the model asked for, and the server's error as
servers word it (OpenAI's `{code, param, message}`, Anthropic's `{error: {type, message}}`,
vLLM's flat `{message, param, code}`, `{error: "..."}`, FastAPI's `{detail: [{loc, msg}]}`).
Stdlib only: the SDKs stay behind their providers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolkit.llm.endpoint import shown_url
from toolkit.util.redact import redact

MAX_SHOWN = 300
"""How much of the server's body or message a message quotes."""


@dataclass(frozen=True)
class ServerAnswer:
    """One HTTP error answer: the call it answered, the model asked for, the server's words."""

    status: int
    called: str
    """`POST http://host/v1/chat/completions` (no user info or query), or `the call`."""
    model: str | None
    """The model the request's JSON body asked for; None if it could not be read."""
    code: str
    """The server's error code or type (`model_not_found`, `invalid_request_error`), or ''."""
    param: str
    """The request field the server blames (`response_format`, `messages`), or ''."""
    message: str
    """The server's own message (redacted, at most `MAX_SHOWN` characters), or ''."""
    body: str
    """The server's body as JSON (redacted, at most `MAX_SHOWN` characters), or ''."""

    def shown_model(self) -> str:
        """The model, quoted, for a message: `'o4-mini'` or `(unknown)`."""
        return repr(self.model) if self.model else "(unknown)"


def server_answer(error: BaseException, status: int) -> ServerAnswer:
    """The `ServerAnswer` of an SDK's HTTP error (`status`: the answer's HTTP status)."""
    sent = getattr(error, "request", None)
    url = getattr(sent, "url", None)
    called = f"{getattr(sent, 'method', 'POST')} {shown_url(str(url))}" if url else "the call"
    body = getattr(error, "body", None)
    code, param, message = _fields(body)
    shown = json.dumps(body, sort_keys=True, default=str) if body else ""
    return ServerAnswer(
        status=status,
        called=called,
        model=_sent_model(sent),
        code=code,
        param=param,
        message=redact(message)[:MAX_SHOWN],
        body=redact(shown)[:MAX_SHOWN],
    )


def _fields(body: Any) -> tuple[str, str, str]:
    """(code, param, message) of an error body, whichever way the server shapes it."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict | str):
        body = body["error"]  # Anthropic's envelope, or `{"error": "..."}`
    if isinstance(body, str):
        return "", "", body
    if not isinstance(body, dict):
        return "", "", ""
    detail = body.get("detail")
    if isinstance(detail, list):  # FastAPI's validation errors: where, and what
        problems = [_problem(item) for item in detail if isinstance(item, dict)]
        param = next((where for where, _ in problems if where), "")
        return "", param, "; ".join(f"{where}: {what}" for where, what in problems)
    code = body.get("code")
    if code is None or isinstance(code, int):  # vLLM's code is the HTTP status again
        code = body.get("type")
    message = body.get("message", detail if isinstance(detail, str) else "")
    return str(code or ""), str(body.get("param") or ""), str(message or "")


def _problem(item: dict[str, Any]) -> tuple[str, str]:
    """(field, message) of one FastAPI validation error; the field without its `body.`."""
    where = ".".join(str(part) for part in item.get("loc") or [])
    return where.removeprefix("body."), str(item.get("msg") or "")


def _sent_model(sent: Any) -> str | None:
    """The model an SDK's HTTP request asked for (its JSON body's `model`), None if unknown."""
    try:
        body = json.loads(getattr(sent, "content", b"") or b"{}")
    except (ValueError, TypeError, RuntimeError):  # not JSON, or a stream not read
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None
