"""Settings: defaults < judgegen.toml < environment < flags; no credentials from files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llm.conftest import verify_request
from toolkit.errors import SpecError
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import build_client, build_provider, default_backend
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import LLMSettings


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "judgegen.toml"
    path.write_text(body)
    return path


def test_defaults_pick_o4_mini_for_judging_and_a_sonnet_for_generation() -> None:
    settings = LLMSettings.from_env_and_file(env={})
    judge, generation = settings.for_role("judge"), settings.for_role("generation")
    assert (judge.model, judge.provider) == ("o4-mini", "openai")
    assert generation.model.startswith("claude-sonnet") and generation.provider == "anthropic"
    assert settings.cache_path == Path(".judgegen/llm-cache.sqlite")
    assert settings.cache_mode is CacheMode.RW


def test_environment_overrides_file_and_flags_override_environment(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[llm]\nconcurrency = 3\ncache_mode = "ro"\nbudget_usd = 5\n')
    env = {"JUDGEGEN_CACHE_MODE": "strict", "JUDGEGEN_BUDGET_USD": "2.5"}
    settings = LLMSettings.from_env_and_file(config, env=env, budget_usd=1.0, concurrency=None)
    assert settings.concurrency == 3
    assert settings.cache_mode is CacheMode.STRICT
    assert settings.budget_usd == 1.0


def test_price_overrides_come_from_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[llm.prices."my-model"]\ninput = 1.0\noutput = 2.0\n')
    settings = LLMSettings.from_env_and_file(config, env={})
    assert settings.prices["my-model"].output == 2.0


def test_an_api_key_in_the_file_is_rejected(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[llm]\nanthropic_api_key = "sk-ant-x"\n')
    with pytest.raises(SpecError) as caught:
        LLMSettings.from_env_and_file(config, env={})
    assert "environment" in str(caught.value) and "sk-ant-x" not in str(caught.value)


def test_an_invalid_value_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        LLMSettings.from_env_and_file(env={"JUDGEGEN_CACHE_MODE": "sometimes"})
    assert "llm.cache_mode" in str(caught.value)


def test_unknown_provider_is_a_spec_error() -> None:
    with pytest.raises(SpecError):
        build_client(LLMSettings(provider="nope", cache_mode="off", ledger_path=None))


async def test_scripted_provider_spec_loads_the_policy() -> None:
    settings = LLMSettings(
        provider="scripted:tests.llm.policies:verdict", cache_mode="off", ledger_path=None
    )
    client = build_client(settings)
    response = await client.complete(verify_request())
    assert set(response.parsed) == {"reasoning", "result"}
    assert client.ledger.rows[0].provider == "scripted:tests.llm.policies:verdict"


async def test_switching_the_scripted_policy_never_serves_the_other_policys_cached_answers(
    tmp_path: Path,
) -> None:
    answers = []
    for policy in ("always_supported", "never_supported", "always_supported"):
        spec = f"scripted:tests.llm.policies:{policy}"
        settings = LLMSettings(provider=spec, cache_path=tmp_path / "c.sqlite", ledger_path=None)
        async with build_client(settings) as client:
            response = await client.complete(verify_request())
        answers.append((response.parsed["result"], response.cache_hit))
    assert answers == [(True, False), (False, False), (True, True)]


async def test_a_scripted_provider_built_from_a_spec_keeps_no_request_log() -> None:
    """A run's provider must not hold every request (page text, screenshots) until exit:
    450 evaluations kept ~200 MB alive that way."""
    spec = "scripted:tests.llm.policies:verdict"
    settings = LLMSettings(provider=spec, cache_mode=CacheMode.OFF, ledger_path=None)
    provider = build_provider(spec, settings)
    assert isinstance(provider, ScriptedProvider)
    await provider.complete(verify_request())
    assert provider.calls == []


async def test_default_backend_verifies_through_the_layer(tmp_path: Path) -> None:
    from toolkit.backends import VerifyRequest

    settings = LLMSettings(
        provider="scripted:tests.llm.policies:verdict",
        cache_path=tmp_path / "c.sqlite",
        ledger_path=None,
    )
    backend = default_backend(settings)
    verdict = await backend.verify(VerifyRequest(claim="The sky is blue."))
    assert isinstance(verdict.passed, bool)
    assert backend.model == "o4-mini"
    assert 2 <= backend.client.summary().calls <= 3


def test_judge_model_default_matches_the_toolkit_backend_default() -> None:
    from toolkit.backends import DEFAULT_JUDGE_MODEL

    assert LLMSettings().judge_model == DEFAULT_JUDGE_MODEL


def test_sdks_and_the_schema_validator_are_imported_only_when_used() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from toolkit.llm.client import build_provider\n"
        "from toolkit.llm.settings import LLMSettings\n"
        "import toolkit.backends\n"
        "build_provider('anthropic', LLMSettings()); build_provider('openai', LLMSettings())\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'jsonschema_rs') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
