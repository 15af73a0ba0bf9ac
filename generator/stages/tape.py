"""A record of every LLM exchange one generation made: for usage tables and fixture names.

The client's own ledger stays the authority on spending; the tape only keeps what this
generation asked, so its review record can show usage per purpose and name the recorded
fixtures that answered (when replaying). Failed calls are kept with what they were billed, as
the ledger keeps them, so the record and the `LLM:` line add up the same calls.
"""

from __future__ import annotations

from pathlib import Path

from generator.review.record import UsageRow
from toolkit.backends import LLMClientLike
from toolkit.errors import LLMError
from toolkit.llm.ledger import UsageSummary
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.pricing import is_simulated


class CallTape:
    """Wraps a client; `entries` holds (request, response) pairs in call order."""

    def __init__(
        self, client: LLMClientLike, shared: CallTape | None = None, *, replayed: bool = False
    ) -> None:
        self.client = client
        self.entries: list[tuple[LLMRequest, LLMResponse]] = shared.entries if shared else []
        self.replayed: bool = shared.replayed if shared else replayed
        self.failed: list[LLMRequest] = shared.failed if shared else []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward `request` and keep the exchange (a failure with its billed usage)."""
        try:
            response = await self.client.complete(request)
        except LLMError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            self.entries.append((request, LLMResponse(usage=usage, cost_usd=exc.cost_usd)))
            self.failed.append(request)
            raise
        self.entries.append((request, response))
        return response

    def usage_rows(self) -> list[UsageRow]:
        """Usage per purpose, in a fixed order."""
        rows: dict[str, UsageRow] = {}
        for request, response in self.entries:
            purpose = request.metadata.purpose
            row = rows.setdefault(
                purpose,
                UsageRow(
                    purpose=purpose,
                    calls=0,
                    cached=0,
                    input_tokens=0,
                    output_tokens=0,
                    cost_usd=0.0,
                    estimated_live_usd=0.0 if self.replayed else None,
                ),
            )
            row.calls += 1
            row.cached += int(response.cache_hit)
            if not response.cache_hit:
                usage = response.usage
                row.input_tokens += (
                    usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
                )
                row.output_tokens += usage.output_tokens
                if self.replayed:  # a replay calls no model: it costs nothing
                    row.estimated_live_usd = round(
                        (row.estimated_live_usd or 0.0)
                        + response.cost_usd
                        + response.estimated_usd,
                        6,
                    )
                else:
                    row.cost_usd = round(row.cost_usd + response.cost_usd, 6)
        order = ["draft", "repair", "reflect", "extract", "verify"]
        return sorted(
            rows.values(),
            key=lambda r: (order.index(r.purpose) if r.purpose in order else 99, r.purpose),
        )

    def summary_line(self) -> str:
        """The ledger's summary line over this generation's calls (replays and scripted
        policies counted free: $0 + an estimate; otherwise a policy's spend is simulated;
        cache hits not recorded live named by origin)."""
        rows = self.usage_rows()
        default = getattr(getattr(self.client, "provider", None), "name", "")
        scripted = [
            response
            for request, response in self.entries
            if is_simulated(request.provider or default) and not response.cache_hit
        ]
        by_origin: dict[str, int] = {}
        for _, response in self.entries:
            if response.cache_hit and response.origin is not None:
                kind = response.origin.source
                by_origin[kind] = by_origin.get(kind, 0) + 1
        line = UsageSummary(
            calls=sum(r.calls for r in rows),
            cached=sum(r.cached for r in rows),
            cached_by_origin=by_origin,
            input_tokens=sum(r.input_tokens for r in rows),
            output_tokens=sum(r.output_tokens for r in rows),
            cost_usd=sum(r.cost_usd for r in rows),
            saved_usd=sum(response.saved_usd for _, response in self.entries),
            simulated_usd=0.0 if self.replayed else sum(r.cost_usd for r in scripted),
            errors=len(self.failed),
        ).line()
        if self.replayed:
            estimate = sum(r.estimated_live_usd or 0.0 for r in rows)
            source = "a scripted policy answered" if scripted else "replayed fixtures"
            line += f" ({source}, no model called; estimate if live: ${estimate:.2f})"
        return line

    def fixture_names(self, directory: Path | None) -> list[str]:
        """Names of the recording files in `directory` that answered this generation's calls."""
        if directory is None or not directory.is_dir():
            return []
        from toolkit.llm.records import load_record_files
        from toolkit.llm.replay import replay_key

        by_key = {}
        for path, record in load_record_files(directory):
            by_key[replay_key(record.request)] = path.name
        used = {by_key.get(replay_key(request)) for request, _ in self.entries}
        return sorted(name for name in used if name)
