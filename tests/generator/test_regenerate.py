"""`regenerate`: a one-line spec edit yields a judge whose diff is confined to what the edit needs."""

from __future__ import annotations

import asyncio
import difflib
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from generator.review.codediff import diff_functions
from generator.review.record import ReviewRecord
from generator.review.regenerate import RegenerationResult, recover_old_spec, regenerate
from generator.review.staleness import find_stale, staleness
from generator.stages.provenance import Provenance, strip_header, with_header
from generator.stages.run import GenerationFailed, PipelineOptions
from generator.stages.spec import load_spec
from prompts import prompts_sha256
from tests.generator.conftest import GIT_ENV, git
from tests.generator.scripted_generation import FixturePolicy
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner.approval import approval_problem, approve

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "regenerate" / "river_lengths"
MODEL = "claude-sonnet-4-5"
TASK = "river_lengths"


def make_repo(root: Path) -> Path:
    """A repository whose main branch holds the task, its reviewed judge and its approval."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    task_dir = repo / "tasks" / TASK
    task_dir.mkdir(parents=True)
    shutil.copytree(FIXTURE / "answers", task_dir / "answers")
    shutil.copy(FIXTURE / "task.yaml", task_dir / "task.yaml")
    provenance = Provenance(
        task_id=TASK,
        spec_sha256=load_spec(task_dir).sha256(),
        prompts_sha256=prompts_sha256(),
        model=MODEL,
        toolkit_version="0.1.0",
    )
    judge = repo / "generated_judges" / f"{TASK}.py"
    judge.parent.mkdir()
    judge.write_text(with_header((FIXTURE / "reviewed_judge.py.txt").read_text(), provenance))
    approve(
        TASK,
        reviewer="Ada",
        judges_dir=repo / "generated_judges",
        reviews_dir=repo / "reviews",
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "reviewed judge")
    return repo


def edit_spec(repo: Path, version: str = "task_v2.yaml") -> None:
    """The spec edit (by default the length tolerance goes from 5% to 2%), left uncommitted."""
    shutil.copy(FIXTURE / version, repo / "tasks" / TASK / "task.yaml")


def run_regenerate(
    repo: Path, replies: str | Path, *, force: bool = False, **kwargs
) -> tuple[RegenerationResult, list]:
    provider = ScriptedProvider(FixturePolicy(FIXTURE, FIXTURE / replies))
    client = LLMClient(provider, model=MODEL)
    options = PipelineOptions(model=MODEL, extract_model="o4-mini", repo=repo, **kwargs)
    loaded = load_spec(repo / "tasks" / TASK)
    result = asyncio.run(regenerate(loaded, client, None, options, force=force))
    return result, provider.calls


def unchanged_replies(folder: Path) -> Path:
    """Replies whose regeneration returns the reviewed judge as it is (a forced regeneration
    of an unchanged spec by a model that has nothing to change)."""
    folder.mkdir()
    shutil.copy(FIXTURE / "replies" / "extract.json", folder / "extract.json")
    shutil.copy(FIXTURE / "replies" / "reflect_1.md", folder / "reflect_1.md")
    reviewed = (FIXTURE / "reviewed_judge.py.txt").read_text()
    (folder / "regenerate.md").write_text(f"Nothing to change.\n\n```python\n{reviewed}```\n")
    return folder


def git_state(repo: Path) -> tuple[str, str, str]:
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "ls-files", "--stage"),
        git(
            repo,
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--",
            ":!generated_judges",
            ":!reviews",
        ),
    )


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One scripted regeneration after a tolerance edit, shared by the tests below."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in GIT_ENV.items():
            patch.setenv(key, value)
        repo = make_repo(tmp_path_factory.mktemp("regen"))
        old_judge = (repo / "generated_judges" / f"{TASK}.py").read_text()
        edit_spec(repo)
        (repo / "scratch.txt").write_text("user's untracked file\n")
        before = git_state(repo)
        result, calls = run_regenerate(repo, "replies")
        yield repo, old_judge, result, calls, before


def test_function_diff_lists_only_the_function_the_edit_needs(regenerated) -> None:
    repo, old_judge, _, _, _ = regenerated
    new_judge = (repo / "generated_judges" / f"{TASK}.py").read_text()
    diff = diff_functions(strip_header(old_judge), strip_header(new_judge))
    assert (diff.changed, diff.added, diff.removed) == (["evaluate"], [], [])
    assert not diff.module_level_changed


def test_rubric_diff_lists_only_the_length_nodes(regenerated) -> None:
    _, _, result, _, _ = regenerated
    assert result.diff is not None
    assert [c.id for c in result.diff.rubric.changed] == ["river_1_length", "river_2_length"]
    assert not result.diff.rubric.added and not result.diff.rubric.removed
    assert set(result.diff.rubric.changed[0].fields) == {"desc"}


def test_every_line_outside_the_changed_function_is_byte_identical(regenerated) -> None:
    repo, old_judge, _, _, _ = regenerated
    old = strip_header(old_judge).splitlines(keepends=True)
    new = strip_header((repo / "generated_judges" / f"{TASK}.py").read_text()).splitlines(
        keepends=True
    )
    start = next(i for i, line in enumerate(old) if line.startswith("async def evaluate"))
    assert new[:start] == old[:start]
    assert "# Compare names" not in "".join(new), "the reply's cosmetic edit was spliced away"
    changed = [(a, b) for a, b in zip(old[start:], new[start:], strict=True) if a != b]
    assert len(changed) == 2 and all("2%" in b and "2%" not in a for a, b in changed)


def test_provenance_header_carries_the_new_spec_sha256(regenerated) -> None:
    repo, old_judge, _, _, _ = regenerated
    header = Provenance.from_header((repo / "generated_judges" / f"{TASK}.py").read_text())
    assert header is not None
    assert header.spec_sha256 == load_spec(repo / "tasks" / TASK).sha256()
    assert header.spec_sha256 != Provenance.from_header(old_judge).spec_sha256
    assert not staleness(load_spec(repo / "tasks" / TASK), repo / "generated_judges").stale


def test_approval_is_moved_aside_and_no_longer_matches(regenerated) -> None:
    repo, _, result, _, _ = regenerated
    reviews = repo / "reviews"
    assert not (reviews / f"{TASK}.approval.json").exists()
    assert (reviews / f"{TASK}.approval.stale.json").is_file()
    judge = repo / "generated_judges" / f"{TASK}.py"
    assert approval_problem(judge, reviews, TASK) == "not reviewed (no approval record)"
    assert result.approval is not None and result.approval.reviewer == "Ada"
    assert "judgegen approve river_lengths" in result.message


def test_review_record_shows_the_rubric_and_function_diff(regenerated) -> None:
    repo, _, _, _, _ = regenerated
    record = ReviewRecord.model_validate_json((repo / "reviews" / f"{TASK}.json").read_text())
    details = [d for s in record.stages for d in s.details]
    assert "~ def evaluate" in details
    assert any(d.startswith("~ river_1_length: desc:") for d in details)
    markdown = (repo / "reviews" / f"{TASK}.md").read_text()
    assert "~ def evaluate" in markdown and "~ river_2_length" in markdown


def test_prompt_carries_the_spec_diff_the_reviewed_judge_and_a_cached_prefix(regenerated) -> None:
    _, old_judge, _, calls, _ = regenerated
    request = next(r for r in calls if r.metadata.purpose == "regenerate")
    text = request.messages[0].content[0].text
    assert "-    a difference of up to 5% from the cited figure." in text
    assert "+    a difference of up to 2% from the cited figure." in text
    assert strip_header(old_judge).strip() in text
    assert "Keep the ids of nodes" in text
    assert len(request.system) == 1 and request.system[0].cache


def test_commit_is_on_the_judge_branch_and_the_checkout_is_untouched(regenerated) -> None:
    repo, _, result, _, before = regenerated
    assert git_state(repo) == before
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    commit = result.publish.commit
    assert commit is not None and git(repo, "rev-parse", f"judge/{TASK}") == commit.commit
    committed = git(repo, "show", f"{commit.commit}:generated_judges/{TASK}.py")
    assert committed == (repo / "generated_judges" / f"{TASK}.py").read_text().rstrip("\n")
    message = git(repo, "log", "-1", "--format=%B", commit.commit)
    assert message.startswith(f"Regenerate judge for {TASK} after a spec change")
    assert "Judgegen-Spec-Sha256: " + load_spec(repo / "tasks" / TASK).sha256() in message


def test_commit_drops_the_old_approval_and_carries_the_stale_one(regenerated) -> None:
    repo, _, result, _, _ = regenerated
    files = git(repo, "ls-tree", "-r", "--name-only", result.publish.commit.commit).splitlines()
    assert f"reviews/{TASK}.approval.json" not in files
    assert f"reviews/{TASK}.approval.stale.json" in files
    assert f"reviews/{TASK}.approval.json" in git(repo, "ls-tree", "-r", "--name-only", "main")


def test_old_spec_text_is_recovered_from_git_by_its_hash(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "other")
    old = Provenance.from_header((repo / "generated_judges" / f"{TASK}.py").read_text())
    edit_spec(repo)
    change = recover_old_spec(load_spec(repo / "tasks" / TASK), old.spec_sha256)
    assert change.old_text == (FIXTURE / "task.yaml").read_text()
    assert change.recovered_from.endswith(f":tasks/{TASK}/task.yaml")


def test_unrecoverable_old_spec_gives_its_hash_and_says_so(tmp_path: Path) -> None:
    task_dir = tmp_path / TASK
    shutil.copytree(FIXTURE / "answers", task_dir / "answers")
    shutil.copy(FIXTURE / "task_v2.yaml", task_dir / "task.yaml")
    change = recover_old_spec(load_spec(task_dir), "sha256:" + "ab" * 32)
    assert change.old_text is None and change.unified_diff() == ""
    assert "not recoverable" in change.summary()


def test_up_to_date_task_is_skipped_without_force(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "fresh")
    result, calls = run_regenerate(repo, "replies")
    assert result.status == "skipped" and "--force" in result.message
    assert calls == []


def test_lint_failure_after_repairs_publishes_nothing(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "broken")
    edit_spec(repo)
    judge = repo / "generated_judges" / f"{TASK}.py"
    files = {p: p.read_bytes() for p in [judge, *(repo / "reviews").iterdir()]}
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(GenerationFailed, match="same error repeated"):
        run_regenerate(repo, "replies_lint_fails")
    assert {p: p.read_bytes() for p in [judge, *(repo / "reviews").iterdir()]} == files
    assert approval_problem(judge, repo / "reviews", TASK) is None
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "branch", "--list", f"judge/{TASK}") == ""


def test_stale_selects_exactly_the_tasks_whose_spec_changed(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "many")
    tasks = repo / "tasks"
    for other in ("fresh_task", "no_judge"):
        shutil.copytree(tasks / TASK, tasks / other)
        spec = (tasks / other / "task.yaml").read_text().replace(f"id: {TASK}", f"id: {other}")
        (tasks / other / "task.yaml").write_text(spec)
    fresh = Provenance.from_header((repo / "generated_judges" / f"{TASK}.py").read_text())
    header = fresh.model_copy(
        update={"task_id": "fresh_task", "spec_sha256": load_spec(tasks / "fresh_task").sha256()}
    )
    (repo / "generated_judges" / "fresh_task.py").write_text(
        with_header((FIXTURE / "reviewed_judge.py.txt").read_text(), header)
    )
    assert find_stale(tasks, repo / "generated_judges") == []
    edit_spec(repo)
    assert [s.task_id for s in find_stale(tasks, repo / "generated_judges")] == [TASK]


def test_judge_without_provenance_header_counts_as_stale(tmp_path: Path) -> None:
    task_dir = tmp_path / "tasks" / TASK
    shutil.copytree(FIXTURE / "answers", task_dir / "answers")
    shutil.copy(FIXTURE / "task.yaml", task_dir / "task.yaml")
    judges = tmp_path / "generated_judges"
    judges.mkdir()
    (judges / f"{TASK}.py").write_text((FIXTURE / "reviewed_judge.py.txt").read_text())
    state = staleness(load_spec(task_dir), judges)
    assert state.stale and state.judge_spec_sha256 is None


def test_a_new_requirement_adds_only_its_nodes(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "new_field")
    old = strip_header((repo / "generated_judges" / f"{TASK}.py").read_text())
    edit_spec(repo, "task_v3.yaml")
    result, _ = run_regenerate(repo, "replies_new_field", commit=False)
    new = strip_header((repo / "generated_judges" / f"{TASK}.py").read_text())
    assert diff_functions(old, new).changed == ["evaluate"]
    assert result.diff is not None and not result.diff.rubric.changed
    added = [n.id for n in result.diff.rubric.added]
    assert added == ["river_1_positive", "river_2_positive"] and not result.diff.rubric.removed
    changes = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changes == [
        "+        ev.add_custom_node(",
        "+            result=river.length_km is not None and river.length_km > 0,",
        '+            id=f"river_{position}_positive",',
        '+            desc=f"River {position}\'s length is a positive number of km",',
        "+            parent=node,",
        "+        )",
    ]


def test_stale_ignores_a_task_without_a_judge_even_with_an_unfinished_spec(
    git_repo: Path,
) -> None:
    repo = make_repo(git_repo.parent / "scaffold")
    (repo / "tasks" / "draft_task").mkdir()
    (repo / "tasks" / "draft_task" / "task.yaml").write_text("id: draft_task\n")
    edit_spec(repo)
    stale = find_stale(repo / "tasks", repo / "generated_judges")
    assert [s.task_id for s in stale] == [TASK]


def test_force_regenerating_identical_bytes_keeps_the_approval_valid(git_repo: Path) -> None:
    repo = make_repo(git_repo.parent / "forced")
    judge = repo / "generated_judges" / f"{TASK}.py"
    approved = judge.read_bytes()
    replies = unchanged_replies(git_repo.parent / "unchanged_replies")
    result, _ = run_regenerate(repo, replies, force=True)
    assert result.status == "published"
    assert judge.read_bytes() == approved
    reviews = repo / "reviews"
    assert approval_problem(judge, reviews, TASK) is None
    assert not (reviews / f"{TASK}.approval.stale.json").exists()
    commit = result.publish.commit
    files = git(repo, "ls-tree", "-r", "--name-only", commit.commit).splitlines()
    assert f"reviews/{TASK}.approval.stale.json" not in files


def test_force_regenerating_identical_bytes_says_the_approval_still_holds(
    git_repo: Path,
) -> None:
    repo = make_repo(git_repo.parent / "forced_message")
    replies = unchanged_replies(git_repo.parent / "unchanged_replies")
    result, _ = run_regenerate(repo, replies, force=True, commit=False)
    assert result.approval is not None and result.approval.still_valid
    assert result.approval.moved_to == ""
    message = result.approval.message(TASK)
    assert "approval by Ada" in message and "still holds" in message
    assert "identical" in message and "judgegen approve" not in message
    record = ReviewRecord.model_validate_json((repo / "reviews" / f"{TASK}.json").read_text())
    assert any("still holds" in stage.summary for stage in record.stages)
