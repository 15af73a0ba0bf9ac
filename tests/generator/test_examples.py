"""The example tasks: replaying their recordings reproduces the committed judges and reviews.

This is the README's main job (`judgegen generate <id> --provider replay:recordings/<id>`).
A failure with a "replay miss" means the prompts, the API reference or the mistakes catalog
changed since the recordings were made: run `python -m tests.generator.record_examples`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.review.mutation_testing import read_latest_mutation_testing
from generator.stages.lint import lint_source
from generator.stages.spec import load_spec
from toolkit.llm.records import load_records
from toolkit.llm.replay import replay_key
from toolkit.runner.approval import approval_problem
from toolkit.util.hashing import sha256_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "recordings").iterdir() if p.is_dir())


def test_there_are_at_least_three_examples_with_good_partial_and_wrong_answers() -> None:
    assert len(EXAMPLES) >= 3
    for task_id in EXAMPLES:
        names = {a.name for a in load_spec(ROOT / "tasks" / task_id).answers}
        assert {"good", "partial", "wrong"} <= names


def checkout(tmp_path: Path, task_id: str) -> None:
    """What a clone holds for one example: its task and recordings, the judges and approvals
    (the reviewed examples the context shows), and the pages of the example answers."""
    for folder in ("tasks", "recordings"):
        shutil.copytree(ROOT / folder / task_id, tmp_path / folder / task_id, symlinks=True)
    shutil.copytree(ROOT / "generated_judges", tmp_path / "generated_judges")
    shutil.copytree(ROOT / "examples" / "pages", tmp_path / "examples" / "pages")
    (tmp_path / "reviews").mkdir()
    for approval in (ROOT / "reviews").glob("*.approval.json"):
        shutil.copy(approval, tmp_path / "reviews")


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_replay_reproduces_the_committed_judge_and_review(
    task_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout(tmp_path, task_id)
    monkeypatch.chdir(tmp_path)
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert CliRunner().invoke(main, pages).exit_code == 0
    args = ["generate", task_id, "--provider", f"replay:recordings/{task_id}", "--pages", "pages"]
    result = CliRunner().invoke(main, [*args, "--cache-mode", "off", "--no-commit"])
    assert result.exit_code == 0, result.stderr[-3000:]
    for path in (
        f"generated_judges/{task_id}.py",
        f"reviews/{task_id}.md",
        f"reviews/{task_id}.json",
    ):
        # byte for byte, hashes included: the README promises that the replayed judge is the
        # reviewed one, so its approval holds and `judgegen run` executes it. Any change under
        # prompts/ changes the prompts hash: re-record with `python -m tests.generator.record_examples`.
        assert (tmp_path / path).read_text() == (ROOT / path).read_text(), path


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_review_names_every_recording_it_used(task_id: str) -> None:
    record = json.loads((ROOT / "reviews" / f"{task_id}.json").read_text())
    recorded = sorted(p.name for p in (ROOT / "recordings" / task_id).glob("*.json"))
    assert set(record["fixtures"]) <= set(recorded)
    unused = set(recorded) - set(record["fixtures"])
    assert all(name.startswith("verify-") for name in unused)


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_example_records_say_no_model_was_called(task_id: str) -> None:
    record = json.loads((ROOT / "reviews" / f"{task_id}.json").read_text())
    assert record["responses"] == "authored fixture, no model called"
    assert record["provenance"]["responses"] == "authored fixture, no model called"
    assert all(row["cost_usd"] == 0 for row in record["usage"])
    marker = (ROOT / "recordings" / task_id / "PROVENANCE.txt").read_text()
    assert marker.startswith("authored fixture, no model called")


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_each_example_exchange_is_recorded_once(task_id: str) -> None:
    requests = [replay_key(r.request) for r in load_records(ROOT / "recordings" / task_id)]
    assert len(set(requests)) == len(requests)


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_example_recordings_say_they_are_scripted_fixtures(task_id: str) -> None:
    # so `cache import` and the `LLM:` line name them fixtures, never a model's answers
    records = load_records(ROOT / "recordings" / task_id)
    assert {record.origin.source if record.origin else None for record in records} == {"scripted"}


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_example_recordings_keep_no_wall_clock_time(task_id: str) -> None:
    # no model took any time to give them; a measured time would change at every re-recording
    records = load_records(ROOT / "recordings" / task_id)
    assert {record.response.latency_s for record in records} == {0.0}


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_example_records_show_acceptance_and_kill_rate(task_id: str) -> None:
    record = json.loads((ROOT / "reviews" / f"{task_id}.json").read_text())
    answers = {a["answer"]: (a["intended"], a["actual"]) for a in record["acceptance"]["answers"]}
    assert answers == {"good": (1.0, 1.0), "partial": (0.5, 0.5), "wrong": (0.0, 0.0)}
    killed = [row for r in record["mutation"]["reports"] for row in r["mutations"]]
    assert record["mutation"]["ran"] and any(row["outcome"] == "killed" for row in killed)
    assert "kill rate" in (ROOT / "reviews" / f"{task_id}.md").read_text()


REVIEWED = sorted(
    p.name.removesuffix(".json")
    for p in (ROOT / "reviews").glob("*.json")
    if not p.name.endswith(".approval.json")
)


@pytest.mark.parametrize("task_id", REVIEWED)
def test_committed_kill_rates_are_over_the_current_mutation_kinds(task_id: str) -> None:
    """A kind added (or changed) since a record was made leaves its kill rate over another set
    of mutations than judgegen applies: a reader would take it as current."""
    sidecar = ROOT / "reviews" / f"{task_id}.json"
    judge = ROOT / "generated_judges" / f"{task_id}.py"
    latest = read_latest_mutation_testing(sidecar, sha256_file(judge))
    assert latest.current is not None, f"{sidecar}: no mutation testing of {judge}'s bytes"
    assert latest.current.kinds_change is None, (
        f"{sidecar}: mutation testing is stale, {latest.current.shown()}; re-record it offline "
        f"with `python -m tests.generator.record_examples {task_id}` (an example), or "
        f"`judgegen mutate {task_id} --write-review`"
    )


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_judgegen_run_on_the_sample_answers_replays_offline(
    task_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout(tmp_path, task_id)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    pages = ["cache-pages", "--import-m2w2", "examples/pages", "--store", "pages"]
    assert runner.invoke(main, pages).exit_code == 0
    run = ["run", "--answers", f"tasks/{task_id}/samples", "--pages", "pages"]
    run += ["--provider", f"replay:recordings/{task_id}"]
    result = runner.invoke(main, [*run, "--cache-mode", "off"])
    assert result.exit_code == 0, result.stderr[-3000:]
    scores = {
        path.stem: json.loads(path.read_text())["final_score"]
        for path in (tmp_path / "results" / "samples" / task_id).glob("*.json")
    }
    assert scores == {"good": 1.0, "partial": 0.5, "wrong": 0.0}
    assert "unreviewed" not in result.stdout + result.stderr


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_example_judges_carry_a_current_approval(task_id: str) -> None:
    judge = ROOT / "generated_judges" / f"{task_id}.py"
    assert approval_problem(judge, ROOT / "reviews", task_id) is None


@pytest.mark.parametrize("task_id", EXAMPLES)
def test_published_example_judge_is_lint_clean(task_id: str) -> None:
    source = (ROOT / "generated_judges" / f"{task_id}.py").read_text()
    report = lint_source(source, f"{task_id}.py")
    assert report.ok, report.render()
