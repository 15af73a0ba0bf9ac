"""LLM layer settings: one pydantic model built from defaults, `judgegen.toml`, env and flags.

The `[llm]` table of judgegen.toml and the `JUDGEGEN_*` variables below set the same fields;
flags win over the environment, which wins over the file. API keys are not settings: the
SDKs read them from their own environment variables (ANTHROPIC_API_KEY, OPENAI_API_KEY).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.config import load_section
from toolkit.errors import SpecError
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.pricing import ModelPrice

SETTINGS_VERSION = 1
DEFAULT_JUDGE_MODEL = "o4-mini"
DEFAULT_GENERATION_MODEL = "claude-sonnet-5-5"
DEFAULT_CACHE_PATH = Path(".judgegen/llm-cache.sqlite")
DEFAULT_LEDGER_PATH = Path(".judgegen/llm-ledger.jsonl")

Role = Literal["judge", "generation"]

ENV_VARS: dict[str, str] = {
    "JUDGEGEN_LLM_PROVIDER": "provider",
    "JUDGEGEN_LLM_MODEL": "model",
    "JUDGEGEN_JUDGE_MODEL": "judge_model",
    "JUDGEGEN_GENERATION_MODEL": "generation_model",
    "JUDGEGEN_LLM_BASE_URL": "base_url",
    "JUDGEGEN_OPENAI_SCHEMA_MODE": "openai_schema_mode",
    "JUDGEGEN_CACHE_MODE": "cache_mode",
    "JUDGEGEN_CACHE_PATH": "cache_path",
    "JUDGEGEN_BUDGET_USD": "budget_usd",
    "JUDGEGEN_CONCURRENCY": "concurrency",
    "JUDGEGEN_LEDGER_PATH": "ledger_path",
    "JUDGEGEN_LLM_MAX_RETRIES": "max_retries",
    "JUDGEGEN_LLM_TIMEOUT_S": "timeout_s",
}
"""Environment variable → settings field."""


class LLMSettings(BaseModel):
    """How to reach the model and what to wrap around it."""

    model_config = ConfigDict(extra="forbid")

    version: int = SETTINGS_VERSION
    provider: str = Field(
        default="",
        description="anthropic | openai | replay:DIR | scripted:pkg.mod:func; empty = by model "
        "(claude-* → anthropic, else openai).",
    )
    model: str | None = Field(default=None, description="Model for this command (overrides role).")
    judge_model: str = Field(default=DEFAULT_JUDGE_MODEL, description="Default model for judging.")
    generation_model: str = Field(
        default=DEFAULT_GENERATION_MODEL, description="Default model for generating judges."
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible server URL.")
    openai_schema_mode: Literal["native", "json", "prompt"] = Field(
        default="native", description="Structured output support of the OpenAI-style server."
    )
    anthropic_structured: Literal["auto", "native", "tool"] = "auto"
    cache_path: Path = DEFAULT_CACHE_PATH
    cache_mode: CacheMode = CacheMode.RW
    budget_usd: float | None = Field(default=None, ge=0, description="Dollar cap; None = no cap.")
    concurrency: int = Field(default=8, ge=1, description="Provider calls in flight at most.")
    ledger_path: Path | None = Field(default=DEFAULT_LEDGER_PATH, description="JSON-lines ledger.")
    max_retries: int = Field(default=2, ge=0, description="SDK transport retries.")
    timeout_s: float = Field(default=600.0, gt=0, description="SDK request timeout.")
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="Per-model price overrides ($ per million tokens)."
    )

    def model_for(self, role: Role) -> str:
        """The model a command in `role` uses: `model` if set, else the role's default."""
        if self.model:
            return self.model
        return self.judge_model if role == "judge" else self.generation_model

    def provider_for(self, model: str) -> str:
        """The provider spec: explicit, or inferred from the model name."""
        if self.provider:
            return self.provider
        return "anthropic" if model.startswith("claude") else "openai"

    def for_role(self, role: Role) -> LLMSettings:
        """A copy with `model` and `provider` resolved for `role`."""
        model = self.model_for(role)
        return self.model_copy(update={"model": model, "provider": self.provider_for(model)})

    @classmethod
    def from_env_and_file(
        cls,
        config_path: Path | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> LLMSettings:
        """Defaults < `[llm]` in judgegen.toml < `JUDGEGEN_*` env < `overrides` (None = not given)."""
        file_values = load_section("llm", config_path)
        env_values = _from_env(os.environ if env is None else env)
        flag_values = {k: v for k, v in overrides.items() if v is not None}
        merged = {**file_values, **env_values, **flag_values}
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            raise _spec_error(exc, config_path) from None


def _from_env(env: Mapping[str, str]) -> dict[str, str]:
    return {field: env[name] for name, field in ENV_VARS.items() if env.get(name)}


def _spec_error(exc: ValidationError, config_path: Path | None) -> SpecError:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "llm"
    env_name = next((name for name, f in ENV_VARS.items() if f == field), None)
    source = f"judgegen.toml [llm], ${env_name} or --{field.replace('_', '-')}"
    return SpecError(
        str(config_path or source), f"llm.{field}", first["msg"], "give a valid value or remove it"
    )
