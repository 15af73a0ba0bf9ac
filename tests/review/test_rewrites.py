"""Rewrites keep an answer's meaning and change how a value is written: a judge must keep the
score of each. A `changed` rewrite shows a judge reading the written form (a value copied from
a sample answer, compared as text); rewrites never count in the kill rate."""

from __future__ import annotations

import pytest

from generator.cli.mutate import render_text
from generator.review.mutate import (
    Mutation,
    MutationReport,
    MutationRow,
    MutationStage,
    RewriteRow,
    failed_checks,
    mutation_kinds,
    reformat_date,
    reformat_number,
    rewrite_all,
    rewrite_row,
)
from toolkit.checks import parse_date, parse_number

LAUNCH = "Helios-2 launched on **March 14, 2024** (https://helios.example.org/2024-03-01/news)."


def test_reformat_date_writes_a_month_name_date_as_iso() -> None:
    rewrite = reformat_date(LAUNCH)
    assert rewrite is not None
    assert rewrite.description == "March 14, 2024 -> 2024-03-14"
    assert "**2024-03-14**" in rewrite.text


def test_reformat_date_writes_a_day_first_date_as_iso() -> None:
    rewrite = reformat_date("Released on 20 February 2025.")
    assert rewrite is not None and rewrite.text == "Released on 2025-02-20."


def test_reformat_date_writes_an_iso_date_with_its_month_name_when_no_month_name_date() -> None:
    rewrite = reformat_date("Released 2023-01-31 with notes.")
    assert rewrite is not None and rewrite.text == "Released January 31, 2023 with notes."


def test_reformat_date_takes_the_first_month_name_date_before_any_iso_one() -> None:
    rewrite = reformat_date("Planned 2024-01-02, launched 3 March 2024, landed May 5, 2024.")
    assert rewrite is not None and rewrite.description == "3 March 2024 -> 2024-03-03"


def test_reformat_date_never_rewrites_a_cited_url() -> None:
    rewrite = reformat_date("See https://blog.example.org/2025-02-20/notes for it.")
    assert rewrite is None


def test_reformat_date_leaves_a_date_no_calendar_has_alone() -> None:
    """ "Feb 30, 2024" names no day, so no ISO form says the same thing."""
    assert reformat_date("Due Feb 30, 2024.") is None


def test_reformat_date_names_the_same_day_as_the_toolkit_reads_it() -> None:
    for answer in ("On Sept. 3rd, 2024.", "On 3rd of Sept. 2024.", "On 2024-09-03."):
        rewrite = reformat_date(answer)
        assert rewrite is not None
        assert parse_date(rewrite.text) == parse_date(answer)


def test_reformat_number_drops_the_thousands_separators() -> None:
    rewrite = reformat_number("The Nile is about 6,650 km long.")
    assert rewrite is not None
    assert (rewrite.description, rewrite.text) == (
        "6,650 -> 6650",
        "The Nile is about 6650 km long.",
    )
    assert parse_number("6650") == parse_number("6,650")


def test_reformat_number_keeps_the_decimals() -> None:
    rewrite = reformat_number("It weighs 12,345.5 kg.")
    assert rewrite is not None and rewrite.description == "12,345.5 -> 12345.5"


def test_reformat_number_never_adds_separators() -> None:
    """ "2024" is a year: written "2,024" it would say something else."""
    assert reformat_number("The 2024 edition has 1200 changes and 85000 lines.") is None


def test_reformat_number_leaves_cited_urls_dates_and_lists_of_numbers_alone() -> None:
    answer = "Scores 3,400,5 on Dec 7,2023 (https://x.example/1,200/page)."
    assert reformat_number(answer) is None


@pytest.mark.parametrize(
    "answer",
    [
        "It weighs 2,5 kg and costs 1,200 EUR.",
        "Population 1.200.000; its area is 1,250 km2.",
        "Priced 1.234,50 EUR, 1,200 units were sold.",
        "It scored 0,75 in 2,300 trials.",
    ],
)
def test_reformat_number_leaves_an_answer_writing_decimal_commas_alone(answer: str) -> None:
    """Its "1,200" may be 1.2: without separators it would say twelve hundred."""
    assert reformat_number(answer) is None


def test_reformat_number_still_applies_beside_a_decimal_point_or_a_comma_in_a_url() -> None:
    answer = "It cost $3.50 each (https://x.example/a/2,5/b) for 1,200 items."
    rewrite = reformat_number(answer)
    assert rewrite is not None and rewrite.description == "1,200 -> 1200"


def test_rewrite_all_is_deterministic_and_ordered() -> None:
    answer = "On March 14, 2024 it flew 1,200 km."
    assert [r.name for r in rewrite_all(answer)] == ["reformat_date", "reformat_number"]
    assert rewrite_all(answer) == rewrite_all(answer)


def _launch_rewrite() -> Mutation:
    rewrite = reformat_date(LAUNCH)
    assert rewrite is not None
    return rewrite


REWRITE = _launch_rewrite()


def test_a_rewrite_scored_as_the_original_is_kept() -> None:
    assert rewrite_row(REWRITE, 1.0, 1.0 - 1e-12).outcome == "kept"


def test_a_rewrite_scored_otherwise_is_changed_lower_or_higher() -> None:
    assert rewrite_row(REWRITE, 1.0, 0.5).outcome == "changed"
    assert rewrite_row(REWRITE, 0.5, 1.0).outcome == "changed"


def test_a_changed_score_while_a_cited_page_was_missing_is_inconclusive() -> None:
    row = rewrite_row(REWRITE, 1.0, 0.5, missing=["https://x.example/built"])
    assert (row.outcome, row.missing_pages) == ("inconclusive", ["https://x.example/built"])


def test_a_rewrite_the_judge_failed_on_is_an_error_with_no_score() -> None:
    row = rewrite_row(REWRITE, 1.0, None, error="ValueError: boom")
    assert (row.outcome, row.score, row.error) == ("error", None, "ValueError: boom")


def _report(rewrite_outcome: str) -> MutationReport:
    killed = MutationRow(name="change_date", description="d", score=0.0, outcome="killed")
    rewrite = RewriteRow(
        name="reformat_date",
        description="March 14, 2024 -> 2024-03-14",
        score=0.0 if rewrite_outcome == "changed" else 1.0,
        outcome=rewrite_outcome,
    )
    return MutationReport(
        task_id="t", answer="good", original_score=1.0, mutations=[killed], rewrites=[rewrite]
    )


def test_rewrites_never_count_in_the_kill_rate() -> None:
    assert _report("changed").kill_rate == _report("kept").kill_rate == 1.0
    assert MutationStage(reports=[_report("changed")]).total == 1


def test_the_stage_names_each_changed_rewrite_with_both_scores() -> None:
    stage = MutationStage(reports=[_report("changed")])
    assert stage.rewrites_changed() == [
        "good: reformat_date (March 14, 2024 -> 2024-03-14) scored 0 instead of 1"
    ]
    assert MutationStage(reports=[_report("kept")]).rewrites_changed() == []


def test_the_summary_line_says_how_many_rewrites_kept_or_changed_the_score() -> None:
    assert MutationStage(reports=[_report("kept")]).summary_line() == (
        "kill rate 1.00 (1 of 1 mutations of good); rewrites keeping the meaning: 1 of 1 kept "
        "the score"
    )
    assert (
        MutationStage(reports=[_report("changed")])
        .summary_line()
        .endswith("; rewrites keeping the meaning: 1 of 1 changed the score")
    )


def test_the_command_s_text_ends_with_the_fix_when_a_rewrite_changed_the_score() -> None:
    text = render_text(_report("changed"))
    assert "  changed  reformat_date       0.000  March 14, 2024 -> 2024-03-14" in text
    assert text.endswith(
        "rewrites keeping the meaning: 1 of 1 changed the score\n"
        "a rewrite keeping the meaning changed the score: compare values by meaning with "
        "toolkit.checks (same_date, parse_number, ...), not by their written form; never copy "
        "an expected value from a sample answer\n"
    )


def test_a_report_before_rewrites_reads_as_having_none() -> None:
    old = {"version": 3, "task_id": "t", "answer": "good", "original_score": 1.0}
    assert MutationReport.model_validate(old).rewrites == []


def test_a_changed_score_with_a_check_of_the_judges_own_code_failing_is_changed() -> None:
    row = rewrite_row(REWRITE, 1.0, 0.5, failed_checks=["launch_date_matches"])
    assert (row.outcome, row.failed_checks) == ("changed", ["launch_date_matches"])


def test_a_changed_score_from_turned_verdicts_alone_shows_nothing_of_the_judge() -> None:
    """A live verifier may answer a reworded claim otherwise (its sensitivity to wording, or
    noise): with every check of the judge's own code passing, the rewrite is not counted as
    changed, so it cannot fail a generation, and it is listed as unproven."""
    row = rewrite_row(REWRITE, 1.0, 0.5, failed_checks=[])
    assert row.outcome == "verdicts_differ"
    stage = MutationStage(reports=[_report_with(row)])
    assert stage.rewrites_changed() == []
    assert any("verdicts differ" in line for line in stage.rewrites_unproven())
    assert "1 turned verdicts only" in stage.summary_line()


def test_failed_checks_are_the_failed_leaves_no_verification_decided() -> None:
    tree = {
        "id": "root",
        "status": "failed",
        "children": [
            {"id": "date_matches", "status": "failed", "children": []},
            {"id": "page_confirms", "status": "failed", "children": []},
            {"id": "named", "status": "passed", "children": []},
        ],
    }
    summary = {
        "eval_breakdown": [{"verification_tree": tree}],
        "verifications": [{"node_id": "page_confirms", "passed": False}],
    }
    assert failed_checks(summary) == ["date_matches"]
    assert failed_checks({"final_score": 0.0}) is None


def _report_with(row: RewriteRow) -> MutationReport:
    return MutationReport(
        task_id="launch", answer="good", original_score=1.0, kinds=mutation_kinds(), rewrites=[row]
    )
