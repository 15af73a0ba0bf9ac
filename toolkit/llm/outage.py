"""The outage breaker: a provider that failed many calls in a row is called no more.

Each call reaching the breaker has already been retried by the SDK (connection errors, 5xx,
529, timeouts), so failing many of them in a row means the provider is down, not flaky. Going
on would start every remaining evaluation only to end it incomplete, paying the SDK's backoff
each time; refusing at once lets the runner stop (exit 3) and say why.

Counted, in completion order: failures of kind `DOWN_KINDS` (the provider could not be
reached or did not answer). Any success, and any other failure (`invalid_output`, `refused`,
`request`, ...: the provider answered), starts the count again. `rate_limit` neither counts
nor resets: a 429 means "too fast", which the SDK's backoff handles, not "down", so it never
stops a run; but overloaded providers shed load with 429s among their 5xx and 529s, so it must
not hide an outage either.

Once open, the breaker stays open for the client's life (a command): it never half-opens to
try again. A run is short, and a stop that says why is better than flapping between refused
and failing calls. The stop's fix says what to check, alike for every command: what a rerun of
the command then keeps and redoes is the command's to say (`generator.cli.rerun`).
"""

from __future__ import annotations

from toolkit.errors import LLMError
from toolkit.llm.models import LLMRequest, LLMResponse
from toolkit.llm.provider import Provider
from toolkit.util.redact import redact

DOWN_KINDS = frozenset({"connection", "server", "overloaded", "timeout"})
"""Failure kinds meaning the provider did not answer: counted towards an outage."""
NEUTRAL_KINDS = frozenset({"rate_limit"})
"""Failure kinds that neither count towards an outage nor reset the count."""
OUTAGE_KIND = "outage"
OUTAGE_FIX = (
    "check that the provider is reachable (network, --base-url / JUDGEGEN_LLM_BASE_URL, the "
    "provider's status page)"
)
"""What to check, for any command (what a rerun keeps is the command's: `generator.cli.rerun`)."""
MIN_THRESHOLD = 10


def outage_threshold(concurrency: int) -> int:
    """How many failures in a row open the breaker: `max(10, 2 × concurrency)`.

    During a short blip every call in flight (up to `concurrency`) fails together; twice that
    means a whole round of calls started after the first batch failed has failed too, each
    after the SDK's own retries. The floor keeps a low concurrency from stopping a run on a
    handful of unlucky calls."""
    return max(MIN_THRESHOLD, 2 * concurrency)


class OutageBreaker:
    """Wraps a provider; after `threshold` failures in a row that mean "down", every call
    raises `LLMError(kind="outage")` without reaching it."""

    def __init__(self, inner: Provider, threshold: int) -> None:
        if threshold < 1:
            raise ValueError("outage threshold must be at least 1")
        self.inner = inner
        self.threshold = threshold
        self.name = inner.name
        self.failures = 0
        """Failures of `DOWN_KINDS` in a row, in completion order (kept as it was once open)."""
        self._opened_by: LLMError | None = None
        """The failure that opened the breaker (None while it is closed)."""

    @property
    def open(self) -> bool:
        """True once the provider failed `threshold` calls in a row (for good)."""
        return self._opened_by is not None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward `request` unless the breaker is open; count how its call ended.

        The call whose failure opens the breaker raises the outage error, as does a call in
        flight then that fails the same way (each with its own usage); one that still gets
        an answer returns it."""
        if self._opened_by is not None:
            raise self._outage(self._opened_by)
        try:
            response = await self.inner.complete(request)
        except LLMError as exc:
            outage = self._counted(exc)
            if outage is None:
                raise
            raise outage from exc
        if not self.open:
            self.failures = 0
        return response

    def classify(self, error: BaseException) -> LLMError:
        """Delegate to the wrapped provider."""
        return self.inner.classify(error)

    def _counted(self, error: LLMError) -> LLMError | None:
        """Count a failed call; the outage error it raises instead of `error`, if any."""
        if error.kind not in DOWN_KINDS:
            if error.kind not in NEUTRAL_KINDS and not self.open:
                self.failures = 0
            return None
        if self._opened_by is None:
            self.failures += 1
            if self.failures < self.threshold:
                return None
            self._opened_by = error
        return self._outage(self._opened_by, error)

    def _outage(self, last: LLMError, cause: LLMError | None = None) -> LLMError:
        """The refusal: how many calls failed in a row, the `last` of them, and the fix; it
        carries the usage and cost of `cause`, the failed call it stands for (none when the
        call was refused)."""
        detail = redact(str(last))[:500]
        message = (
            f"LLM provider {self.name} looks down: {self.failures} calls in a row failed after "
            f"the SDK's retries (the last: {type(last).__name__} ({last.kind}): {detail}); no "
            f"more calls are made. Fix: {OUTAGE_FIX}"
        )
        return LLMError.standing_for(message, OUTAGE_KIND, cause)
