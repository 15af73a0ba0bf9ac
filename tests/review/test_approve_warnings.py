"""`judgegen approve` says so when the review record does not vouch for the approved bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import main

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
