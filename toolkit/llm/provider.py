"""The seam every LLM backend implements, and the structured-output loop they share.

A `Provider` turns one `LLMRequest` into one `LLMResponse` or raises `LLMError`. It classifies
its own SDK's exceptions (`classify`), so nothing above it imports SDK exception types. The
SDK owns transport retries (429, 5xx, timeouts), but a 5xx no retry can cure (a 501: each
provider's HTTP client hooks in `mark_final`) is raised at once; this module only re-asks after
the model's output failed validation, at most `MAX_REASKS` times, and keeps the usage of every
attempt.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from toolkit.errors import LLMError
from toolkit.llm.endpoint import KEY_VARIABLES, URL_VARIABLES
from toolkit.llm.models import LLMRequest, LLMResponse, Message, Usage
from toolkit.llm.schema import output_problems, parse_json_output
from toolkit.llm.server_answer import ServerAnswer, server_answer
from toolkit.util.redact import redact

if TYPE_CHECKING:
    import httpx2

MAX_REASKS = 2

ErrorKind = Literal[
    "rate_limit",
    "overloaded",
    "server",
    "timeout",
    "connection",
    "auth",
    "not_found",
    "rejected",
    "request",
    "truncated",
    "refused",
    "invalid_output",
    "config",
    "unknown",
    "outage",
]
"""What went wrong, independent of the SDK: the ledger and the runner report these. Each
provider's `classify` sets one of them; `outage` is set above the providers, by the breaker
refusing calls to a provider that failed too many in a row (`toolkit.llm.outage`), and
`rejected` by the rejection guard, once the server answered several different requests in a
row with the same 400 (`toolkit.llm.rejection`). `auth`, `not_found` and `rejected` are the
server's answer to the configuration, not to one request (a wrong key; no such endpoint or
model; a parameter every request carries): every call would fail the same way."""

NOT_IMPLEMENTED = 501
NOT_FOUND_STATUSES = frozenset({404, 405, NOT_IMPLEMENTED})
"""HTTP statuses meaning the server has no such endpoint (a --base-url without its `/v1`, a
web page's URL; a server that does not implement this API answers 501) or serves no such
model (`model_not_found`): the configuration is wrong, for every request alike. A 501 is no
outage, and is not retried (`FINAL_STATUSES`). A 400 (one request too large or malformed) is
that request's own, unless it recurs (`toolkit.llm.rejection`)."""
FINAL_STATUSES = frozenset({NOT_IMPLEMENTED})
"""5xx statuses no retry can cure: the server does not implement the API. Both SDKs retry
every 5xx (with backoff), so `mark_final` tells them not to retry these."""
SHOULD_RETRY = "x-should-retry"
"""The response header both SDKs obey before their own status rules (`false`: no retry)."""
MODEL_SETTINGS = "--model / JUDGEGEN_LLM_MODEL, JUDGEGEN_JUDGE_MODEL, JUDGEGEN_GENERATION_MODEL"
"""Where the model a call asks for is set, for every command: `--model` (or the default) and
the per-role models that override it (`generate` extracts with the judge model)."""
NOT_FOUND_FIX = (
    "check the server's URL (--base-url / JUDGEGEN_LLM_BASE_URL, else the SDK's "
    "OPENAI_BASE_URL / ANTHROPIC_BASE_URL; an OpenAI-compatible server's usually ends in /v1) "
    f"and the model's name ({MODEL_SETTINGS}) against the models that server serves (an "
    "OpenAI-compatible server lists them at its /v1/models)"
)

TRUNCATED_STOPS = frozenset({"max_tokens", "length", "model_context_window_exceeded"})
REFUSED_STOPS = frozenset({"refusal", "content_filter"})
"""Stop reasons meaning the output was cut off: an error, never cached."""


@runtime_checkable
class Provider(Protocol):
    """What an LLM backend implements: a name, one async call, and error classification."""

    name: str

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request; failures raise `LLMError` (already classified)."""
        ...

    def classify(self, error: BaseException) -> LLMError:
        """Turn one of this provider's own SDK exceptions into an `LLMError` with a kind."""
        ...


class RawOutput(BaseModel):
    """One provider round trip before validation: the text (or tool input), why it stopped."""

    text: str = ""
    parsed: Any = None
    stop_reason: str | None = None
    refusal: str | None = None
    usage: Usage = Usage()
    model: str = ""
    request_id: str | None = None


AttemptFn = Callable[[LLMRequest], Awaitable[RawOutput]]
ClassifyFn = Callable[[BaseException], LLMError]


async def complete_structured(
    request: LLMRequest, attempt: AttemptFn, classify: ClassifyFn
) -> LLMResponse:
    """Call `attempt` and, when a schema is asked for, validate and re-ask (≤ MAX_REASKS).

    Truncation and refusal end the call at once as `LLMError` carrying the usage so far. A
    re-ask that fails (a timeout, a reset connection) raises its `LLMError` (`classify`ing an
    SDK exception) with the usage of the attempts before it: those answers were paid for.
    """
    started = time.perf_counter()
    usage = Usage()
    current = request
    for attempt_no in range(1, MAX_REASKS + 2):
        try:
            raw = await attempt(current)
        except LLMError as exc:
            if attempt_no > 1:
                _add_paid(exc, usage, attempt_no)
            raise
        except Exception as exc:
            if attempt_no == 1:
                raise  # nothing paid yet: the provider classifies it as it always does
            raise _add_paid(classify(exc), usage, attempt_no) from None  # may echo a key
        usage = usage + raw.usage
        _raise_on_stop(raw, usage, attempt_no)
        parsed, problems = _check_output(raw, request)
        if not problems:
            response = _response(raw, parsed, usage, time.perf_counter() - started)
            response.mark_checked(request.output_schema)
            return response
        current = reask_request(current, raw.text, problems)
    raise LLMError(
        f"{request.model}: output still invalid after {MAX_REASKS} re-asks: {'; '.join(problems)}",
        kind="invalid_output",
        usage=usage,
        attempts=MAX_REASKS + 1,
        body=raw.text[:2000],
    )


def _add_paid(error: LLMError, paid: Usage, attempts: int) -> LLMError:
    """`error`, a failed re-ask, also carrying the usage `paid` for the attempts before it."""
    own = error.usage if isinstance(error.usage, Usage) else Usage()
    error.usage = paid + own
    error.attempts = attempts
    return error


def _raise_on_stop(raw: RawOutput, usage: Usage, attempts: int) -> None:
    if raw.refusal is not None or raw.stop_reason in REFUSED_STOPS:
        raise LLMError(
            f"{raw.model}: the model refused: {(raw.refusal or raw.text)[:300]}",
            kind="refused",
            usage=usage,
            attempts=attempts,
            body=(raw.refusal or raw.text)[:2000],
        )
    if raw.stop_reason in TRUNCATED_STOPS:
        raise LLMError(
            f"{raw.model}: output truncated (stop reason {raw.stop_reason}); raise max_tokens",
            kind="truncated",
            usage=usage,
            attempts=attempts,
            body=raw.text[:2000],
        )


def _check_output(raw: RawOutput, request: LLMRequest) -> tuple[Any, list[str]]:
    if request.output_schema is None:
        return None, []
    parsed = raw.parsed
    if parsed is None:
        parsed, error = parse_json_output(raw.text)
        if error:
            return None, [error]
    return parsed, output_problems(parsed, request.output_schema)


def cacheable(response: LLMResponse) -> bool:
    """Whether an answer may be stored, or a stored one served: never a truncated or refused
    output, nor an empty one (no text, nothing parsed: a request without a schema is not
    validated, and a rerun would replay the empty answer instead of asking again)."""
    if response.stop_reason in TRUNCATED_STOPS | REFUSED_STOPS:
        return False
    return response.parsed is not None or bool(response.text.strip())


def answer_problems(request: LLMRequest, response: LLMResponse) -> list[str]:
    """Why a stored or recorded answer no longer satisfies its request's schema ([] if it does;
    an answer this process already validated against the same schema is not checked again)."""
    schema = request.output_schema
    if schema is None or response.checked_against(schema):
        return []
    return output_problems(response.parsed, schema)


def _response(raw: RawOutput, parsed: Any, usage: Usage, latency: float) -> LLMResponse:
    return LLMResponse(
        text=raw.text,
        parsed=parsed,
        model=raw.model,
        stop_reason=raw.stop_reason,
        usage=usage,
        request_id=raw.request_id,
        latency_s=latency,
    )


def reask_request(request: LLMRequest, bad_output: str, problems: list[str]) -> LLMRequest:
    """The same conversation plus the invalid answer and a request to fix exactly these problems."""
    feedback = (
        "Your previous answer did not match the required JSON schema:\n- "
        + "\n- ".join(problems)
        + "\nReply again with only the corrected JSON object."
    )
    messages = (
        *request.messages,
        Message.assistant(bad_output or "(empty)"),
        Message.user(feedback),
    )
    return request.model_copy(update={"messages": messages})


async def mark_final(response: httpx2.Response) -> None:
    """An HTTP client's response hook: a `FINAL_STATUSES` answer says `x-should-retry: false`,
    so the SDK raises it after one request instead of retrying it as a 5xx."""
    if response.status_code in FINAL_STATUSES:
        response.headers[SHOULD_RETRY] = "false"


def classify_sdk_error(
    error: BaseException,
    *,
    status: int | None,
    timeout: bool,
    connection: bool,
    overloaded: bool = False,
    provider: str = "",
) -> LLMError:
    """The `LLMError` for an SDK failure, from facts the provider read off its own exception
    (`provider`: its kind, `openai` or `anthropic`, for the settings a message names). An HTTP
    error carries the `ServerAnswer` (`LLMError.answer`); an `auth` or `not_found` one also
    names the URL called, the model asked for, the server's answer and the fix."""
    kind = _kind_for(status, timeout=timeout, connection=connection, overloaded=overloaded)
    detail = redact(str(getattr(error, "message", "") or error))[:500]
    where = f"HTTP {status}" if status else type(error).__name__
    message = f"LLM call failed ({kind}, {where}): {detail}"
    answer = server_answer(error, status) if status else None
    if answer is not None and kind == "not_found":
        message += _explained(answer, detail, _not_found_meaning(answer), NOT_FOUND_FIX)
    if answer is not None and kind == "auth":
        message += _explained(answer, detail, _auth_meaning(answer), auth_fix(provider))
    failed = LLMError(message, kind=kind, usage=Usage())
    failed.answer = answer
    return failed


def auth_fix(provider: str) -> str:
    """What to check when the `provider` kind's server refuses the key (401/403)."""
    key = KEY_VARIABLES.get(provider, "the provider's API key variable")
    url = URL_VARIABLES.get(provider)
    sdk_url = f", else the SDK's {url}" if url else ""
    return (
        f"check the key the SDK sends ({key}; a local server started with an API key wants "
        f"that key), that the server (--base-url / JUDGEGEN_LLM_BASE_URL{sdk_url}) is the "
        f"one the key is for, and that the key may use the model ({MODEL_SETTINGS})"
    )


def _explained(answer: ServerAnswer, detail: str, meaning: str, fix: str) -> str:
    """What an answer to the configuration means: the call, the server's answer (its body
    unless `detail` already quotes its message), why every call would fail, and the fix."""
    quoted = bool(answer.message) and answer.message in detail
    shown = f" {answer.body}" if answer.body and not quoted else ""
    return redact(
        f"; the server answered {answer.called} with HTTP {answer.status}{shown}: {meaning}, "
        f"so every call would fail the same way. Fix: {fix}"
    )


def _not_found_meaning(answer: ServerAnswer) -> str:
    if answer.status == NOT_IMPLEMENTED:
        return f"it does not implement this endpoint (asked for model {answer.shown_model()})"
    return f"it has no such endpoint, or no model {answer.shown_model()}"


def _auth_meaning(answer: ServerAnswer) -> str:
    if answer.status == 401:
        return f"it does not accept the key sent (asked for model {answer.shown_model()})"
    return f"it denies the key sent this endpoint or model {answer.shown_model()}"


def _kind_for(status: int | None, *, timeout: bool, connection: bool, overloaded: bool) -> str:
    if timeout or status == 408:
        return "timeout"
    if connection:
        return "connection"
    if status is None:
        return "unknown"
    if overloaded:
        return "overloaded"
    if status in NOT_FOUND_STATUSES:
        return "not_found"
    table = {429: "rate_limit", 401: "auth", 403: "auth"}
    if status in table:
        return table[status]
    return "server" if status >= 500 else "request"
