"""`judgegen report` never shows results a rerun would redo as current: it checks each counted
result with the runner's own freshness test, lists the stale ones, leaves them out of the
metrics and exits 4 unless --allow-stale; what it cannot check it says."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from generator.cli.report import STALE_EXIT
from tests.fixtures.runner.helpers import BACKEND, run_args
from toolkit.pages import PageStore

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def run(work: Path, *extra: str, pages: bool = True) -> Result:
    args = run_args(work, "--include-unreviewed", "--no-sandbox", *extra, pages=pages)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def report(work: Path, *extra: str, agent: str = "alpha", pages: bool = True) -> Result:
    args = ["report", str(work / "results" / agent), "--judges", str(work / "judges")]
    args += ["--pages", str(work / "pages")] if pages else []
    return CliRunner().invoke(main, [*args, *extra], catch_exceptions=False)


def stale(shown: Result) -> dict[str, str]:
    """The stale results `report --json` lists, as task/answer: reason."""
    listed = json.loads(shown.stdout)["freshness"]["stale"]
    return {f"{s['task_id']}/{s['answer_name']}": s["reason"] for s in listed}


def edit(path: Path) -> None:
    """Change the answer or judge at `path` (a comment line: still valid Python, or Markdown)."""
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")


def plain_report(folder: Path, *extra: str) -> Result:
    """`judgegen report FOLDER` without --judges or --pages."""
    return CliRunner().invoke(main, ["report", str(folder), *extra], catch_exceptions=False)


def as_written_before_the_record(summary: Path) -> None:
    """Make `summary` one written before judgegen recorded the judges folder and page store
    the run read (no `judges_dir` or `pages_dir`)."""
    data = json.loads(summary.read_text(encoding="utf-8"))
    del data["judges_dir"], data["pages_dir"]
    summary.write_text(json.dumps(data), encoding="utf-8")


def test_results_still_current_exit_0_with_nothing_listed_stale(work: Path) -> None:
    run(work)

    shown = report(work, "--json")
    table = report(work)

    assert shown.exit_code == 0, shown.output
    freshness = json.loads(shown.stdout)["freshness"]
    assert freshness["stale"] == [] and freshness["unchecked"] == []
    assert freshness["checked"] == 6
    assert table.exit_code == 0
    assert "STALE" not in table.stdout and "freshness not checked" not in table.stdout


def test_an_edited_answer_makes_its_result_stale_and_the_exit_code_4(work: Path) -> None:
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")

    shown = report(work, "--json")

    assert shown.exit_code == STALE_EXIT == 4
    assert stale(shown) == {
        "python_match/answer_1": "outdated: its answer changed since it was computed; run again"
    }
    assert "1 stale result(s)" in shown.stderr and "--allow-stale" in shown.stderr


def test_a_stale_result_is_left_out_of_the_metrics_as_not_evaluated(work: Path) -> None:
    """As a run's summary leaves out an outdated result it did not redo: its answer exists,
    so the pair is left out, never scored with the old verdict nor 0 as a missing answer."""
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")

    recomputed = json.loads(report(work, "--json").stdout)

    assert "answer_1" not in recomputed["per_task"]["python_match"]["scores"]
    assert recomputed["missing"] == []
    not_evaluated = {(m["task_id"], m["answer_name"]) for m in recomputed["not_evaluated"]}
    assert not_evaluated == {("python_match", "answer_1")}
    (listed,) = recomputed["not_counted"]
    assert listed["reason"].startswith("outdated: its answer changed")


def test_an_edited_judge_makes_every_result_of_its_task_stale(work: Path) -> None:
    run(work)
    edit(work / "judges" / "louvre_hours.py")

    shown = report(work, "--json")

    assert shown.exit_code == STALE_EXIT
    assert set(stale(shown)) == {"louvre_hours/answer_1", "louvre_hours/answer_2"}
    assert all(r.startswith("outdated: its judge changed") for r in stale(shown).values())


def test_allow_stale_exits_0_and_still_lists_them(work: Path) -> None:
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")

    table = report(work, "--allow-stale")
    shown = report(work, "--allow-stale", "--json")

    assert table.exit_code == 0, table.output
    first = table.stdout.splitlines()[:2]
    assert first[0].startswith("STALE (accepted with --allow-stale): 1 result(s) of alpha")
    assert first[1] == (
        "  python_match/answer_1: outdated: its answer changed since it was computed; run again"
    )
    assert shown.exit_code == 0
    assert set(stale(shown)) == {"python_match/answer_1"}
    assert json.loads(shown.stdout)["freshness"]["allow_stale"] is True


def test_the_table_lists_stale_results_before_the_metrics(work: Path) -> None:
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")

    table = report(work)

    assert table.exit_code == STALE_EXIT
    lines = table.stdout.splitlines()
    assert lines[0].startswith("STALE: 1 result(s) of alpha no longer stand for their inputs")
    assert lines[1].startswith("  python_match/answer_1: outdated: its answer changed")
    assert lines[2].startswith("Agent alpha:")


def test_a_removed_answer_is_stale_and_its_pair_missing(work: Path) -> None:
    run(work)
    (work / "answers" / "alpha" / "python_match" / "answer_2.md").unlink()

    shown = report(work, "--json")

    assert shown.exit_code == STALE_EXIT
    assert stale(shown) == {
        "python_match/answer_2": "its answer is gone: restore the answer, or delete this "
        "result file"
    }
    missing = json.loads(shown.stdout)["missing"]
    assert [(m["task_id"], m["answer_name"]) for m in missing] == [("python_match", "answer_2")]


def test_other_toolkit_code_makes_every_result_stale(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgraded judgegen judges with other code: a rerun redoes every result, so none is
    current for the report either."""
    run(work)
    monkeypatch.setattr("toolkit.runner.fingerprint.toolkit_identity", lambda: "9.9+code.other")

    shown = report(work, "--json")

    assert shown.exit_code == STALE_EXIT
    assert len(stale(shown)) == 6
    assert all("judgegen's toolkit code or runtime" in r for r in stale(shown).values())
    assert all("9.9+code.other now) changed" in r for r in stale(shown).values())


def test_a_page_added_to_the_page_store_makes_the_results_citing_it_stale(work: Path) -> None:
    """Judged without a page store, every cited page was missing; once the store given has
    them, the run would redo those results."""
    run(work, pages=False)

    without = report(work, "--json", pages=False)
    shown = report(work, "--json")

    assert without.exit_code == 0, without.output
    assert shown.exit_code == STALE_EXIT
    assert stale(shown)
    assert all("one it found missing is in the page source now" in r for r in stale(shown).values())


def test_the_stale_list_is_what_a_rerun_redoes(work: Path) -> None:
    """One notion of freshness: the results `report` lists stale are exactly those the
    next `judgegen run` judges again."""
    run(work)
    edit(work / "judges" / "le_guin_novels.py")
    edit(work / "answers" / "alpha" / "louvre_hours" / "answer_2.md")
    listed = {
        (agent, pair)
        for agent in ("alpha", "beta")
        for pair in stale(report(work, "--json", agent=agent))
    }
    assert len(listed) == 4  # le_guin_novels: alpha's 2 answers and beta's 1

    again = json.loads(run(work, "--json").stdout)

    assert again["evaluated"] + again["decided"] == len(listed)
    assert report(work).exit_code == 0 and report(work, agent="beta").exit_code == 0


def test_without_the_judges_folder_report_says_the_judges_were_not_checked(
    work: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary that does not name the run's judges folder (written before judgegen
    recorded it): --judges defaults to generated_judges, as before."""
    run(work)
    as_written_before_the_record(work / "results" / "alpha" / "summary.json")
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # no generated_judges here
    args = ["report", str(work / "results" / "alpha"), "--pages", str(work / "pages")]

    table = CliRunner().invoke(main, args)

    assert table.exit_code == 0, table.output
    assert (
        "freshness not checked: no judges folder generated_judges: the results' judges were "
        "not compared (pass --judges DIR, the folder `judgegen run` read) (6 result(s))"
    ) in table.stdout


def test_without_the_page_store_report_says_the_pages_read_were_not_checked(
    work: Path,
) -> None:
    """A summary that does not name the run's page store (written before judgegen recorded
    it), and no --pages: the pages results read are not compared, and that is said."""
    run(work)
    as_written_before_the_record(work / "results" / "alpha" / "summary.json")

    shown = report(work, "--json", pages=False)

    assert shown.exit_code == 0, shown.output
    (unchecked,) = json.loads(shown.stdout)["freshness"]["unchecked"]
    assert unchecked.startswith("the cited pages results read from a page store were not compared")
    assert json.loads(shown.stdout)["freshness"]["pages_dir"] is None
    assert f"freshness not checked: {unchecked}" in shown.stderr


def run_with_an_empty_page_store(work: Path) -> None:
    """`judgegen run --pages` a store that has none of the cited pages: every result that
    cites a page records it missing, and reads none."""
    PageStore(work / "empty_pages").close()
    args = run_args(work, "--include-unreviewed", "--no-sandbox", pages=False)
    done = CliRunner().invoke(main, [*args, "--pages", str(work / "empty_pages")])
    assert done.exit_code == 0, done.output


def test_results_whose_cited_pages_were_all_missing_are_not_checked_without_the_store(
    work: Path,
) -> None:
    """The store the run read may hold those pages now (a rerun would redo the results), so
    without it they are said not checked, never counted as checked."""
    run_with_an_empty_page_store(work)
    as_written_before_the_record(work / "results" / "alpha" / "summary.json")

    shown = report(work, "--json", pages=False)

    assert shown.exit_code == 0, shown.output
    (unchecked,) = json.loads(shown.stdout)["freshness"]["unchecked"]
    assert unchecked.startswith("the cited pages results read from a page store were not compared")
    assert unchecked.endswith("(5 result(s))")  # one answer cites no page


def test_results_of_a_run_that_read_no_page_store_are_checked_without_one(work: Path) -> None:
    """A run without --pages found every cited page missing, as a rerun without it would."""
    run(work, pages=False)

    shown = plain_report(work / "results" / "alpha", "--json")

    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["freshness"]["unchecked"] == []


def test_a_moved_answers_folder_is_said_not_checked_not_stale(work: Path) -> None:
    """Results copied to another machine, or answers moved: report cannot tell, so it says
    so rather than calling every result stale or current."""
    run(work)
    (work / "answers").rename(work / "answers-moved")

    shown = report(work, "--json")

    assert shown.exit_code == 0, shown.output
    freshness = json.loads(shown.stdout)["freshness"]
    assert freshness["stale"] == []
    (unchecked,) = freshness["unchecked"]
    assert "answers/alpha the results were computed from is not there" in unchecked


def test_the_html_report_leaves_stale_results_out_and_exits_4(work: Path) -> None:
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")
    out = work / "report.html"
    args = ["report", str(work / "results"), "--html", str(out), "--judges", str(work / "judges")]

    shown = CliRunner().invoke(main, [*args, "--pages", str(work / "pages")])

    assert shown.exit_code == STALE_EXIT, shown.output
    assert "python_match/answer_1: outdated: its answer changed" in shown.stderr
    assert '<td>alpha</td><td>stale</td><td class="num">1</td>' in out.read_text()


def test_the_html_page_of_one_result_file_says_its_freshness_was_not_checked(work: Path) -> None:
    run(work)
    edit(work / "answers" / "alpha" / "python_match" / "answer_1.md")
    one = work / "results" / "alpha" / "python_match" / "answer_1.json"

    shown = CliRunner().invoke(main, ["report", str(one), "--html", str(work / "one.html")])

    assert shown.exit_code == 0, shown.output
    assert "freshness not checked: one result file" in shown.stderr


def results_spelled_nfd(work: Path, *, then_remove: str | None = None) -> Path:
    """An agent `café` judged by `judgegen run` (its results folder spelled NFC, as run writes
    names) — run again once its answer `then_remove` is removed, if given — the folder then
    renamed to the NFD spelling, as a copy from macOS may spell it."""
    (work / "answers" / "alpha").rename(work / "answers" / NFD)
    run(work)
    if then_remove is not None:
        (work / "answers" / NFD / then_remove).unlink()
        run(work)
    folder = work / "results" / NFD
    (work / "results" / NFC).rename(folder)
    return folder


def test_report_names_an_agent_folder_spelled_nfd_by_its_nfc_name_as_run_does(
    work: Path,
) -> None:
    folder = results_spelled_nfd(work)
    args = ["report", str(folder), "--judges", str(work / "judges"), "--pages", str(work / "pages")]

    shown = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    table = CliRunner().invoke(main, args, catch_exceptions=False)

    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["agent_name"] == NFC
    assert table.stdout.startswith(f"Agent {NFC}: ")
    assert NFD not in table.stdout


def test_report_checks_the_results_of_an_agent_folder_spelled_nfd(work: Path) -> None:
    """Its results are each at their own path in another spelling, not copies: they are
    checked for freshness like any other, so an edited answer is found stale."""
    folder = results_spelled_nfd(work)
    edit(work / "answers" / NFD / "python_match" / "answer_1.md")
    args = ["report", str(folder), "--judges", str(work / "judges"), "--pages", str(work / "pages")]

    shown = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)

    assert shown.exit_code == STALE_EXIT, shown.output
    assert json.loads(shown.stdout)["freshness"]["checked"] == 6
    assert set(stale(shown)) == {"python_match/answer_1"}


def test_report_of_an_agent_folder_spelled_nfd_keeps_what_its_last_run_left_out(
    work: Path,
) -> None:
    """A result file the run listed (its answer gone) is still there in the folder as spelled
    on disk: still listed, its pair still missing, as in the run's summary."""
    folder = results_spelled_nfd(work, then_remove="python_match/answer_2.md")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    args = ["report", str(folder), "--judges", str(work / "judges"), "--pages", str(work / "pages")]

    shown = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)

    recomputed = json.loads(shown.stdout)
    assert recomputed["not_counted"] == summary["not_counted"] != []
    assert recomputed["missing"] == summary["missing"]


def test_the_html_report_names_an_agent_folder_spelled_nfd_by_its_nfc_name(work: Path) -> None:
    results_spelled_nfd(work)
    out = work / "report.html"
    args = ["report", str(work / "results"), "--html", str(out), "--judges", str(work / "judges")]

    shown = CliRunner().invoke(main, [*args, "--pages", str(work / "pages")])

    assert shown.exit_code == 0, shown.output
    page = out.read_text(encoding="utf-8")
    assert f"<td>{NFC}</td><td>partial_completion</td>" in page
    assert f"<td>{NFD}</td>" not in page


def test_the_html_report_refuses_two_agent_folders_spelled_apart_only_by_normalization(
    work: Path,
) -> None:
    """Both would be the one agent `café` of the page's metrics, one hiding the other."""
    run(work)
    shutil.copytree(work / "results" / "alpha", work / "results" / NFC)
    shutil.copytree(work / "results" / "alpha", work / "results" / NFD)
    out = work / "report.html"

    shown = CliRunner().invoke(main, ["report", str(work / "results"), "--html", str(out)])

    assert shown.exit_code == 2
    assert "one agent results folder spelled in two Unicode normalization forms" in shown.stderr
    assert not out.exists()


def run_relative() -> None:
    """`judgegen run --judges judges --pages pages ...` in the working directory (`work`)."""
    args = ["run", "--answers", "answers", "--judges", "judges", "--pages", "pages"]
    args += ["--results", "results", "--reviews", "reviews", "--backend", BACKEND]
    result = CliRunner().invoke(main, [*args, "--include-unreviewed", "--no-sandbox"])
    assert result.exit_code == 0, result.output


def test_the_summary_records_the_judges_folder_and_page_store_the_run_read_absolute(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    run_relative()

    summary = json.loads((work / "results" / "alpha" / "summary.json").read_text("utf-8"))

    assert summary["judges_dir"] == str((work / "judges").resolve())
    assert summary["pages_dir"] == str((work / "pages").resolve())


def test_the_summary_of_a_run_without_a_page_store_records_none(work: Path) -> None:
    run(work, pages=False)

    summary = json.loads((work / "results" / "alpha" / "summary.json").read_text("utf-8"))

    assert summary["judges_dir"] == str((work / "judges").resolve())
    assert summary["pages_dir"] is None


def test_report_checks_against_the_judges_and_pages_the_run_read_without_flags(
    work: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`judgegen run --judges judges --pages pages`, then `judgegen report results/alpha`
    (from elsewhere, without repeating the flags): every result is checked against them."""
    monkeypatch.chdir(work)
    run_relative()
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    folder = work / "results" / "alpha"

    current = plain_report(folder, "--json")
    edit(work / "judges" / "louvre_hours.py")
    after = plain_report(folder, "--json")

    assert current.exit_code == 0, current.output
    freshness = json.loads(current.stdout)["freshness"]
    assert (freshness["checked"], freshness["unchecked"]) == (6, [])
    assert "not checked" not in current.stderr and "note:" not in current.stderr
    assert after.exit_code == STALE_EXIT, after.output
    assert set(stale(after)) == {"louvre_hours/answer_1", "louvre_hours/answer_2"}
    assert json.loads(after.stdout)["freshness"]["unchecked"] == []


def test_a_judges_folder_given_other_than_the_runs_is_used_and_said_on_stderr(
    work: Path,
) -> None:
    run(work)
    other = work / "other_judges"
    shutil.copytree(work / "judges", other)
    edit(other / "python_match.py")

    shown = plain_report(work / "results" / "alpha", "--json", "--judges", str(other))

    assert shown.exit_code == STALE_EXIT, shown.output
    assert set(stale(shown)) == {"python_match/answer_1", "python_match/answer_2"}
    (note,) = [line for line in shown.stderr.splitlines() if line.startswith("note:")]
    assert f"--judges {other} is not the judges folder alpha's last run read" in note
    assert f"({(work / 'judges').resolve()}, as " in note


def test_json_names_the_folders_the_check_used_beside_those_the_run_read(work: Path) -> None:
    """With --judges/--pages/--max-answer-bytes other than the run's, `freshness` names what
    the stale list is relative to; the summary keeps naming what the run read."""
    run(work, pages=False)
    other = work / "other_judges"
    shutil.copytree(work / "judges", other)
    folder = work / "results" / "alpha"

    given = ("--judges", str(other), "--pages", str(work / "pages"), "--max-answer-bytes", "999")
    shown = json.loads(plain_report(folder, "--json", *given).stdout)
    plain = json.loads(plain_report(folder, "--json").stdout)

    checked = shown["freshness"]
    assert (checked["judges_dir"], checked["pages_dir"], checked["max_answer_bytes"]) == (
        str(other.resolve()),
        str((work / "pages").resolve()),
        999,
    )
    assert (shown["judges_dir"], shown["pages_dir"]) == (str((work / "judges").resolve()), None)
    ran = plain["freshness"]
    assert (ran["judges_dir"], ran["pages_dir"]) == (str((work / "judges").resolve()), None)
    assert ran["max_answer_bytes"] == shown["max_answer_bytes"] != 999


def test_the_run_s_own_judges_folder_given_again_is_not_noted(work: Path) -> None:
    run(work)

    shown = report(work, "--json")

    assert shown.exit_code == 0, shown.output
    assert "note:" not in shown.stderr


def test_a_page_store_given_when_the_run_read_none_is_used_and_said_on_stderr(
    work: Path,
) -> None:
    run(work, pages=False)

    shown = plain_report(work / "results" / "alpha", "--json", "--pages", str(work / "pages"))

    assert shown.exit_code == STALE_EXIT, shown.output
    assert stale(shown)
    (note,) = [line for line in shown.stderr.splitlines() if line.startswith("note:")]
    assert f"--pages {work / 'pages'} is not the page store alpha's last run read (none," in note


def test_a_summary_written_before_the_record_is_checked_against_the_flags_as_before(
    work: Path,
) -> None:
    run(work)
    as_written_before_the_record(work / "results" / "alpha" / "summary.json")
    edit(work / "judges" / "louvre_hours.py")

    shown = report(work, "--json")

    assert shown.exit_code == STALE_EXIT, shown.output
    assert set(stale(shown)) == {"louvre_hours/answer_1", "louvre_hours/answer_2"}
    assert "note:" not in shown.stderr
    assert json.loads(shown.stdout)["judges_dir"] is None


def test_the_html_report_of_all_agents_checks_each_against_its_own_run_s_judges(
    work: Path,
) -> None:
    """alpha judged with judges/, beta with other_judges/: `report results/ --html` checks
    each agent's results against the folder its own run read."""
    (work / "answers_b").mkdir()
    (work / "answers" / "beta").rename(work / "answers_b" / "beta")
    other = work / "other_judges"
    shutil.copytree(work / "judges", other)
    run(work)
    beta = run_args(work, "--include-unreviewed", "--no-sandbox", answers=work / "answers_b")
    result = CliRunner().invoke(main, [*beta, "--judges", str(other)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    edit(other / "louvre_hours.py")
    out = work / "report.html"

    shown = plain_report(work / "results", "--html", str(out))

    assert shown.exit_code == STALE_EXIT, shown.output
    assert "STALE: 2 result(s) of beta" in shown.stderr
    assert "of alpha" not in shown.stderr
    assert "not checked" not in shown.stderr and "note:" not in shown.stderr


LIMIT = "340"
"""A --max-answer-bytes that excludes one answer: alpha's le_guin_novels/answer_1 (350 bytes)."""


def run_with_limit(work: Path) -> dict[str, object]:
    """`judgegen run --max-answer-bytes LIMIT`: alpha's summary.json."""
    args = run_args(work, "--include-unreviewed", "--no-sandbox", "--max-answer-bytes", LIMIT)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads((work / "results" / "alpha" / "summary.json").read_text("utf-8"))
    assert summary["per_task"]["le_guin_novels"]["excluded"] == ["answer_1"]
    return summary


def test_the_summary_records_the_run_s_max_answer_bytes(work: Path) -> None:
    summary = run_with_limit(work)

    assert summary["max_answer_bytes"] == int(LIMIT)


def test_report_decides_answers_outcomes_by_the_run_s_max_answer_bytes_without_the_flag(
    work: Path,
) -> None:
    """Checked with the default limit instead, the excluded answer would be judged now: its
    result stale, exit 4, though nothing changed since the run."""
    summary = run_with_limit(work)

    shown = plain_report(work / "results" / "alpha", "--json")

    assert shown.exit_code == 0, shown.output  # as the run's: nothing incomplete
    record = json.loads(shown.stdout)
    assert record["freshness"]["stale"] == []
    assert record["per_task"] == summary["per_task"]
    assert "note:" not in shown.stderr


def test_a_max_answer_bytes_given_other_than_the_run_s_is_used_and_said_on_stderr(
    work: Path,
) -> None:
    run_with_limit(work)

    shown = plain_report(work / "results" / "alpha", "--json", "--max-answer-bytes", "2000000")

    assert shown.exit_code == STALE_EXIT, shown.output
    assert set(stale(shown)) == {"le_guin_novels/answer_1"}
    (note,) = [line for line in shown.stderr.splitlines() if line.startswith("note:")]
    assert "--max-answer-bytes 2000000 is not the limit alpha's last run took (340, as " in note


def test_a_summary_written_before_the_limit_was_recorded_is_checked_with_the_flag(
    work: Path,
) -> None:
    """As before the record: --max-answer-bytes as given, by default `run`'s default."""
    run_with_limit(work)
    summary = work / "results" / "alpha" / "summary.json"
    data = json.loads(summary.read_text(encoding="utf-8"))
    del data["max_answer_bytes"]
    summary.write_text(json.dumps(data), encoding="utf-8")

    default = plain_report(work / "results" / "alpha", "--json")
    given = plain_report(work / "results" / "alpha", "--json", "--max-answer-bytes", LIMIT)

    assert default.exit_code == STALE_EXIT, default.output
    assert set(stale(default)) == {"le_guin_novels/answer_1"}
    assert given.exit_code == 0, given.output
    assert "note:" not in default.stderr + given.stderr


def test_a_page_store_the_run_read_that_is_gone_is_said_and_not_compared(work: Path) -> None:
    """Moved since the run: not a usage error (no --pages was given), and no result is
    called stale or current for its pages."""
    run(work)
    (work / "pages").rename(work / "pages-moved")

    shown = plain_report(work / "results" / "alpha", "--json")

    assert shown.exit_code == 0, shown.output
    assert (
        f"note: the page store {(work / 'pages').resolve()} alpha's last run read cannot be opened"
        in shown.stderr
    )
    (unchecked,) = json.loads(shown.stdout)["freshness"]["unchecked"]
    assert unchecked.startswith("the cited pages results read from a page store were not compared")
    assert json.loads(shown.stdout)["freshness"]["pages_dir"] is None


def test_an_answer_file_respelled_in_the_other_normalization_is_not_gone(work: Path) -> None:
    """The run finds the answer by its name in any spelling and reuses its result (nothing
    to redo): report, asking the same question, finds it too, never `answer gone`."""
    folder = work / "answers" / "alpha" / "python_match"
    (folder / "answer_1.md").rename(folder / f"{NFD}.md")
    run(work)
    (folder / f"{NFD}.md").rename(folder / f"{NFC}.md")  # re-extracted from another archive
    again = json.loads(run(work, "--json").stdout)

    shown = report(work, "--json")

    assert again["evaluated"] + again["decided"] == 0
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["freshness"] == {
        "version": 2,
        "checked": 6,
        "stale": [],
        "unchecked": [],
        "allow_stale": False,
        "judges_dir": str((work / "judges").resolve()),
        "pages_dir": str((work / "pages").resolve()),
        "max_answer_bytes": 2_000_000,
    }


def test_an_agent_folder_respelled_in_the_other_normalization_is_still_checked(
    work: Path,
) -> None:
    """The input folder a result records is there in the other spelling: its answers are
    compared (an edit found stale), not said unchecked as if moved away."""
    (work / "answers" / "alpha").rename(work / "answers" / NFD)
    run(work)
    (work / "answers" / NFD).rename(work / "answers" / NFC)
    edit(work / "answers" / NFC / "python_match" / "answer_1.md")

    shown = report(work, "--json", agent=NFC)

    assert shown.exit_code == STALE_EXIT, shown.output
    assert json.loads(shown.stdout)["freshness"]["unchecked"] == []
    assert set(stale(shown)) == {"python_match/answer_1"}


def test_an_answer_there_in_two_other_spellings_is_said_not_checked(work: Path) -> None:
    """Which of the two the result was computed from cannot be told: report names both and
    the fix, as a run refusing them does, rather than failing or guessing."""
    partly = "\u00ea\u0301"  # e-circumflex composed, its acute accent not
    folder = work / "answers" / "alpha" / "python_match"
    (folder / "answer_1.md").rename(folder / f"{partly}.md")
    run(work)
    (folder / f"{partly}.md").rename(folder / f"{unicodedata.normalize('NFC', partly)}.md")
    (folder / "answer_2.md").rename(folder / f"{unicodedata.normalize('NFD', partly)}.md")

    shown = report(work, "--json")

    assert shown.exit_code != 1, shown.output  # no traceback
    unchecked = json.loads(shown.stdout)["freshness"]["unchecked"]
    assert any("spelled in two Unicode normalization forms" in why for why in unchecked)


def test_a_judge_there_in_both_spellings_is_a_usage_error_naming_both(work: Path) -> None:
    """As `judgegen run` refuses them (exit 2): not a traceback whose exit 1 reads as
    'some results are incomplete'."""
    (work / "answers" / "alpha" / "python_match").rename(work / "answers" / "alpha" / NFC)
    shutil.rmtree(work / "answers" / "beta")
    (work / "judges" / "python_match.py").rename(work / "judges" / f"{NFC}.py")
    run(work)
    shutil.copy(work / "judges" / f"{NFC}.py", work / "judges" / f"{NFD}.py")

    shown = CliRunner().invoke(
        main, ["report", str(work / "results" / "alpha"), "--judges", str(work / "judges")]
    )

    assert shown.exit_code == 2, shown.output
    assert "are one judge spelled in two Unicode normalization forms" in shown.stderr


def test_two_agent_results_folders_spelled_apart_say_which_one_run_no_longer_writes(
    work: Path,
) -> None:
    """After an upgrade, an earlier judgegen's results folder spelled NFD stays beside the one
    `judgegen run` now writes (NFC): the fix is to remove the older one, not to rename
    either (a renamed one is another agent) or merge them."""
    run(work)
    shutil.copytree(work / "results" / "alpha", work / "results" / NFC)
    shutil.copytree(work / "results" / "alpha", work / "results" / NFD)

    shown = CliRunner().invoke(main, ["report", str(work / "results"), "--html", "out.html"])

    assert shown.exit_code == 2
    error = " ".join(shown.stderr.split())
    assert f"`judgegen run` writes the results of agent {NFC} under its NFC spelling" in error
    assert f"delete it ({work / 'results' / NFD}) or move it out of {work / 'results'}" in error
    assert "rename one of them" not in error


def test_a_summary_a_newer_judgegen_wrote_is_a_usage_error(work: Path) -> None:
    """Read as this judgegen's, what a newer one's summary leaves out in ways this one does
    not know would be counted."""
    run(work)
    summary = work / "results" / "alpha" / "summary.json"
    data = json.loads(summary.read_text(encoding="utf-8"))
    summary.write_text(json.dumps({**data, "version": 99}), encoding="utf-8")

    shown = report(work, "--json")

    assert shown.exit_code == 2, shown.output
    assert f"{summary}: a newer judgegen wrote it (summary version 99" in shown.output


def test_a_summary_that_cannot_be_read_is_said_and_the_files_reported_alone(work: Path) -> None:
    run(work)
    summary = work / "results" / "alpha" / "summary.json"
    summary.write_text("{not json", encoding="utf-8")

    shown = report(work, "--json")

    assert shown.exit_code == 0, shown.output
    assert f"note: {summary} cannot be read (" in shown.stderr
    assert json.loads(shown.stdout)["freshness"]["checked"] == 6
