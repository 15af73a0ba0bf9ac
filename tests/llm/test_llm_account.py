"""One account per command: every client it builds shares one budget and one ledger, and the
records made from responses show the ledger's figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.cli.generation import generation_clients
from generator.stages.tape import CallTape
from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.errors import BudgetExceeded, LLMError
from toolkit.llm import Account, LLMClient, ModelPrice, PriceTable
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import LLMSettings

PRICES = PriceTable(prices={"m": ModelPrice(input=1_000_000.0, output=1_000_000.0)})


def test_generation_and_extraction_on_different_providers_share_one_account(
    tmp_path: Path,
) -> None:
    settings = LLMSettings(
        generation_model="claude-sonnet-5-5",
        judge_model="o4-mini",
        cache_path=tmp_path / "c.sqlite",
        ledger_path=None,
        budget_usd=1.0,
    )
    generation, extraction = generation_clients(settings)
    assert (generation.provider.name, extraction.provider.name) == ("anthropic", "openai")
    assert generation.account is extraction.account
    assert generation.budget.cap_usd == 1.0


async def test_a_shared_budget_caps_both_clients_together() -> None:
    account = Account(budget_usd=0.5, prices=PRICES)
    first = LLMClient(ScriptedProvider(verdict), account=account)
    second = LLMClient(ScriptedProvider(verdict), account=account)
    await first.complete(verify_request("a", model="m"))
    with pytest.raises(BudgetExceeded):
        await second.complete(verify_request("b", model="m"))
    assert first.summary() == second.summary()
    assert "1 requests not made" in second.summary_line()


async def test_the_tape_shows_the_ledger_figures_including_failures_and_hits(
    tmp_path: Path,
) -> None:
    def policy(request: LLMRequest) -> dict:
        text = request.messages[0].content[0].text
        return {"unexpected": 1} if text == "bad" else verdict(request)

    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(
        ScriptedProvider(policy), cache=cache, cache_mode=CacheMode.RW, prices=PRICES
    )
    tape = CallTape(client)
    await tape.complete(verify_request("good", model="m"))
    await tape.complete(verify_request("good", model="m"))
    with pytest.raises(LLMError):
        await tape.complete(verify_request("bad", model="m"))
    assert tape.summary_line() == client.summary_line()
    assert "1 cached" in tape.summary_line() and "1 failed" in tape.summary_line()
