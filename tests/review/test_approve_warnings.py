"""`judgegen approve` says so when the review record does not vouch for the approved bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from generator.review.mutate import MutationReport, MutationRow, mutation_kinds
from generator.review.mutation_testing import MutationTesting
from tests.fixtures.review.helpers import BACKEND, invoke, workspace
from tests.fixtures.review.helpers import TASK as MUTATED
from toolkit.util.hashing import sha256_file

REPO = Path(__file__).resolve().parents[2]
TASK = "nobel_physics_2023"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A copy of the example judge, its review record and its task spec, not yet approved."""
    for folder in ("generated_judges", "reviews", "tasks"):
        (tmp_path / folder).mkdir()
    shutil.copy(REPO / f"generated_judges/{TASK}.py", tmp_path / "generated_judges")
    shutil.copy(REPO / f"reviews/{TASK}.json", tmp_path / "reviews")
    shutil.copytree(REPO / f"tasks/{TASK}", tmp_path / f"tasks/{TASK}")
    return tmp_path


def _approve(work: Path) -> Result:
    args = ["--judges", str(work / "generated_judges"), "--reviews", str(work / "reviews")]
    args += ["--tasks", str(work / "tasks")]
    return CliRunner().invoke(main, ["approve", TASK, "--reviewer", "Eve", *args])


def _edit_record(work: Path, **fields: object) -> None:
    sidecar = work / f"reviews/{TASK}.json"
    data = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**data, **fields}))


def test_a_judge_its_review_record_vouches_for_is_approved_without_warnings(work: Path) -> None:
    done = _approve(work)
    assert done.exit_code == 0, done.output
    assert "warning" not in done.stderr


def test_a_judge_edited_after_its_review_record_is_approved_with_a_warning(work: Path) -> None:
    judge = work / f"generated_judges/{TASK}.py"
    judge.write_text(judge.read_text() + "# tweak\n")
    done = _approve(work)
    assert done.exit_code == 0
    assert f"{work / 'reviews' / TASK}.json: judge_sha256" in done.stderr
    assert "describes other bytes" in done.stderr


def test_a_review_record_a_newer_judgegen_wrote_is_approved_with_a_warning(work: Path) -> None:
    """What it records beyond this judgegen's version (a gate added since) is not checked."""
    _edit_record(work, version=99)
    done = _approve(work)
    assert done.exit_code == 0, done.output
    assert f"{work / 'reviews' / TASK}.json: version is 99, a newer judgegen's" in done.stderr


def test_an_unmeasured_kill_rate_is_warned_about(work: Path) -> None:
    _edit_record(work, mutation={"ran": False, "note": "--no-mutation", "reports": []})
    done = _approve(work)
    assert "mutation kill rate not measured (skipped: --no-mutation)" in done.stderr
    assert f"judgegen mutate {TASK} --write-review" in done.stderr


def _with_first_mutation(work: Path, **row: object) -> None:
    """The record, its mutation stage's first row replaced by `row`'s fields."""
    mutation = json.loads((work / f"reviews/{TASK}.json").read_text())["mutation"]
    first = mutation["reports"][0]["mutations"][0]
    first.update(row)
    _edit_record(work, mutation=mutation)


def test_a_mutation_the_judge_failed_on_is_warned_about(work: Path) -> None:
    error = "nobel_physics_2023/good~drop_cited_url: the judge failed: KeyError: 'url'"
    _with_first_mutation(work, outcome="error", score=None, error=error)
    done = _approve(work)
    assert done.exit_code == 0
    message = " ".join(done.stderr.split())
    assert "mutation testing counts 1 error as not killed: good: drop_cited_url" in message
    assert "KeyError: 'url'" in message
    assert "make the judge score such answers instead of failing on them" in message


def test_an_inconclusive_mutation_is_warned_about(work: Path) -> None:
    missing = ["https://www.nobelprize.org/prizes/physics/2023/quillfeather/facts/"]
    _with_first_mutation(work, outcome="inconclusive", missing_pages=missing)
    done = _approve(work)
    message = " ".join(done.stderr.split())
    assert "mutation testing counts 1 inconclusive as not killed" in message
    assert missing[0] in message and "judgegen cache-pages" in message


def _with_kinds(work: Path, kinds: dict[str, int] | None) -> None:
    """The record, its mutation stage's report measured under `kinds` (None: not named)."""
    mutation = json.loads((work / f"reviews/{TASK}.json").read_text())["mutation"]
    for report in mutation["reports"]:
        report.pop("kinds", None)
        report.update({"kinds": kinds} if kinds is not None else {"version": 2})
    _edit_record(work, mutation=mutation)


def test_a_kill_rate_measured_under_fewer_mutation_kinds_is_warned_about(work: Path) -> None:
    """A kind added since (as shift_day was) leaves the recorded rate over a smaller set."""
    older = {k: v for k, v in mutation_kinds().items() if k not in {"shift_day", "swap_sources"}}
    _with_kinds(work, older)
    done = _approve(work)
    assert done.exit_code == 0
    message = " ".join(done.stderr.split())
    assert f"{work / 'reviews' / TASK}.json: mutation testing is stale: kill rate" in message
    assert "applied other mutation kinds than judgegen applies now (not applied then: " in message
    assert "shift_day v2, swap_sources v1" in message
    assert f"`judgegen mutate {TASK} --write-review`" in message


def test_a_kill_rate_measured_under_other_mutation_kinds_is_printed_as_stale(work: Path) -> None:
    _with_kinds(work, {**mutation_kinds(), "change_date": 0})
    line = _approve(work).stdout.splitlines()[1]
    assert line.startswith("mutation testing of these bytes: kill rate ")
    assert line.endswith(
        "by generate's mutation stage (`mutation`) [stale: other mutation kinds (changed "
        "since: change_date v0 -> v2)]"
    )


def test_a_kill_rate_recorded_before_mutation_kinds_were_named_is_warned_about(
    work: Path,
) -> None:
    _with_kinds(work, None)
    message = " ".join(_approve(work).stderr.split())
    assert "mutation testing is stale" in message
    assert "recorded before judgegen named its mutation kinds" in message


def test_a_mutate_write_review_without_its_mutation_kinds_is_warned_about(work: Path) -> None:
    recorded = _mutation_testing(work, _crashed_report())
    recorded["report"].pop("kinds")
    _edit_record(work, mutation_testing={**recorded, "version": 4})
    message = " ".join(_approve(work).stderr.split())
    assert "by `judgegen mutate --write-review` (`mutation_testing`), applied other" in message


def test_skipped_acceptance_is_warned_about(work: Path) -> None:
    _edit_record(work, acceptance={"ran": False, "note": "--no-acceptance"})
    done = _approve(work)
    assert "acceptance did not run (--no-acceptance)" in done.stderr


def test_a_spec_edited_since_generation_is_warned_about(work: Path) -> None:
    spec = work / f"tasks/{TASK}/task.yaml"
    spec.write_text(spec.read_text().replace("notes: |\n", "notes: |\n  Edited.\n", 1))
    done = _approve(work)
    assert "header spec_sha256" in done.stderr and "the spec changed" in done.stderr
    assert f"judgegen regenerate {TASK}" in done.stderr


def test_a_judge_without_a_review_record_is_warned_about(work: Path) -> None:
    (work / f"reviews/{TASK}.json").unlink()
    done = _approve(work)
    assert done.exit_code == 0
    assert "no review record" in done.stderr


def test_the_json_output_lists_the_warnings(work: Path) -> None:
    (work / f"reviews/{TASK}.json").unlink()
    args = ["--judges", str(work / "generated_judges"), "--reviews", str(work / "reviews")]
    done = CliRunner().invoke(main, ["approve", TASK, "--reviewer", "Eve", "--json", *args])
    assert any("no review record" in w for w in json.loads(done.stdout)["warnings"])


# The latest mutation testing: a later `judgegen mutate --write-review` (`mutation_testing`)
# supersedes generate's mutation stage, and a kill rate of other bytes is stale.
MUTATE_RUN = ["--backend", BACKEND, "--pages", "pages", "--no-sandbox"]
BRITTLE = REPO / "tests/fixtures/review/judges/first_ascents_brittle.py"
URL_BUILDER = REPO / "tests/fixtures/review/judges/first_ascents_url_builder.py"
WORDING = REPO / "tests/fixtures/review/judges/first_ascents_wording.py"


@pytest.fixture
def mutated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The review fixture task `first_ascents` with a review record of its judge's bytes (the
    example record's fields) whose generate stage skipped mutation testing."""
    monkeypatch.chdir(workspace(tmp_path))
    (tmp_path / "reviews").mkdir()
    return tmp_path


def _record_first_ascents(work: Path) -> None:
    """A review record of the workspace's judge as it is now, mutation testing skipped."""
    data = json.loads((REPO / f"reviews/{TASK}.json").read_text())
    judge = work / f"generated_judges/{MUTATED}.py"
    data.update(task_id=MUTATED, judge_sha256=sha256_file(judge))
    data["mutation"] = {"ran": False, "note": "--no-mutation", "reports": []}
    (work / f"reviews/{MUTATED}.json").write_text(json.dumps(data))


def _mutate_then_approve(work: Path, judge: Path | None = None) -> Result:
    if judge is not None:
        shutil.copy(judge, work / f"generated_judges/{MUTATED}.py")
    _record_first_ascents(work)
    invoke(["mutate", MUTATED, "--write-review", *MUTATE_RUN])
    return invoke(["approve", MUTATED, "--reviewer", "Eve"])


def test_a_kill_rate_measured_by_mutate_write_review_is_shown_by_approve(mutated: Path) -> None:
    done = _mutate_then_approve(mutated)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[1] == (
        "mutation testing of these bytes: kill rate 0.86 (6 of 7 mutations of good); rewrites "
        "keeping the meaning: 2 of 2 kept the score, by `judgegen mutate --write-review` "
        "(`mutation_testing`)"
    )
    assert "not measured" not in done.stderr
    assert "rewrite" not in done.stderr


def test_a_rewrite_whose_score_changed_is_warned_about_with_the_fix(mutated: Path) -> None:
    """A judge reading how a date is written: approve names the rewrite, both scores and
    what to do, as generate's gate does."""
    done = _mutate_then_approve(mutated, WORDING)
    assert done.exit_code == 0, done.output
    message = " ".join(done.stderr.split())
    assert (
        "a rewrite keeping the answer's meaning changed the judge's score: good: reformat_date "
        "(May 29, 1953 -> 1953-05-29) scored 0.666667 instead of 1; compare values by meaning "
        "with toolkit.checks (same_date, parse_number, ...)" in message
    )
    assert "(recorded by `judgegen mutate --write-review` (`mutation_testing`))" in message


def test_errors_recorded_by_mutate_write_review_are_warned_about(mutated: Path) -> None:
    done = _mutate_then_approve(mutated, BRITTLE)
    message = " ".join(done.stderr.split())
    assert "mutation testing counts 2 errors as not killed: good: drop_cited_url" in message
    assert "ValueError: the judge raised: no URL for Mount Everest" in message
    assert "make the judge score such answers instead of failing on them" in message
    assert "(recorded by `judgegen mutate --write-review` (`mutation_testing`))" in message


def test_inconclusive_mutations_recorded_by_mutate_write_review_are_warned_about(
    mutated: Path,
) -> None:
    done = _mutate_then_approve(mutated, URL_BUILDER)
    message = " ".join(done.stderr.split())
    assert "mutation testing counts 1 inconclusive as not killed: good: replace_name" in message
    assert "https://peaks.example/quillfeather" in message and "judgegen cache-pages" in message


def test_a_kill_rate_measured_before_the_judge_was_edited_is_said_to_be_stale(
    mutated: Path,
) -> None:
    _record_first_ascents(mutated)
    assert invoke(["mutate", MUTATED, "--write-review", *MUTATE_RUN]).exit_code == 0
    judge = mutated / f"generated_judges/{MUTATED}.py"
    judge.write_text(judge.read_text() + "# tweak\n")
    done = invoke(["approve", MUTATED, "--reviewer", "Eve"])
    message = " ".join(done.stderr.split())
    assert "mutation testing is stale: kill rate 0.86 (6 of 7 mutations of good)" in message
    assert f"but the judge is now {sha256_file(judge)[:19]}" in message
    assert done.stdout.splitlines()[1] == "mutation testing of these bytes: not measured"


def _mutation_testing(work: Path, report: MutationReport) -> dict:
    """What `mutate --write-review` records for `report`, measured on the judge as it is."""
    judge = sha256_file(work / f"generated_judges/{TASK}.py")
    return MutationTesting.of(report, judge, None).model_dump(mode="json")


def _crashed_report() -> MutationReport:
    """Three of six mutations killed, one survived, two the judge failed on."""
    outcomes = ["killed", "killed", "killed", "survived", "error", "error"]
    rows = [
        MutationRow(
            name=f"m{index}",
            description=f"change {index}",
            score=None if outcome == "error" else 0.5,
            outcome=outcome,
            error=f"KeyError: 'm{index}'" if outcome == "error" else None,
        )
        for index, outcome in enumerate(outcomes)
    ]
    return MutationReport(
        task_id=TASK, answer="good", original_score=1.0, kinds=mutation_kinds(), mutations=rows
    )


def test_mutate_write_review_after_generation_supersedes_the_generate_stage(work: Path) -> None:
    _edit_record(work, mutation_testing=_mutation_testing(work, _crashed_report()))
    done = _approve(work)
    assert "kill rate 0.50 (3 of 6 mutations of good; 2 errors count as not killed), by " in (
        done.stdout
    )
    assert "counts 2 errors as not killed: good: m4 (change 4) error: KeyError: 'm4'" in (
        " ".join(done.stderr.split())
    )


def test_errors_recorded_without_their_rows_are_still_warned_about(work: Path) -> None:
    """A version 3 `mutation_testing` has the counts but not the mutations."""
    recorded = _mutation_testing(work, _crashed_report())
    del recorded["report"]
    _edit_record(work, mutation_testing={**recorded, "version": 3})
    done = _approve(work)
    message = " ".join(done.stderr.split())
    assert "mutation testing counts 2 errors as not killed; a mutation the judge failed" in message
