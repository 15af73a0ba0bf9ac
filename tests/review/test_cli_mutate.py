"""`judgegen mutate`: which one-fact damages of an accepted answer the judge notices."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from generator.cli.mutate import SECTION_END, SECTION_START
from generator.review.mutate import mutation_kinds
from tests.fixtures.review.helpers import BACKEND, TASK, invoke, workspace
from toolkit.util.hashing import sha256_file

ROOT = Path(__file__).resolve().parents[2]
RUN = ["--backend", BACKEND, "--pages", "pages", "--no-sandbox"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workspace(tmp_path))
    return tmp_path


def test_mutations_of_the_good_answer_are_killed_except_the_unchecked_number(work: Path) -> None:
    result = invoke(["mutate", TASK, *RUN])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "first_ascents: mutating answer 'good' (score 1)"
    outcomes = {line.split()[1]: line.split()[0] for line in lines if line.startswith("  ")}
    assert outcomes == {
        "drop_cited_url": "killed",
        "change_date": "killed",
        "shift_day": "killed",
        "change_number": "survived",
        "remove_list_item": "killed",
        "replace_name": "killed",
        "swap_sources": "killed",
        "reformat_date": "kept",
        "reformat_number": "kept",
    }
    assert lines[-2:] == [
        "kill rate 0.86 (6 of 7 mutations lowered the score)",
        "rewrites keeping the meaning: 2 of 2 kept the score",
    ]


def test_rewrites_are_listed_after_the_mutations_and_not_in_the_kill_rate(work: Path) -> None:
    lines = invoke(["mutate", TASK, *RUN]).stdout.splitlines()
    header = lines.index("rewrites keeping the meaning (the judge must keep the score):")
    assert [line.split()[1] for line in lines[header + 1 : header + 3]] == [
        "reformat_date",
        "reformat_number",
    ]
    assert "  kept     reformat_date       1.000  May 29, 1953 -> 1953-05-29" in lines
    assert "  kept     reformat_number     1.000  8,849 -> 8849" in lines


WORDING = Path(__file__).parents[1] / "fixtures/review/judges/first_ascents_wording.py"


def test_a_judge_comparing_a_date_as_written_changes_a_rewrite_and_exits_1(work: Path) -> None:
    """The judge compares the extracted date with the ground truth's text: the same day
    written as ISO scores lower, which is a finding (exit 1) naming the fix."""
    shutil.copy(WORDING, work / "generated_judges" / f"{TASK}.py")
    result = invoke(["mutate", TASK, *RUN])
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    changed = next(line for line in lines if "reformat_date" in line)
    assert changed.split()[:3] == ["changed", "reformat_date", "0.667"]
    assert "rewrites keeping the meaning: 1 of 2 changed the score" in lines
    assert lines[-1] == (
        "a rewrite keeping the meaning changed the score: compare values by meaning with "
        "toolkit.checks (same_date, parse_number, ...), not by their written form; never copy "
        "an expected value from a sample answer"
    )


def test_write_review_lists_the_rewrites_and_their_outcomes(
    work: Path,
) -> None:
    shutil.copy(WORDING, work / "generated_judges" / f"{TASK}.py")
    (work / "reviews").mkdir()
    judge = work / "generated_judges" / f"{TASK}.py"
    record = {"version": 1, "task_id": TASK, "judge_sha256": sha256_file(judge)}
    (work / "reviews" / f"{TASK}.json").write_text(json.dumps(record))
    assert invoke(["mutate", TASK, "--write-review", *RUN]).exit_code == 1
    text = (work / "reviews" / f"{TASK}.md").read_text()
    assert "| rewrite | change | score | outcome |" in text
    assert "| reformat_date | May 29, 1953 -> 1953-05-29 | 0.667 | changed |" in text
    sidecar = json.loads((work / "reviews" / f"{TASK}.json").read_text())
    rows = sidecar["mutation_testing"]["report"]["rewrites"]
    assert [(row["name"], row["outcome"]) for row in rows] == [
        ("reformat_date", "changed"),
        ("reformat_number", "kept"),
    ]


def test_json_report_has_scores_and_kill_rate(work: Path) -> None:
    result = invoke(["mutate", TASK, "--json", *RUN])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["version"], data["answer"], data["original_score"]) == (4, "good", 1.0)
    rows = {row["name"]: row for row in data["mutations"]}
    assert rows["change_date"]["description"] == "May 29, 1953 -> May 29, 1954"
    assert rows["change_date"]["score"] == pytest.approx(2 / 3)
    assert rows["swap_sources"]["score"] == pytest.approx(1 / 3)
    assert rows["change_number"]["outcome"] == "survived"
    assert (data["killed"], data["kill_rate"]) == (6, pytest.approx(6 / 7))
    rewrites = {row["name"]: row for row in data["rewrites"]}
    assert rewrites["reformat_number"]["description"] == "8,849 -> 8849"
    assert rewrites["reformat_date"]["score"] == 1.0
    assert (data["rewrites_kept"], data["rewrites_changed"]) == (2, 0)


def test_a_named_answer_that_does_not_score_1_is_refused(work: Path) -> None:
    result = invoke(["mutate", TASK, "--answer", "wrong", *RUN])
    assert result.exit_code == 2
    assert "--answer wrong: no sample answer of first_ascents scores 1 (wrong=0.333333)" in (
        result.stderr
    )


def test_write_review_replaces_only_its_own_section(work: Path) -> None:
    reviews = work / "reviews"
    reviews.mkdir()
    before = f"# Review record\n\nReviewed text.\n\n{SECTION_START}\nstale\n{SECTION_END}\n"
    (reviews / f"{TASK}.md").write_text(before + "\n## Later section\n")
    (reviews / f"{TASK}.json").write_text(json.dumps({"version": 1, "task_id": TASK}))
    for _ in range(2):
        result = invoke(["mutate", TASK, "--write-review", *RUN])
        assert result.exit_code == 0, result.stderr
    text = (reviews / f"{TASK}.md").read_text()
    assert text.startswith("# Review record\n\nReviewed text.\n\n" + SECTION_START)
    assert text.endswith(SECTION_END + "\n\n## Later section\n")
    assert text.count(SECTION_START) == 1 and "stale" not in text
    assert "| change_number | 8,849 -> 8,846 | 1.000 | survived |" in text
    sidecar = json.loads((reviews / f"{TASK}.json").read_text())
    assert sidecar["task_id"] == TASK
    assert sidecar["mutation_testing"]["killed"] == 6
    assert sidecar["mutation_testing"]["kill_rate"] == pytest.approx(6 / 7)


def test_write_review_names_the_judge_bytes_the_mutations_ran_on(work: Path) -> None:
    judge = work / "generated_judges" / f"{TASK}.py"
    (work / "reviews").mkdir()
    record = {"version": 1, "task_id": TASK, "judge_sha256": sha256_file(judge)}
    (work / "reviews" / f"{TASK}.json").write_text(json.dumps(record))
    result = invoke(["mutate", TASK, "--write-review", *RUN])
    assert result.exit_code == 0, result.stderr
    sidecar = json.loads((work / "reviews" / f"{TASK}.json").read_text())
    assert sidecar["mutation_testing"]["judge_sha256"] == sha256_file(judge)


def test_write_review_names_the_mutation_kinds_it_applied(work: Path) -> None:
    """So a later change to judgegen's kinds shows the recorded kill rate as stale."""
    judge = work / "generated_judges" / f"{TASK}.py"
    (work / "reviews").mkdir()
    record = {"version": 1, "task_id": TASK, "judge_sha256": sha256_file(judge)}
    (work / "reviews" / f"{TASK}.json").write_text(json.dumps(record))
    assert invoke(["mutate", TASK, "--write-review", *RUN]).exit_code == 0
    sidecar = json.loads((work / "reviews" / f"{TASK}.json").read_text())
    assert sidecar["mutation_testing"]["report"]["kinds"] == mutation_kinds()
    text = (work / "reviews" / f"{TASK}.md").read_text()
    assert "Mutation kinds applied: drop_cited_url v1, change_date v2, shift_day v2," in text
    assert "reformat_date v1, reformat_number v2." in text


def test_write_review_refuses_a_record_of_other_judge_bytes(work: Path) -> None:
    """A record describing another version of the judge would vouch for a kill rate that
    version never had (the judge was edited after it was reviewed)."""
    (work / "reviews").mkdir()
    record = {"version": 1, "task_id": TASK, "judge_sha256": "sha256:" + "0" * 64}
    sidecar = work / "reviews" / f"{TASK}.json"
    sidecar.write_text(json.dumps(record))
    result = invoke(["mutate", TASK, "--write-review", *RUN])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "describes judge bytes sha256:0000000000" in message and "Regenerate" in message
    assert json.loads(sidecar.read_text()) == record
    assert not (work / "reviews" / f"{TASK}.md").exists()


def test_write_review_appends_the_section_to_a_record_without_one(work: Path) -> None:
    (work / "reviews").mkdir()
    (work / "reviews" / f"{TASK}.md").write_text("# Review record\n")
    result = invoke(["mutate", TASK, "--write-review", *RUN])
    assert result.exit_code == 0, result.stderr
    text = (work / "reviews" / f"{TASK}.md").read_text()
    assert text.startswith(f"# Review record\n\n{SECTION_START}\n## Mutation testing\n")


def test_example_task_mutations_run_in_the_sandbox_and_are_killed(work: Path) -> None:
    args = ["--tasks", str(ROOT / "tasks"), "--judges", str(ROOT / "generated_judges")]
    backend = "tests.fixtures.review.scripted:report_backend"
    run = ["--backend", backend, "--pages", "pages", "--json"]
    result = invoke(["mutate", "cpython_latest_release", *args, *run])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {row["name"]: row["outcome"] for row in data["mutations"]}
    assert rows["drop_cited_url"] == "killed"
    assert rows["change_date"] == "killed"
    assert data["killed"] >= 2


def test_no_accepted_sample_answer_means_problems_found(work: Path) -> None:
    result = invoke(["mutate", TASK, "--backend", BACKEND, "--no-sandbox"])
    assert result.exit_code == 1
    assert "no sample answer of first_ascents scores 1 (good=0, partial=0, wrong=0)" in (
        result.stderr
    )


def test_a_judge_crashing_on_a_mutation_is_an_error_not_a_kill(work: Path) -> None:
    brittle = Path(__file__).parents[1] / "fixtures/review/judges/first_ascents_brittle.py"
    shutil.copy(brittle, work / "generated_judges" / f"{TASK}.py")
    result = invoke(["mutate", TASK, "--json", *RUN])
    assert result.exit_code == 1
    rows = {row["name"]: row for row in json.loads(result.stdout)["mutations"]}
    assert rows["drop_cited_url"]["outcome"] == "error"
    assert rows["drop_cited_url"]["score"] is None
    assert (
        "ValueError: the judge raised: no URL for Mount Everest" in rows["drop_cited_url"]["error"]
    )
    assert rows["change_date"]["outcome"] == "killed"


def test_mutations_the_judge_crashed_on_count_as_not_killed(work: Path) -> None:
    brittle = Path(__file__).parents[1] / "fixtures/review/judges/first_ascents_brittle.py"
    shutil.copy(brittle, work / "generated_judges" / f"{TASK}.py")
    result = invoke(["mutate", TASK, "--json", *RUN])
    data = json.loads(result.stdout)
    assert (data["killed"], data["errors"], len(data["mutations"])) == (4, 2, 7)
    assert data["kill_rate"] == pytest.approx(4 / 7)


URL_BUILDER = Path(__file__).parents[1] / "fixtures/review/judges/first_ascents_url_builder.py"


@pytest.fixture
def url_builder(work: Path) -> Path:
    """The workspace judged by a judge that builds page addresses from extracted names."""
    shutil.copy(URL_BUILDER, work / "generated_judges" / f"{TASK}.py")
    return work


def test_a_drop_caused_by_a_page_the_judge_built_is_inconclusive_not_killed(
    url_builder: Path,
) -> None:
    """The renamed mountain makes the judge ask for a page the store lacks (sandboxed run)."""
    result = invoke(["mutate", TASK, "--json", "--backend", BACKEND, "--pages", "pages"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {row["name"]: row for row in data["mutations"]}
    assert rows["replace_name"]["outcome"] == "inconclusive"
    assert rows["replace_name"]["missing_pages"] == ["https://peaks.example/quillfeather"]
    assert rows["change_date"] == {**rows["change_date"], "outcome": "killed", "missing_pages": []}
    assert (data["killed"], data["inconclusive"], data["kill_rate"]) == (3, 1, 3 / 7)


def test_the_report_shows_an_inconclusive_mutation_and_its_missing_page(url_builder: Path) -> None:
    result = invoke(["mutate", TASK, *RUN])
    lines = result.stdout.splitlines()
    assert "  inconclusive replace_name        0.750  Mount Everest -> Morgan Quillfeather" in lines
    assert (
        "               cited pages missing from the page store: https://peaks.example/quillfeather"
        in lines
    )
    assert (
        "kill rate 0.43 (3 of 7 mutations lowered the score; 1 inconclusive counts as not killed)"
        in lines
    )


def test_write_review_records_the_inconclusive_mutation(url_builder: Path) -> None:
    (url_builder / "reviews").mkdir()
    (url_builder / "reviews" / f"{TASK}.json").write_text(json.dumps({"task_id": TASK}))
    assert invoke(["mutate", TASK, "--write-review", *RUN]).exit_code == 0
    sidecar = json.loads((url_builder / "reviews" / f"{TASK}.json").read_text())
    recorded = sidecar["mutation_testing"]
    assert (recorded["killed"], recorded["inconclusive"]) == (3, 1)
    assert recorded["kill_rate"] == pytest.approx(3 / 7)
    text = (url_builder / "reviews" / f"{TASK}.md").read_text()
    assert (
        "| replace_name | Mount Everest -> Morgan Quillfeather | 0.750 | inconclusive (cited "
        "pages missing from the page store: https://peaks.example/quillfeather) |" in text
    )


def test_the_documented_mutate_output_is_the_real_one(work: Path) -> None:
    result = invoke(["mutate", TASK, *RUN])
    assert result.exit_code == 0, result.stderr
    docs = (ROOT / "docs" / "review-commands.md").read_text()
    assert result.stdout in docs


# --write-review on an example judge with its committed review record (version 2), judged by
# the example's authored replies: priced as o4-mini through `scripted:`, or replayed.
SCRIPTED = "scripted:tests.generator.scripted_generation:example_run_policy"
EXAMPLE = "rust_2024_edition"


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example task, its judge, review record and recordings; its pages in `pages`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGEGEN_LEDGER_PATH", str(tmp_path / "ledger.jsonl"))
    for folder in ("tasks", "recordings"):
        shutil.copytree(ROOT / folder / EXAMPLE, tmp_path / folder / EXAMPLE)
    (tmp_path / "generated_judges").mkdir()
    shutil.copy(ROOT / "generated_judges" / f"{EXAMPLE}.py", tmp_path / "generated_judges")
    (tmp_path / "reviews").mkdir()
    for suffix in (".json", ".md"):
        shutil.copy(ROOT / "reviews" / f"{EXAMPLE}{suffix}", tmp_path / "reviews")
    pages = ["cache-pages", "--import-m2w2", str(ROOT / "examples" / "pages"), "--store", "pages"]
    assert invoke(pages).exit_code == 0
    return tmp_path


def mutate_example(provider: str) -> dict:
    args = ["mutate", EXAMPLE, "--write-review", "--pages", "pages", "--no-sandbox"]
    result = invoke([*args, "--provider", provider, "--cache-mode", "off"])
    assert result.exit_code == 0, result.stderr
    return json.loads(Path("reviews", f"{EXAMPLE}.json").read_text())


def test_write_review_records_what_the_mutation_run_cost(example: Path) -> None:
    sidecar = mutate_example(SCRIPTED)
    ledger = [json.loads(line) for line in (example / "ledger.jsonl").read_text().splitlines()]
    llm = sidecar["mutation_testing"]["llm"]
    assert llm["calls"] == len(ledger) > 0
    assert llm["cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in ledger), abs=1e-6)
    assert llm["cost_usd"] > 0 and llm["estimated_live_usd"] is None
    section = (example / "reviews" / f"{EXAMPLE}.md").read_text().split(SECTION_START)[1]
    assert f"{llm['calls']} LLM calls, ${llm['cost_usd']:.4f}" in section


def test_write_review_adds_the_mutation_run_to_the_records_checking_cost(example: Path) -> None:
    before = json.loads((example / "reviews" / f"{EXAMPLE}.json").read_text())["checking_cost"]
    sidecar = mutate_example(SCRIPTED)
    cost = sidecar["checking_cost"]
    assert cost["mutate_command"] == sidecar["mutation_testing"]["llm"]
    assert (cost["acceptance"], cost["mutation"]) == (before["acceptance"], before["mutation"])
    assert cost["total_usd"] == pytest.approx(
        before["total_usd"] + sidecar["mutation_testing"]["llm"]["cost_usd"]
    )
    assert cost["total_usd"] > before["total_usd"]


def test_write_review_records_a_replayed_run_as_costing_nothing(example: Path) -> None:
    sidecar = mutate_example(f"replay:recordings/{EXAMPLE}")
    llm = sidecar["mutation_testing"]["llm"]
    assert llm["calls"] > 0 and llm["cost_usd"] == 0 and llm["estimated_live_usd"] > 0
    assert sidecar["checking_cost"]["total_usd"] == 0
    section = (example / "reviews" / f"{EXAMPLE}.md").read_text().split(SECTION_START)[1]
    assert f"{llm['calls']} LLM calls, $0.0000 (replayed fixtures, no model called" in section
