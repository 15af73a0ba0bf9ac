"""`judgegen regenerate` on the command line: selection, skips, JSON, exit codes, prompt snapshot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.review.regenerate import SpecChange, regenerate_request
from generator.stages.context import GenerationContext, JudgeExample
from generator.stages.provenance import Provenance, with_header
from generator.stages.spec import load_spec
from tests.generator.conftest import git
from tests.generator.scripted_generation import FixturePolicy
from tests.generator.test_prompts import check_snapshot
from tests.generator.test_regenerate import FIXTURE, TASK, edit_spec, make_repo
from toolkit.llm.models import LLMRequest, LLMResponse

PROVIDER = "scripted:tests.generator.test_regenerate_cli:regeneration_policy"


def regeneration_policy(request: LLMRequest) -> LLMResponse:
    """`--provider scripted:…` answering from the regeneration fixture's replies."""
    return FixturePolicy(FIXTURE, FIXTURE / "replies")(request)


def add_fresh_task(repo: Path) -> None:
    """A second task whose judge was generated from its current spec."""
    tasks = repo / "tasks"
    shutil.copytree(tasks / TASK, tasks / "fresh_task")
    spec = (tasks / "fresh_task" / "task.yaml").read_text().replace(f"id: {TASK}", "id: fresh_task")
    (tasks / "fresh_task" / "task.yaml").write_text(spec)
    header = Provenance(
        task_id="fresh_task",
        spec_sha256=load_spec(tasks / "fresh_task").sha256(),
        prompts_sha256="sha256:bb",
        model="m-1",
        toolkit_version="0.1.0",
    )
    (repo / "generated_judges" / "fresh_task.py").write_text(
        with_header((FIXTURE / "reviewed_judge.py.txt").read_text(), header)
    )


def invoke(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.chdir(repo)
    return CliRunner().invoke(
        main, ["regenerate", *args, "--provider", PROVIDER, "--cache-mode", "off"]
    )


def test_no_task_and_no_stale_is_a_usage_error(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(git_repo, monkeypatch)
    assert result.exit_code == 2
    assert "--stale" in result.stderr


def test_stale_regenerates_exactly_the_stale_tasks(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    add_fresh_task(repo)
    fresh = (repo / "generated_judges" / "fresh_task.py").read_bytes()
    edit_spec(repo)
    result = invoke(repo, monkeypatch, "--stale", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [r["task_id"] for r in payload["results"]] == [TASK]
    assert payload["results"][0]["status"] == "published"
    assert payload["results"][0]["diff"]["code"]["changed"] == ["evaluate"]
    assert "stale: river_lengths" in result.stderr
    assert (repo / "generated_judges" / "fresh_task.py").read_bytes() == fresh
    assert git(repo, "branch", "--list", "judge/*").split() == [f"judge/{TASK}"]


def test_up_to_date_task_without_force_is_skipped_with_a_message(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    before = (repo / "generated_judges" / f"{TASK}.py").read_bytes()
    result = invoke(repo, monkeypatch, TASK)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"{TASK}: skipped: up to date")
    assert "--force" in result.stdout
    assert (repo / "generated_judges" / f"{TASK}.py").read_bytes() == before


def test_json_lists_a_skipped_task_and_no_stale_task_selects_nothing(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    result = invoke(repo, monkeypatch, TASK, "--stale", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [(r["task_id"], r["status"]) for r in payload["results"]] == [(TASK, "skipped")]
    assert "stale: none" in result.stderr
    assert git(repo, "branch", "--list", "judge/*") == ""


def test_no_commit_writes_files_says_approval_is_invalid_and_makes_no_branch(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    edit_spec(repo)
    result = invoke(repo, monkeypatch, TASK, "--no-commit")
    assert result.exit_code == 0, result.stderr
    assert "~ def evaluate" in result.stdout and "~ river_1_length" in result.stdout
    assert "approval by Ada" in result.stdout and "approval.stale.json" in result.stdout
    assert git(repo, "branch", "--list", "judge/*") == ""


def test_a_regeneration_from_a_scripted_policy_says_no_model_was_called(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    edit_spec(repo)
    result = invoke(repo, monkeypatch, TASK, "--no-commit")
    assert result.exit_code == 0, result.stderr
    note = f"scripted policy {PROVIDER.removeprefix('scripted:')}, no model called"
    judge = (repo / "generated_judges" / f"{TASK}.py").read_text()
    assert Provenance.from_header(judge).responses == note
    record = json.loads((repo / "reviews" / f"{TASK}.json").read_text())
    assert record["responses"] == note
    assert record["usage"] and all(row["cost_usd"] == 0 for row in record["usage"])


def test_budget_stop_exits_3_and_leaves_judge_and_approval_alone(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    edit_spec(repo)
    before = {p: p.read_bytes() for p in (repo / "generated_judges").iterdir()}
    approval = (repo / "reviews" / f"{TASK}.approval.json").read_bytes()
    result = invoke(repo, monkeypatch, TASK, "--budget-usd", "0.01")
    assert result.exit_code == 3
    assert "budget of $0.01 reached" in result.stderr and "LLM: " in result.stderr
    assert {p: p.read_bytes() for p in (repo / "generated_judges").iterdir()} == before
    assert (repo / "reviews" / f"{TASK}.approval.json").read_bytes() == approval


def test_task_without_a_judge_is_a_usage_error(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(git_repo.parent / "cli")
    (repo / "generated_judges" / f"{TASK}.py").unlink()
    result = invoke(repo, monkeypatch, TASK)
    assert result.exit_code == 2
    assert "judgegen generate river_lengths" in result.stderr


def snapshot_context(tmp_path: Path) -> GenerationContext:
    task_dir = tmp_path / TASK
    shutil.copytree(FIXTURE / "answers", task_dir / "answers")
    shutil.copy(FIXTURE / "task_v2.yaml", task_dir / "task.yaml")
    return GenerationContext(
        loaded=load_spec(task_dir),
        api_reference="API REFERENCE (fixed for the snapshot)",
        mistakes_catalog="MISTAKES CATALOG (fixed for the snapshot)",
        examples=[JudgeExample(task_id="tiny", origin="bundled", source="unused")],
    )


def test_forced_regeneration_of_an_unchanged_spec_says_so(tmp_path: Path) -> None:
    context = snapshot_context(tmp_path)
    text = (FIXTURE / "task_v2.yaml").read_text()
    sha = context.loaded.sha256()
    change = SpecChange(
        old_sha256=sha, new_sha256=sha, spec_file="task.yaml", new_text=text, old_text=text
    )
    request = regenerate_request(context, "model-x", "x = 1\n", change)
    prompt = request.messages[0].content[0].text
    assert "this regeneration was forced" in prompt and "could not be recovered" not in prompt
    assert change.summary().startswith("spec unchanged")


def test_regenerate_prompt_snapshot(tmp_path: Path) -> None:
    context = snapshot_context(tmp_path)
    loaded = context.loaded
    task_dir = Path(loaded.task_dir)
    change = SpecChange(
        old_sha256="sha256:" + "0" * 64,
        new_sha256=loaded.sha256(),
        spec_file=str(task_dir / "task.yaml"),
        new_text=(FIXTURE / "task_v2.yaml").read_text(),
        old_text=(FIXTURE / "task.yaml").read_text(),
        recovered_from=f"0123456789ab:tasks/{TASK}/task.yaml",
    )
    source = (FIXTURE / "reviewed_judge.py.txt").read_text()
    request = regenerate_request(context, "model-x", source, change)
    check_snapshot("regenerate.txt", request.messages[0].content[0].text)
    assert request.system == (context.system_block(),) and request.system[0].cache
    assert request.metadata.purpose == "regenerate"
