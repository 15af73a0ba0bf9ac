"""What judges a `judgegen run`: its backend's identity, known from the flags and settings
alone, and the metered backend and LLM client, built only when an evaluation is about to run.

So a rerun whose results are all fresh compares fingerprints without importing the judge
runtime, the LLM layer's providers or the response cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.cli.common import load_backend_factory

if TYPE_CHECKING:
    from toolkit.llm.settings import LLMSettings
    from toolkit.llm.usage import UsageSummary

LLM_TRIALS = 3
"""Verification trials of the LLM backend `run` builds (passed to it, so the fingerprint's
record of them is what runs)."""


@dataclass(frozen=True)
class LLMIdentity:
    """What a result's fingerprint records of the default LLM backend."""

    model: str
    extract_model: str
    trials: int

    def spec(self, settings: LLMSettings, sources: Sequence[Path] | None = None) -> str:
        """The fingerprint's backend identity: provider (with a hash of the `sources` an
        offline one answers from, `answer_sources` of the provider when not given, so
        re-recording or editing them in place makes its results stale), models, the server
        and the structured-output mode when not the defaults (as the provider's
        `endpoint.identity` names them, a server from the SDK's own variable included), and
        trials."""
        from toolkit.llm.answer_source import answer_digest, answer_sources
        from toolkit.llm.endpoint import DEFAULT_MODES, server

        provider = settings.provider_for(self.model)
        parts = [f"llm provider={provider}"]
        answers = answer_digest(answer_sources(provider) if sources is None else sources)
        if answers is not None:
            parts.append(f"answers={answers}")
        parts.append(f"model={self.model}")
        if self.extract_model != self.model:
            parts.append(f"extract_model={self.extract_model}")
        url = server(provider, settings.base_url)
        if url is not None:
            parts.append(f"base_url={url}")
        mode = {"openai": settings.openai_schema_mode, "anthropic": settings.anthropic_structured}
        if provider in mode and mode[provider] != DEFAULT_MODES[provider]:
            parts.append(f"mode={mode[provider]}")
        return " ".join([*parts, f"trials={self.trials}"])


class RunBackend:
    """The judging backend of one run: `identity` and `spec` now, `build()` when needed.

    A `--backend` factory is called at once (a wrong spec is a usage error even when nothing
    needs judging); the default LLM backend and its client are built by `build()`.
    `answer_sources` are the files an offline provider answers from: the one list whose hash
    the fingerprint records and the fresh stamp watches, listed for the LLM provider spec
    `provider` (None with a factory). A factory's `spec` holds a hash of
    the code it runs (`factory_identity`): that code decides every verdict.
    """

    def __init__(self, backend_spec: str | None, settings: LLMSettings) -> None:
        self.settings = settings
        self._custom = load_backend_factory(backend_spec) if backend_spec else None
        self.identity: Any
        self.answer_sources: list[Path] = []
        self.provider: str | None = None
        if backend_spec:
            from toolkit.llm.answer_source import factory_identity

            self.identity, self.spec = self._custom, factory_identity(backend_spec)
        else:
            from toolkit.llm.answer_source import answer_sources

            model = settings.model_for("judge")
            llm = LLMIdentity(model=model, extract_model=model, trials=LLM_TRIALS)
            self.provider = settings.provider_for(model)
            self.answer_sources = answer_sources(self.provider)
            self.identity, self.spec = llm, llm.spec(settings, self.answer_sources)
        self.client: Any = None
        self._built: Any = None

    def build(self) -> Any:
        """The metered backend (built once); for the LLM backend also sets `client`, the
        metered LLM client (an unusable cache file raises `CacheError` here)."""
        if self._built is None:
            from toolkit.runner.metering import MeteredBackend, MeteredClient

            if self._custom is not None:
                self._built = MeteredBackend(self._custom)
            else:
                from toolkit.backends import LLMBackend
                from toolkit.llm.client import build_client

                self.client = MeteredClient(build_client(self.settings, "judge"))
                llm = self.identity
                self._built = MeteredBackend(
                    LLMBackend(
                        self.client,
                        model=llm.model,
                        extract_model=llm.extract_model,
                        trials=llm.trials,
                    )
                )
        return self._built

    @property
    def usage_reporter(self) -> Any:
        """What gives the end-of-run `LLM:` line and totals (`summary_line`, `summary`): the
        LLM client, or this backend while the client was never needed; None for a
        `--backend`, which has no LLM usage."""
        if self._custom is not None:
            return None
        return self.client if self.client is not None else self

    def summary(self) -> UsageSummary:
        """The LLM totals of a run that asked the model nothing."""
        from toolkit.llm.usage import UsageSummary

        return UsageSummary()

    def summary_line(self) -> str:
        """The `LLM:` line of a run that asked the model nothing."""
        return self.summary().line()

    async def aclose(self) -> None:
        """Close the LLM client, if one was built."""
        if self.client is not None:
            await self.client.aclose()

    def close_after_loop(self) -> None:
        """Once the run's event loop has ended, close the LLM ledger again: a call its
        provider kept running past `aclose` ends as the loop ends, and its ledger row is
        written then; one that could not be written raises its `LedgerError` here, as
        `aclose` raises that of a row lost before."""
        if self.client is not None:
            self.client.ledger.close()
