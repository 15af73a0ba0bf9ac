"""A result that redoes an incomplete one of the same judgement (same answer, judge and
configuration) carries what the earlier attempts cost (`earlier_attempts`), so no attempt's
spend drops out of the per-result figures; a new judgement (a complete result redone, or
another judge or answer) carries nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    PAGES,
    build_page_store,
    copy_fixtures,
    result_files,
    run_answers,
    run_args,
)
from tests.fixtures.runner.llm_policy import ANSWER_AT_ONCE_ENV
from tests.fixtures.runner.scripted import failing_factory, make_backend

LOUVRE = "alpha/louvre_hours/answer_1.json"
OUTLIVED = "scripted:tests.fixtures.runner.llm_policy:calls_outlive_their_evaluation"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def failed_attempt(work: Path, cost_usd: float) -> dict[str, Any]:
    """Run every answer with verifications failing (incomplete results) and give LOUVRE's
    attempt `cost_usd`, as a paid model would have charged it (the scripted backend costs
    nothing); that result."""
    run_answers(work, failing_factory())
    path = work / "results" / LOUVRE
    stored = json.loads(path.read_text())
    assert stored["status"] == "incomplete" and stored["usage"]["backend_calls"] > 0
    stored["usage"]["cost_usd"] = cost_usd
    path.write_text(json.dumps(stored, indent=2))
    return stored


def test_a_redone_incomplete_result_carries_what_its_earlier_attempt_cost(work: Path) -> None:
    first = failed_attempt(work, 0.25)
    run_answers(work, make_backend())
    redone = result_files(work / "results")[LOUVRE]
    assert redone["status"] == "complete"
    assert redone["earlier_attempts"] == {"attempts": 1, "usage": first["usage"]}
    assert redone["usage"]["backend_calls"] == 3  # this attempt's own
    total = redone["usage_all_attempts"]
    assert total["backend_calls"] == 3 + first["usage"]["backend_calls"]
    assert total["cost_usd"] == pytest.approx(0.25)
    (note,) = [n for n in redone["notes"] if "earlier incomplete attempt" in n]
    assert "1 earlier incomplete attempt" in note and "$0.2500" in note


def test_the_spend_of_successive_incomplete_attempts_adds_up(work: Path) -> None:
    first = failed_attempt(work, 0.25)
    run_answers(work, failing_factory())
    second = result_files(work / "results")[LOUVRE]
    assert second["earlier_attempts"]["attempts"] == 1
    run_answers(work, make_backend())
    redone = result_files(work / "results")[LOUVRE]
    calls = first["usage"]["backend_calls"] + second["usage"]["backend_calls"]
    assert redone["earlier_attempts"]["attempts"] == 2
    assert redone["earlier_attempts"]["usage"]["backend_calls"] == calls
    assert redone["earlier_attempts"]["usage"]["cost_usd"] == pytest.approx(0.25)


def test_the_summary_counts_earlier_attempts_apart_from_the_runs_own_usage(work: Path) -> None:
    """The run's `usage` is what this run spent (as its LLM ledger counts it); the agent's
    summary shows what its results' earlier attempts cost beside what they cost themselves."""
    failed_attempt(work, 0.25)
    failed = [
        r["usage"]
        for name, r in result_files(work / "results").items()
        if name.startswith("alpha/") and r["status"] == "incomplete"
    ]
    report = run_answers(work, make_backend())
    alpha = report.summaries["alpha"]
    assert report.usage.cost_usd == alpha.usage.cost_usd == 0
    assert alpha.earlier_attempts.attempts == len(failed) > 1
    assert alpha.earlier_attempts.usage.backend_calls == sum(u["backend_calls"] for u in failed)
    assert alpha.earlier_attempts.usage.cost_usd == pytest.approx(0.25)
    assert alpha.usage_all_attempts.cost_usd == pytest.approx(0.25)


def test_an_incomplete_attempt_of_another_judge_is_not_carried(work: Path) -> None:
    failed_attempt(work, 0.25)
    judge = work / "judges/louvre_hours.py"
    judge.write_text(judge.read_text() + "\n# revised\n")  # another judge: another judgement
    run_answers(work, make_backend())
    redone = result_files(work / "results")[LOUVRE]
    assert redone["status"] == "complete" and redone["earlier_attempts"] is None
    assert redone["usage_all_attempts"] == redone["usage"]


@pytest.mark.parametrize("why", ["overwrite", "pages_changed"])
def test_a_complete_result_redone_is_a_new_judgement_and_carries_nothing(
    work: Path, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_answers(work, make_backend())
    if why == "pages_changed":  # the cited page now says something else: judged anew
        url = "https://www.louvre.fr/en/visit/hours-admission"
        monkeypatch.setitem(PAGES, url, PAGES[url] + " Updated.")
    run_answers(work, make_backend(), overwrite=why == "overwrite")
    redone = result_files(work / "results")[LOUVRE]
    assert redone["fingerprint"]["pages"]["read"]  # it read the page: redone when it changed
    assert redone["earlier_attempts"] is None
    assert not [n for n in redone["notes"] if "earlier" in n]


def test_overwrite_still_carries_an_incomplete_attempts_spend(work: Path) -> None:
    first = failed_attempt(work, 0.25)
    run_answers(work, make_backend(), overwrite=True)
    redone = result_files(work / "results")[LOUVRE]
    assert redone["earlier_attempts"] == {"attempts": 1, "usage": first["usage"]}


def test_a_run_that_redoes_incomplete_results_says_what_their_earlier_attempts_cost(
    work: Path,
) -> None:
    """End to end with the LLM layer: the first run's judges time out with a paid call out
    (charged to their results), the second redoes them; its record and stderr say what the
    earlier attempts cost apart from its own spend. The model of the first run answers each
    call once its evaluation is over, so how the run goes does not depend on the machine's
    speed; the second run's is the same model answering at once, with time to finish (the
    --timeout is no part of the judgement)."""
    build_page_store(work / "pages")
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
    }

    def run(timeout_s: str, answer_at_once: bool) -> Any:
        args = run_args(work, "--include-unreviewed", "--no-sandbox", "--task", "louvre_hours")
        at = args.index("--backend")
        del args[at : at + 2]
        args += ["--provider", OUTLIVED, "--timeout", timeout_s, "--json"]
        at_once = {ANSWER_AT_ONCE_ENV: "1" if answer_at_once else None}
        return CliRunner(env=env | at_once).invoke(main, args, catch_exceptions=False)

    assert run("1", answer_at_once=False).exit_code == 1  # every judge timed out
    stored = result_files(work / "results")
    first = stored.values()
    assert len(first) == 4 and all(r["status"] == "incomplete" for r in first)
    paid_out = "went on and ended"  # the note of a call left running, ended and counted
    assert [name for name, r in stored.items() if not any(paid_out in n for n in r["notes"])] == []
    assert not any(r["usage"]["unknown_cost_calls"] for r in first)
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    assert sum(r["usage"]["llm_calls"] for r in first) == len(rows)  # every call charged
    spent = sum(r["usage"]["cost_usd"] for r in first)
    assert spent == pytest.approx(sum(row["cost_usd"] for row in rows)) and spent > 0
    second = run("60", answer_at_once=True)  # the same model, answering in time
    assert second.exit_code == 0, second.output
    record = json.loads(second.stdout)
    assert record["earlier_attempts"]["attempts"] == 4
    assert record["earlier_attempts"]["usage"]["cost_usd"] == pytest.approx(spent)
    assert record["usage"]["cost_usd"] == pytest.approx(record["llm"]["cost_usd"])
    assert f"had cost ${spent:.4f} in 4 earlier attempt(s)" in second.stderr
