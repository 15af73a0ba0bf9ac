"""`judgegen diff`: rubric nodes and functions changed between two revisions of a judge."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.cli.diff import rubric_and_code_diff
from generator.review.runs import extraction_backend
from generator.stages.provenance import Provenance
from generator.stages.spec import load_spec
from tests.fixtures.review.helpers import EXTRACT, TASK, invoke, workspace
from tests.fixtures.review.scripted import HERE
from toolkit.llm.settings import LLMSettings

OFFLINE = ["--provider", EXTRACT, "--cache-mode", "off", "--no-sandbox"]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}
V2 = HERE / "judges" / "first_ascents_v2.py"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def git_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The review workspace as a fresh git repository (nothing committed), the cwd."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    root = workspace(tmp_path / "repo")
    git(root, "init", "-q", "-b", "main")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with two commits of the judge: v1, then v2."""
    root = git_workspace(tmp_path, monkeypatch)
    git(root, "add", "tasks", "generated_judges")
    git(root, "commit", "-q", "-m", "v1")
    shutil.copy(V2, root / "generated_judges" / f"{TASK}.py")
    git(root, "commit", "-q", "-am", "v2")
    return root


def test_diff_between_two_commits_lists_rubric_and_function_changes(repo: Path) -> None:
    result = invoke(["diff", TASK, "HEAD~1", "HEAD", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "judge first_ascents: HEAD~1 -> HEAD (all-pass skeletons on answer 'good')"
    assert lines[1] == "provenance header: 0 added, 0 removed, 0 changed"
    assert lines[2] == "rubric nodes: 1 added, 3 removed, 3 changed"
    assert "+ no_duplicates: No mountain is listed twice  [critical]" in lines
    assert "- k2_cited: The answer cites a page for K2  [critical]" in lines
    changed = next(line for line in lines if line.startswith("~ k2_climbers"))
    assert "critical: False -> True" in changed
    assert "'The cited page names the first climbers of K2'" in changed
    assert "functions: 0 added, 0 removed, 2 changed" in lines
    assert lines[-2:] == ["~ def _find", "~ def evaluate"]


def test_diff_defaults_to_the_last_commit_against_the_working_tree(repo: Path) -> None:
    judge = repo / "generated_judges" / f"{TASK}.py"
    judge.write_text(judge.read_text() + "\n\ndef unused() -> None:\n    pass\n")
    result = invoke(["diff", TASK, "--json", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["rev_a"] == git(repo, "rev-parse", "HEAD")
    assert data["rev_b"] == "WORKTREE"
    assert data["rubric"] == {"version": 1, "added": [], "removed": [], "changed": []}
    assert data["code"]["added"] == ["unused"]
    assert data["code"]["changed"] == []


def test_an_unchanged_judge_reformatted_shows_no_function_change(repo: Path) -> None:
    judge = repo / "generated_judges" / f"{TASK}.py"
    judge.write_text(judge.read_text().replace("    wanted = ", "    # a comment\n    wanted = "))
    result = invoke(["diff", TASK, "HEAD", "WORKTREE", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    assert "rubric nodes: 0 added, 0 removed, 0 changed" in result.stdout
    assert "functions: 0 added, 0 removed, 0 changed" in result.stdout


def test_unknown_revision_is_a_usage_error(repo: Path) -> None:
    result = invoke(["diff", TASK, "no-such-rev", *OFFLINE])
    assert result.exit_code == 2
    assert "unknown revision 'no-such-rev'" in result.stderr


@pytest.fixture
def repo_adding_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose first commit has the task but not its judge; the second adds it."""
    root = git_workspace(tmp_path, monkeypatch)
    git(root, "add", "tasks")
    git(root, "commit", "-q", "-m", "task only")
    git(root, "add", "generated_judges")
    git(root, "commit", "-q", "-m", "add the judge")
    return root


def test_a_judge_new_in_rev_b_shows_every_node_and_function_as_added(
    repo_adding_the_judge: Path,
) -> None:
    result = invoke(["diff", TASK, "HEAD~1", "HEAD", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == (
        f"new judge: generated_judges/{TASK}.py does not exist at HEAD~1, so everything is added"
    )
    assert re.fullmatch(r"rubric nodes: [1-9]\d* added, 0 removed, 0 changed", lines[3])
    assert "+ root: " in result.stdout
    assert re.search(r"functions: [1-9]\d* added, 0 removed, 0 changed", result.stdout)
    assert "+ def evaluate" in lines


def test_a_new_judge_in_json_is_marked_new_with_nothing_removed(
    repo_adding_the_judge: Path,
) -> None:
    result = invoke(["diff", TASK, "HEAD~1", "HEAD", "--json", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["new"], data["deleted"]) == (True, False)
    assert data["rubric"]["added"] and not data["rubric"]["removed"]
    assert "evaluate" in data["code"]["added"] and not data["code"]["removed"]


def test_a_judge_missing_at_both_revisions_is_a_usage_error(repo_adding_the_judge: Path) -> None:
    result = invoke(["diff", TASK, "HEAD~1", "HEAD~1", *OFFLINE])
    assert result.exit_code == 2
    assert "no judge" in result.stderr


def test_rubric_and_code_diff_is_usable_by_the_regeneration_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace(tmp_path))
    loaded = load_spec(TASK, "tasks")
    old = (tmp_path / "generated_judges" / f"{TASK}.py").read_text()
    settings = LLMSettings(provider=EXTRACT, cache_mode="off", ledger_path=None)

    async def compute() -> object:
        backend, client = extraction_backend(settings)
        try:
            return await rubric_and_code_diff(
                TASK,
                old,
                V2.read_text(),
                answer=loaded.answers[0],
                extraction=backend,
                sandbox=False,
            )
        finally:
            await client.aclose()

    result = asyncio.run(compute())
    assert [n.id for n in result.rubric.added] == ["no_duplicates"]
    assert result.code.changed == ["_find", "evaluate"]
    assert result.to_text().startswith("+ no_duplicates")
    assert not result.empty


# A committed judge with the provenance header `generate` writes (see staleness.py), then
# edits a reviewer must see: the header, module-level statements, their order.
HEADER = Provenance(
    task_id=TASK,
    spec_sha256="sha256:" + "a" * 64,
    prompts_sha256="sha256:" + "b" * 64,
    model="claude-sonnet-5-5",
    toolkit_version="0.1.0",
)


@pytest.fixture
def headed_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose one commit holds the judge under a provenance header."""
    root = git_workspace(tmp_path, monkeypatch)
    judge = root / "generated_judges" / f"{TASK}.py"
    judge.write_text(HEADER.header() + judge.read_text())
    git(root, "add", "tasks", "generated_judges")
    git(root, "commit", "-q", "-m", "judge with its header")
    return root


def edit_judge(repo: Path, old: str, new: str) -> None:
    judge = repo / "generated_judges" / f"{TASK}.py"
    text = judge.read_text()
    assert old in text
    judge.write_text(text.replace(old, new, 1))


def test_a_header_claiming_another_spec_is_a_change_in_the_text(headed_repo: Path) -> None:
    edit_judge(headed_repo, "spec_sha256=sha256:" + "a" * 64, "spec_sha256=sha256:" + "c" * 64)
    result = invoke(["diff", TASK, "HEAD", "WORKTREE", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "provenance header: 0 added, 0 removed, 1 changed" in lines
    assert f"~ header spec_sha256: sha256:{'a' * 64} -> sha256:{'c' * 64}" in lines
    assert "functions: 0 added, 0 removed, 0 changed" in lines


def test_a_header_change_is_in_the_json_with_the_field_and_both_values(headed_repo: Path) -> None:
    edit_judge(headed_repo, "model=claude-sonnet-5-5", "model=gpt-5")
    edit_judge(headed_repo, "\n# judgegen-provenance: toolkit_version=0.1.0", "")
    result = invoke(["diff", TASK, "HEAD", "WORKTREE", "--json", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    header = json.loads(result.stdout)["code"]["header"]
    assert header == [
        {"field": "model", "old": "claude-sonnet-5-5", "new": "gpt-5"},
        {"field": "toolkit_version", "old": "0.1.0", "new": None},
    ]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("GROUND_TRUTH", '"date": "May 29, 1953"', '"date": "May 29, 1952"'),
        ("TASK_DESCRIPTION", "the three highest mountains", "the two highest mountains"),
    ],
)
def test_a_changed_module_constant_is_named_with_its_old_and_new_value(
    headed_repo: Path, name: str, old: str, new: str
) -> None:
    edit_judge(headed_repo, old, new)
    text = invoke(["diff", TASK, "HEAD", "WORKTREE", *OFFLINE])
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "module level: 0 added, 0 removed, 1 changed" in lines
    listed = [line for line in lines if line.startswith(f"~ {name}: ")]
    shown = listed[0].replace("'", '"') if len(listed) == 1 else ""
    assert old[-8:] in shown.partition(" -> ")[0] and new[-8:] in shown.partition(" -> ")[2]
    data = json.loads(invoke(["diff", TASK, "HEAD", "WORKTREE", "--json", *OFFLINE]).stdout)
    (change,) = data["code"]["module_level"]
    assert (change["name"], change["kind"]) == (name, "changed")
    assert old in change["old"].replace("'", '"') and new in change["new"].replace("'", '"')


def test_an_added_import_is_named(headed_repo: Path) -> None:
    edit_judge(
        headed_repo, "from toolkit import Evaluator\n", "from toolkit import Evaluator\nimport os\n"
    )
    result = invoke(["diff", TASK, "HEAD", "WORKTREE", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "module level: 1 added, 0 removed, 0 changed" in lines
    assert "+ import os" in lines


def test_a_reordering_that_changes_what_the_module_binds_is_not_reported_as_no_change(
    headed_repo: Path,
) -> None:
    """The same statements in another order: `_limit()`'s default is 2 instead of 1."""
    judge = headed_repo / "generated_judges" / f"{TASK}.py"
    before = "\n\nLIMIT = 1\n\n\ndef _limit(n: int = LIMIT) -> int:\n    return n\n\n\nLIMIT = 2\n"
    after = "\n\nLIMIT = 1\nLIMIT = 2\n\n\ndef _limit(n: int = LIMIT) -> int:\n    return n\n"
    judge.write_text(judge.read_text() + before)
    git(headed_repo, "commit", "-q", "-am", "a helper")
    judge.write_text(judge.read_text().replace(before, after))
    result = invoke(["diff", TASK, "HEAD", "WORKTREE", "--json", *OFFLINE])
    assert result.exit_code == 0, result.stderr
    code = json.loads(result.stdout)["code"]
    assert code["order_changed"] is True
    text = invoke(["diff", TASK, "HEAD", "WORKTREE", *OFFLINE]).stdout
    assert "~ top-level order" in text
