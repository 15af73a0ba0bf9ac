"""The rejection guard: a server that answers every request with the same 400 is called no more.

A 400 (or 422) is usually one request's own: an answer too long for the model's context, an
image it cannot read, an empty message. Its evaluation is incomplete and the run goes on. But
a server that refuses a *parameter* judgegen sends with every request (a local server without
`response_format`, a model without some option) answers every request with the very same
400, and a run would try every answer only to leave each result incomplete. The guard tells
the two apart by what the server said, and how often:

- only a 400 or 422 whose answer is not about the request's content counts (`signature`);
- it counts distinct requests (by content: a re-sent request or another trial of it is one)
  that got the *same* answer, status, code, blamed field and message alike, numbers
  included, in completion order;
- anything the server accepted (a response, or output that was cut off, refused or invalid)
  or a different 400 starts the count again; failures that say nothing of the request
  (connection, 5xx, timeouts, 429s) neither count nor reset it.

After `REJECTION_THRESHOLD` such requests in a row the guard raises `LLMError(kind="rejected")`
naming the call, the model, the server's answer and the fix, and refuses every later call at
once (a stop kind: the runner starts no more evaluations, exit 3), for the client's life, as
the outage breaker does.
"""

from __future__ import annotations

import re

from toolkit.errors import LLMError
from toolkit.llm.endpoint import kind_of
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.provider import MODEL_SETTINGS, Provider
from toolkit.llm.server_answer import ServerAnswer
from toolkit.util.redact import redact

REJECTED_KIND = "rejected"
REJECTION_THRESHOLD = 3
"""How many distinct requests in a row must get the same 400 before the guard stops: 3.

A refused parameter fails every request at once and is not billed, so waiting costs a few
instant calls; stopping wrongly costs a run. Content errors are excluded by what they say
(`CONTENT_FIELDS`, `CONTENT_WORDS`), so what could still repeat by chance is a per-request
error about a parameter, which requests sharing one configuration rarely earn one by one.
Two in a row could be one answer's two claims sharing an oddity; three distinct requests
with the very same words and nothing accepted between them is the configuration. The count
does not grow with concurrency: calls in flight at once each get their own answer, so three
alike are still three requests refused alike."""

REQUEST_STATUSES = frozenset({400, 422})
"""A request the server would not take: 400, or 422 (FastAPI-style validation)."""
CONTENT_FIELDS = re.compile(r"^(messages|system|input|prompt|contents?)\b", re.IGNORECASE)
"""Request fields holding the content: a 400 blaming one (`param`, a FastAPI `loc`, or an
Anthropic message that starts with the field's path) is about this request's content."""
CONTENT_WORDS = re.compile(
    r"context|too (long|large|big|many)|exceed|image|empty|non-empty|utf-?8|decode",
    re.IGNORECASE,
)
"""Words of 400s about a request's content or size (context length, too long, exceeds,
an unreadable image, an empty message, bad text): that request's own, however often."""
ACCEPTED_KINDS = frozenset({"request", "truncated", "refused", "invalid_output"})
"""Failures the server answered otherwise than with a counted 400 (a content 400, output
cut off, refused or invalid): it took the request's parameters, so the count starts again."""
STRUCTURED_WORDS = re.compile(
    r"response_format|json_schema|json_object|output_config|output_format|structured|guided",
    re.IGNORECASE,
)
"""Words of a refused structured-output parameter."""
STRUCTURED_FIXES = {
    "openai": "the server does not take the structured output judgegen asks for: pass "
    "--schema-mode json (JSON mode, the schema in the prompt) or --schema-mode prompt (the "
    "schema in the prompt only), or set JUDGEGEN_OPENAI_SCHEMA_MODE",
    "anthropic": "the server does not take the structured output judgegen asks for: set "
    'anthropic_structured = "tool" under [llm] in judgegen.toml (the schema as a forced tool)',
}
"""The fix for a refused structured-output parameter, per provider kind."""
REJECTED_FIX = (
    f"check that the model ({MODEL_SETTINGS}) takes the parameter the server names and that "
    "--base-url / JUDGEGEN_LLM_BASE_URL is the server meant; for an OpenAI-compatible server "
    "refusing response_format, pass --schema-mode json or --schema-mode prompt"
)


def signature(answer: ServerAnswer) -> str | None:
    """What makes two 400s the same (status, code, blamed field, message without ids, case
    or spacing), or None for an answer about the request's content (see the module doc)."""
    if answer.status not in REQUEST_STATUSES:
        return None
    if CONTENT_FIELDS.match(answer.param) or CONTENT_FIELDS.match(answer.message):
        return None
    if CONTENT_WORDS.search(answer.message) or not answer.message:
        return None
    return f"{answer.status}|{answer.code}|{answer.param}|{_normalized(answer.message)}"


def _normalized(message: str) -> str:
    """`message` without what differs between identical answers: request ids, spacing, case."""
    text = re.sub(r"\b(req|chatcmpl|msg)_[A-Za-z0-9]+", "<id>", message)
    text = re.sub(r"\b[0-9a-fA-F-]{32,}\b", "<id>", text)
    return " ".join(text.lower().split())


def rejected_fix(answer: ServerAnswer, provider: str) -> str:
    """The fix for `answer` refused to every request of a `provider` kind: what to change, for
    any command (what its rerun then redoes is the command's: `generator.cli.rerun`)."""
    words = f"{answer.param} {answer.message}"
    if STRUCTURED_WORDS.search(words) and provider in STRUCTURED_FIXES:
        return STRUCTURED_FIXES[provider]
    return REJECTED_FIX


class RejectionGuard:
    """Wraps a provider; after `threshold` distinct requests in a row got the same 400 about
    no request's content, every call raises `LLMError(kind="rejected")` without reaching it."""

    def __init__(self, inner: Provider, threshold: int = REJECTION_THRESHOLD) -> None:
        if threshold < 1:
            raise ValueError("rejection threshold must be at least 1")
        self.inner = inner
        self.threshold = threshold
        self.name = inner.name
        self._signature: str | None = None
        """The 400 the latest requests got (None after anything else)."""
        self._requests: set[str] = set()
        """The distinct requests (`base_digest`) that got it in a row."""
        self._stop: str | None = None
        """The rejection's message once the guard tripped (None while it has not)."""

    @property
    def tripped(self) -> bool:
        """True once `threshold` requests in a row got the same 400 (for good)."""
        return self._stop is not None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward `request` unless the guard tripped; count how its call ended.

        The call that trips the guard raises the rejection, as does a call in flight then
        that gets the same answer (each with its own usage)."""
        if self._stop is not None:
            raise self._rejected(self._stop)
        try:
            response = await self.inner.complete(request)
        except LLMError as exc:
            rejected = self._counted(exc, request)
            if rejected is None:
                raise
            raise rejected from exc
        self._start_again()
        return response

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    def _counted(self, error: LLMError, request: LLMRequest) -> LLMError | None:
        """Count a failed call; the rejection it raises instead of `error`, if any."""
        answer = error.answer if isinstance(error.answer, ServerAnswer) else None
        same = signature(answer) if answer is not None else None
        if self._stop is not None:  # a call in flight when the guard tripped
            return self._rejected(self._stop, error) if same == self._signature else None
        if answer is None or same is None:
            if error.kind in ACCEPTED_KINDS:
                self._start_again()
            return None
        if same != self._signature:
            self._signature, self._requests = same, set()
        self._requests.add(request.base_digest())
        if len(self._requests) < self.threshold:
            return None
        self._stop = self._message(answer)
        return self._rejected(self._stop, error)

    def _start_again(self) -> None:
        if self._stop is None:
            self._signature, self._requests = None, set()

    def _message(self, answer: ServerAnswer) -> str:
        """The stop: the call refused, the model, the server's answer and the fix."""
        said = answer.message or answer.body
        return redact(
            f"LLM call failed ({REJECTED_KIND}, HTTP {answer.status}): the server answered "
            f"{len(self._requests)} different requests in a row to {answer.called} for model "
            f"{answer.shown_model()} with the same HTTP {answer.status}: {said}; it refuses "
            "something every request carries, not one request's content, so every call would "
            "fail the same way and no more are made. "
            f"Fix: {rejected_fix(answer, kind_of(self.name))}"
        )

    def _rejected(self, message: str, cause: LLMError | None = None) -> LLMError:
        """The rejection, carrying the usage and cost of `cause`, the failed call it stands
        for (none when the call was refused)."""
        return LLMError.standing_for(message, REJECTED_KIND, cause)
