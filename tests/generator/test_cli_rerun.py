"""A stop's message is true for the command that prints it: the LLM layer's fixes say what to
check, alike for every command, and each command says what its own rerun keeps and redoes
(`generator.cli.rerun`), naming only flags it has."""

from __future__ import annotations

import re

import pytest

from generator.cli.group import COMMANDS
from generator.cli.rerun import AFTER_STOP, cache_after, rerun_note
from tests.fixtures.cli_flags import flags_named, flags_of
from toolkit.errors import BudgetExceeded, CacheError
from toolkit.llm.budget import BUDGET_FIX
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.outage import OUTAGE_FIX
from toolkit.llm.provider import NOT_FOUND_FIX, auth_fix
from toolkit.llm.rejection import REJECTED_FIX, STRUCTURED_FIXES, rejected_fix
from toolkit.llm.server_answer import ServerAnswer

NO_RESPONSE_FORMAT = ServerAnswer(
    status=400,
    called="POST http://localhost:8000/v1/chat/completions",
    model="local-model",
    code="",
    param="response_format",
    message="response_format is not supported",
    body="",
)
LLM_LAYER_FIXES = {
    "outage": OUTAGE_FIX,
    "not_found": NOT_FOUND_FIX,
    "rejected": REJECTED_FIX,
    **{f"rejected ({kind})": fix for kind, fix in STRUCTURED_FIXES.items()},
    **{f"auth ({kind})": auth_fix(kind) for kind in ("openai", "anthropic")},
    **{
        f"rejected fix ({kind})": rejected_fix(NO_RESPONSE_FORMAT, kind)
        for kind in STRUCTURED_FIXES
    },
    "budget": BUDGET_FIX,
}
RERUN_CLAIMS = re.compile(r"rerun|run (it|the command) again|kept|unfinished", re.IGNORECASE)


def llm_commands() -> set[str]:
    """The commands that call the LLM: those with the `@llm_options` flags."""
    return {name for name in COMMANDS if "--base-url" in flags_of(name)}


def test_every_command_calling_the_llm_says_what_its_rerun_does() -> None:
    assert set(AFTER_STOP) == llm_commands()


@pytest.mark.parametrize("fix", LLM_LAYER_FIXES.values(), ids=LLM_LAYER_FIXES.keys())
def test_an_llm_layer_fix_names_only_flags_every_command_calling_the_llm_has(fix: str) -> None:
    for command in sorted(llm_commands()):
        assert flags_named(fix) <= flags_of(command), command


@pytest.mark.parametrize("fix", LLM_LAYER_FIXES.values(), ids=LLM_LAYER_FIXES.keys())
def test_an_llm_layer_fix_claims_nothing_about_what_a_rerun_keeps(fix: str) -> None:
    assert RERUN_CLAIMS.search(fix) is None


@pytest.mark.parametrize("mode", list(CacheMode))
@pytest.mark.parametrize("command", sorted(AFTER_STOP))
def test_a_rerun_note_names_only_flags_of_its_command(command: str, mode: CacheMode) -> None:
    overwrite = command == "run"
    assert flags_named(rerun_note(command, mode, overwrite=overwrite)) <= flags_of(command)


def test_a_runs_rerun_keeps_its_finished_results() -> None:
    note = rerun_note("run", CacheMode.RW)
    assert note.startswith("Rerun `judgegen run`: results complete and up to date are kept")
    assert "come from the response cache" in note


def test_a_run_with_overwrite_is_told_its_rerun_would_redo_every_result() -> None:
    note = rerun_note("run", CacheMode.RW, overwrite=True)
    assert note.startswith("Rerun `judgegen run` without --overwrite (with it, every result")


def test_a_generations_rerun_starts_the_stopped_task_again_and_keeps_no_result() -> None:
    note = rerun_note("generate", CacheMode.RW)
    assert "starts again from its draft" in note
    assert "results" not in note and "evaluations" not in note


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        (CacheMode.OFF, "with --cache-mode off every LLM call is made and paid for again"),
        (CacheMode.RO, "with --cache-mode ro none of the LLM answers received was stored"),
        (CacheMode.REFRESH, "with --cache-mode refresh every LLM call is made and paid for"),
    ],
)
def test_a_rerun_that_would_pay_again_says_so(mode: CacheMode, said: str) -> None:
    note = rerun_note("generate", mode)
    assert said in note and "come from the response cache" not in note


def test_a_command_judging_through_its_own_backend_makes_no_claim_about_the_cache() -> None:
    assert "cache" not in rerun_note("validate", None)


@pytest.mark.parametrize(
    "stop",
    [CacheError("c.sqlite", "it is not an SQLite database"), "CacheError: response cache c.sqlite"],
    ids=["error", "run_reason"],
)
def test_a_stop_of_the_cache_itself_makes_the_note_say_nothing_of_that_cache(
    stop: BaseException | str,
) -> None:
    assert cache_after(stop, CacheMode.RW) is None


def test_any_other_stop_keeps_the_cache_mode_for_the_note() -> None:
    assert cache_after(BudgetExceeded("budget of $1 reached"), CacheMode.RW) is CacheMode.RW
