"""Each answer mutation damages exactly one kind of fact, deterministically; the kill rate
counts mutations the judge crashed on, or scored lower only while a cited page was missing
(inconclusive), as not killed."""

from __future__ import annotations

import json
from pathlib import Path

from generator.cli.mutate import record_in_review, render_text
from generator.review.mutate import (
    REPLACEMENT_NAME,
    MutationReport,
    MutationRow,
    MutationStage,
    change_date,
    change_number,
    drop_cited_url,
    mutate_all,
    mutate_answer,
    mutation_row,
    remove_list_item,
    remove_table_row,
    replace_name,
    shift_day,
    swap_sources,
)
from generator.review.runs import ReviewRuns
from generator.stages.spec import load_spec
from tests.fixtures.review.scripted import HERE, backend, page_store
from toolkit.pages.store import PageStore
from toolkit.urls import extract_urls

ANSWER = """The commit a1b2c3d was made on Dec 7, 2023 by Haotian Liu \
([commit](https://github.com/h/LLaVA/commit/a1b2c3d)). It changed 12 files.

- Haotian Liu: https://github.com/h
- Chunyuan Li: https://github.com/c
"""


def test_drop_cited_url_keeps_the_link_text():
    mutation = drop_cited_url(ANSWER)
    assert "https://github.com/h/LLaVA/commit/a1b2c3d" not in mutation.text
    assert "(commit)" in mutation.text


def test_drop_cited_url_removes_a_bare_url():
    assert drop_cited_url("See https://a.example/x for it.").text == "See  for it."


def test_change_date_moves_a_month_name_date_one_year():
    assert "Dec 7, 2024" in change_date(ANSWER).text


def test_change_date_handles_iso_dates():
    assert change_date("Released 2023-12-07.").text == "Released 2024-12-07."


def test_change_date_ignores_dates_inside_urls():
    assert change_date("See https://x.example/2023-12-07/post") is None


def test_shift_day_moves_a_month_name_date_one_day_within_its_month():
    mutation = shift_day(ANSWER)
    assert mutation.description == "Dec 7, 2023 -> Dec 8, 2023"
    assert "Dec 8, 2023" in mutation.text and "Dec 7" not in mutation.text


def test_shift_day_moves_a_late_day_back_so_the_month_stays():
    assert shift_day("Released 2023-01-31.").text == "Released 2023-01-30."
    assert shift_day("Released Feb 28th, 2024.").text == "Released Feb 27th, 2024."


def test_shift_day_keeps_the_width_of_the_day():
    assert shift_day("Released 2023-12-09.").text == "Released 2023-12-10."
    assert shift_day("Released 2023-12-01.").text == "Released 2023-12-02."


def test_shift_day_ignores_dates_inside_urls():
    assert shift_day("See https://x.example/2023-12-07/post") is None


def test_change_number_skips_urls_and_dates():
    mutation = change_number(ANSWER)
    assert mutation.description == "12 -> 19"
    assert "Dec 7, 2023" in mutation.text


def test_change_number_skips_a_numbered_list_s_marker():
    """ "1." numbers an item and states no fact: changing it damages nothing."""
    mutation = change_number("1. **Nile** — about 6,650 km long\n2. **Congo**\n")
    assert mutation.description == "6,650 -> 6,657"
    assert mutation.text.startswith("1. **Nile**")


def test_change_number_skips_a_day_first_date():
    assert change_number("Released on 20 February 2025 as 1.85.").description == "1.85 -> 1.82"


def test_change_date_moves_a_day_first_date_one_year():
    mutation = change_date("Released on **20 February 2025**.")
    assert mutation.description == "20 February 2025 -> 20 February 2026"
    assert mutation.text == "Released on **20 February 2026**."


def test_shift_day_moves_a_day_first_date_one_day():
    assert shift_day("On 20 February 2025.").text == "On 21 February 2025."


def test_shift_day_keeps_an_ordinal_suffix_right():
    assert shift_day("On March 3rd, 2024.").text == "On March 4th, 2024."
    assert shift_day("On 21st of June 2024.").text == "On 22nd of June 2024."


def test_the_date_kinds_take_the_first_month_name_date_whichever_order_it_is_written():
    answer = "Announced May 5, 2024; released 3 June 2024."
    assert change_date(answer).description == "May 5, 2024 -> May 5, 2025"
    assert change_date("Announced 3 June 2024; released May 5, 2024.").description == (
        "3 June 2024 -> 3 June 2025"
    )


def test_a_word_that_only_starts_like_a_month_is_no_date():
    assert change_date("The Mayor 5, 2024 plan.") is None


def test_change_number_keeps_thousands_separators():
    assert change_number("About 1,250 people.").text == "About 1,257 people."


def test_remove_list_item_drops_the_last_item():
    mutation = remove_list_item(ANSWER)
    assert "Chunyuan Li" not in mutation.text and "- Haotian Liu" in mutation.text


TABLE_ANSWER = """Three laureates:

| Laureate | Source |
|:---|---|
| Pierre Agostini | https://example.org/agostini |
| Anne L'Huillier | https://example.org/lhuillier |

Both shared it.
"""


def test_remove_table_row_drops_the_last_body_row():
    mutation = remove_table_row(TABLE_ANSWER)
    assert mutation.text == TABLE_ANSWER.replace(
        "| Anne L'Huillier | https://example.org/lhuillier |\n", ""
    )
    assert mutation.description == "removed: | Anne L'Huillier | https://example.org/lhuillier |"


def test_remove_table_row_never_removes_the_header_or_delimiter_row():
    one_row = "| A | B |\n|---|---|\n| 1 | 2 |\n"
    assert remove_table_row(one_row).text == "| A | B |\n|---|---|\n"


def test_remove_table_row_needs_a_delimiter_row():
    assert remove_table_row("| a pipe | in prose |\n| and | another |\n") is None


def test_remove_list_item_leaves_table_rows_alone():
    assert remove_list_item(TABLE_ANSWER) is None


def test_replace_name_replaces_every_occurrence():
    text = replace_name(ANSWER).text
    assert "Haotian Liu" not in text and text.count(REPLACEMENT_NAME) == 2


def test_swap_sources_exchanges_two_items_urls():
    text = swap_sources(ANSWER).text
    assert "- Haotian Liu: https://github.com/c" in text
    assert "- Chunyuan Li: https://github.com/h" in text


# Bare and linked URLs with parentheses, a query and a date in them, as Wikipedia links are.
WIKI_ANSWER = """Planets without moons:

- Mercury (https://en.wikipedia.org/wiki/Mercury_(planet)?oldid=1180000000)
- Venus: [Venus](https://en.wikipedia.org/wiki/Venus_(planet)) <https://x.example/2024-01-01>
"""
MERCURY = "https://en.wikipedia.org/wiki/Mercury_(planet)?oldid=1180000000"
VENUS = "https://en.wikipedia.org/wiki/Venus_(planet)"


def test_no_mutation_rewrites_a_cited_url():
    """A rewritten URL names a page the store lacks, so the score drops for the missing page."""
    cited = set(extract_urls(WIKI_ANSWER))
    mutations = mutate_all(WIKI_ANSWER)
    assert mutations
    for mutation in mutations:
        assert set(extract_urls(mutation.text)) <= cited, mutation.name


def test_change_number_ignores_numbers_inside_a_url_with_parentheses():
    assert change_number(f"See {MERCURY} for it.") is None


def test_drop_cited_url_drops_a_bare_url_with_parentheses_whole():
    mutation = drop_cited_url(WIKI_ANSWER)
    assert mutation.description == f"dropped {MERCURY}"
    assert "- Mercury ()\n" in mutation.text


def test_swap_sources_swaps_whole_urls_with_parentheses():
    mutation = swap_sources(WIKI_ANSWER)
    assert extract_urls(mutation.text) == [VENUS, MERCURY, "https://x.example/2024-01-01"]
    assert f"[Venus]({MERCURY})" in mutation.text


def test_swap_sources_skips_two_spellings_of_one_page():
    assert swap_sources("- A: https://a.example/x\n- B: http://www.a.example/x/\n") is None


def test_mutations_that_do_not_apply_return_none():
    plain = "nothing here"
    mutations = (
        drop_cited_url,
        change_date,
        shift_day,
        remove_list_item,
        remove_table_row,
        swap_sources,
    )
    assert [fn(plain) for fn in mutations] == [None] * len(mutations)


def test_mutate_all_is_deterministic_and_ordered():
    first, second = mutate_all(ANSWER), mutate_all(ANSWER)
    assert first == second
    assert [m.name for m in first] == [
        "drop_cited_url",
        "change_date",
        "shift_day",
        "change_number",
        "remove_list_item",
        "replace_name",
        "swap_sources",
    ]


def report_with(outcomes: list[str]) -> MutationReport:
    rows = [
        MutationRow(
            name=f"m{i}",
            description="change",
            score={"error": None, "survived": 1.0}.get(outcome, 0.0),
            outcome=outcome,
            error="judge crashed" if outcome == "error" else None,
            missing_pages=["https://x.example/built"] if outcome == "inconclusive" else [],
        )
        for i, outcome in enumerate(outcomes)
    ]
    return MutationReport(task_id="t", answer="good", original_score=1.0, mutations=rows)


CRASHED = report_with(["killed", "killed", "killed", "survived", "error", "error"])
MOSTLY_CRASHED = report_with(["killed", "error", "error", "error", "error", "error"])
NAME = replace_name(ANSWER)


def test_errors_count_as_not_killed_in_the_kill_rate():
    assert (CRASHED.killed, CRASHED.survived, CRASHED.errors) == (3, 1, 2)
    assert CRASHED.kill_rate == 0.5


def test_one_kill_among_judge_failures_is_not_a_perfect_kill_rate():
    """A mutation the judge could not evaluate is no evidence the judge catches it."""
    assert MOSTLY_CRASHED.kill_rate == 1 / 6


def test_the_command_and_the_generate_stage_give_the_same_kill_rate():
    assert MutationStage(reports=[CRASHED]).kill_rate == CRASHED.kill_rate


def test_the_kill_rate_line_says_the_errors_count_as_not_killed():
    assert render_text(CRASHED).endswith(
        "kill rate 0.50 (3 of 6 mutations lowered the score; 2 errors count as not killed)\n"
    )
    assert MutationStage(reports=[CRASHED]).summary_line() == (
        "kill rate 0.50 (3 of 6 mutations of good; 2 errors count as not killed)"
    )


def test_write_review_records_the_errors_and_the_same_kill_rate(tmp_path: Path):
    (tmp_path / "t.json").write_text(json.dumps({"version": 1, "task_id": "t"}))
    record_in_review(tmp_path, CRASHED, "sha256:" + "a" * 64)
    sidecar = json.loads((tmp_path / "t.json").read_text())["mutation_testing"]
    assert (sidecar["version"], sidecar["mutations"], sidecar["errors"]) == (6, 6, 2)
    assert [row["outcome"] for row in sidecar["report"]["mutations"]].count("error") == 2
    assert sidecar["kill_rate"] == 0.5
    assert "2 errors count as not killed" in (tmp_path / "t.md").read_text()


def test_a_report_whose_every_mutation_errored_has_no_kill_rate():
    report = report_with(["error"])
    assert report.kill_rate is None
    assert render_text(report).endswith("no mutation was judged conclusively (1 error)\n")


def test_a_drop_while_a_cited_page_was_missing_is_inconclusive():
    row = mutation_row(NAME, 1.0, 0.5, missing=["https://x.example/built"])
    assert (row.outcome, row.missing_pages) == ("inconclusive", ["https://x.example/built"])


def test_a_drop_with_every_cited_page_read_is_a_kill():
    assert mutation_row(NAME, 1.0, 0.5).outcome == "killed"


def test_a_score_that_did_not_drop_survives_even_with_a_page_missing():
    assert mutation_row(NAME, 1.0, 1.0, missing=["https://x.example/built"]).outcome == "survived"


def test_an_inconclusive_mutation_counts_as_not_killed():
    report = report_with(["killed", "survived", "inconclusive"])
    assert (report.killed, report.survived, report.inconclusive) == (1, 1, 1)
    assert report.kill_rate == 1 / 3
    assert render_text(report).endswith(
        "kill rate 0.33 (1 of 3 mutations lowered the score; 1 inconclusive counts as not killed)\n"
    )


def test_the_report_names_the_missing_pages_of_an_inconclusive_mutation():
    report = report_with(["inconclusive"])
    assert "cited pages missing from the page store: https://x.example/built" in render_text(report)
    assert MutationStage(reports=[report]).unproven() == [
        "good: m0 (change) inconclusive: scored 0 while cited pages were missing from the page "
        "store: https://x.example/built"
    ]


K2 = "https://peaks.example/k2"


async def test_a_page_the_original_run_missed_too_does_not_make_a_drop_inconclusive(
    tmp_path: Path,
) -> None:
    """With K2's page missing for the original and the mutations alike, a changed date is
    still a kill; only a page the mutation alone misses makes it inconclusive."""
    judge = HERE / "judges" / "first_ascents_url_builder.py"
    good = next(a for a in load_spec(HERE / "tasks" / "first_ascents").answers if a.name == "good")
    pages = PageStore(page_store(tmp_path / "pages", without=[K2]), readonly=True)
    async with ReviewRuns(backend(), pages=pages, sandbox=False) as runs:
        original = await runs.judged(judge, good.text, task_id="first_ascents", answer_name="good")
        assert original.missing_pages == (K2,)
        score = float(original.summary["final_score"])
        report = await mutate_answer(
            runs,
            judge,
            "first_ascents",
            "good",
            good.text,
            score,
            original_missing=original.missing_pages,
        )
    rows = {row.name: row for row in report.mutations}
    assert (rows["change_date"].outcome, rows["change_date"].missing_pages) == ("killed", [])
    assert rows["replace_name"].outcome == "inconclusive"
    assert rows["replace_name"].missing_pages == ["https://peaks.example/quillfeather"]
