"""Mind2Web 2's per-verification options reach the backend: trials voted over, screenshots."""

from __future__ import annotations

from itertools import cycle
from typing import Any

import pytest

from tests.compat.conftest import PAGE, evaluator
from toolkit.backends import LLMBackend, ScriptedBackend, VerifyRequest
from toolkit.compat import EvaluatorConfig
from toolkit.compat.evaluator import Evaluator
from toolkit.llm.scripted import ScriptedProvider


def flipping(*outcomes: bool) -> ScriptedProvider:
    """A model whose verdicts follow `outcomes`, in trial order."""
    answers = cycle(outcomes)
    return ScriptedProvider(lambda request: {"reasoning": "r", "result": next(answers)})


async def verify_with(ev: Evaluator, **options: Any) -> bool:
    return await ev.verify(claim="It costs $299", node=ev.add_leaf(id="price", desc="p"), **options)


def requests(backend: ScriptedBackend) -> list[VerifyRequest]:
    return [call for call in backend.calls if isinstance(call, VerifyRequest)]


async def test_majority_vote_false_makes_one_call():
    provider = flipping(True, False, False)
    ev = evaluator(LLMBackend(provider))
    assert await verify_with(ev, num_trials=3, majority_vote=False) is True
    assert len(provider.calls) == 1


async def test_num_trials_one_makes_one_call():
    provider = flipping(True, False, False)
    ev = evaluator(LLMBackend(provider))
    assert await verify_with(ev, num_trials=1) is True
    assert len(provider.calls) == 1


async def test_num_trials_five_votes_a_majority_of_five():
    provider = flipping(True, False, False, True, True)
    ev = evaluator(LLMBackend(provider))
    assert await verify_with(ev, num_trials=5) is True
    assert len(provider.calls) == 5


@pytest.mark.parametrize("num_trials", [2, 4])
async def test_an_even_num_trials_is_a_value_error_naming_it_before_any_call(num_trials):
    backend = ScriptedBackend()
    with pytest.raises(ValueError, match="num_trials must be odd"):
        await verify_with(evaluator(backend), num_trials=num_trials)
    assert backend.calls == []


@pytest.mark.parametrize("num_trials", [-1, -3])
async def test_a_negative_num_trials_is_a_value_error_naming_it(num_trials):
    with pytest.raises(ValueError, match="num_trials must be a whole number of at least 1"):
        await verify_with(evaluator(ScriptedBackend()), num_trials=num_trials)


async def test_num_trials_zero_means_the_default_as_in_mind2web2():
    backend = ScriptedBackend()
    ev = evaluator(backend, config=EvaluatorConfig(default_num_trials=5))
    await verify_with(ev, num_trials=0)
    assert [r.trials for r in requests(backend)] == [5]


async def test_config_default_additional_instruction_applies_when_verify_names_none():
    backend = ScriptedBackend()
    config = EvaluatorConfig(default_additional_instruction="Prices in any currency.")
    await verify_with(evaluator(backend, config=config))
    assert [r.additional_instruction for r in requests(backend)] == ["Prices in any currency."]


async def test_an_even_num_trials_without_majority_vote_is_one_call_as_in_mind2web2():
    backend = ScriptedBackend()
    await verify_with(evaluator(backend), num_trials=2, majority_vote=False)
    assert [r.trials for r in requests(backend)] == [1]


async def test_a_verify_naming_no_option_leaves_trials_and_screenshots_to_the_backend():
    backend = ScriptedBackend()
    await verify_with(evaluator(backend), sources=PAGE)
    assert [(r.trials, r.screenshots) for r in requests(backend)] == [(None, True)]


async def test_use_screenshot_false_sends_the_model_no_image():
    provider = flipping(True)
    ev = evaluator(LLMBackend(provider, trials=1))
    await verify_with(ev, sources=PAGE, use_screenshot=False)
    assert [type(part).__name__ for part in provider.calls[0].messages[0].content] == ["TextPart"]


async def test_config_default_num_trials_applies_to_every_verify():
    backend = ScriptedBackend()
    ev = evaluator(backend, config=EvaluatorConfig(default_num_trials=5))
    await verify_with(ev)
    await verify_with(ev, sources=PAGE)
    assert [r.trials for r in requests(backend)] == [5, 5]


async def test_config_set_as_attributes_or_in_a_subclass_applies_as_well():
    class OneCall(EvaluatorConfig):
        default_majority_vote = False

    config = EvaluatorConfig()
    config.default_use_screenshot = False
    backend = ScriptedBackend()
    await verify_with(evaluator(backend, config=OneCall()), sources=PAGE)
    await verify_with(evaluator(backend, config=config), sources=PAGE)
    assert [(r.trials, r.screenshots) for r in requests(backend)] == [(1, True), (3, False)]


async def test_a_per_call_option_overrides_the_config():
    backend = ScriptedBackend()
    config = EvaluatorConfig(default_num_trials=5, default_use_screenshot=False)
    ev = evaluator(backend, config=config)
    await verify_with(ev, sources=PAGE, num_trials=1, use_screenshot=True)
    assert [(r.trials, r.screenshots) for r in requests(backend)] == [(1, True)]


async def test_an_even_config_default_is_a_value_error_naming_the_setting():
    ev = evaluator(ScriptedBackend(), config=EvaluatorConfig(default_num_trials=2))
    with pytest.raises(ValueError, match=r"EvaluatorConfig\.default_num_trials must be odd"):
        await verify_with(ev)


async def test_config_default_additional_instruction_fills_an_empty_instruction():
    backend = ScriptedBackend()
    config = EvaluatorConfig(default_additional_instruction="Prices in any currency.")
    ev = evaluator(backend, config=config)
    await verify_with(ev, additional_instruction=None)
    assert [r.additional_instruction for r in requests(backend)] == ["Prices in any currency."]


async def test_batch_verify_passes_the_options_to_every_verification():
    backend = ScriptedBackend()
    ev = evaluator(backend)
    leaves = [ev.add_leaf(id=f"l{i}", desc="l") for i in range(2)]
    await ev.batch_verify([("c", None, leaf, None) for leaf in leaves], num_trials=5)
    assert [r.trials for r in requests(backend)] == [5, 5]


def test_evaluator_config_rejects_a_setting_it_does_not_have():
    with pytest.raises(TypeError, match="did you mean `default_num_trials`"):
        EvaluatorConfig(num_trials=1)
