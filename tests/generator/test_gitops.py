"""Publishing to a branch with plumbing leaves the user's working tree, index and HEAD alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.gitops import (
    GitError,
    RefChanged,
    commit_files,
    file_at,
    format_message,
    last_change,
    prepare_commit,
    update_branch,
    versions,
)
from tests.generator.conftest import git

FILES = {"generated_judges/demo.py": b"TASK_ID = 'demo'\n", "reviews/demo.md": b"# demo\n"}


def snapshot(repo: Path) -> tuple[str, str, str, bytes]:
    """HEAD's symbolic name and commit, `git status`, and the raw index bytes."""
    head = git(repo, "symbolic-ref", "-q", "HEAD") if _attached(repo) else "detached"
    return (
        head,
        git(repo, "rev-parse", "HEAD"),
        git(repo, "status", "--porcelain=v1", "-uall"),
        (repo / ".git" / "index").read_bytes(),
    )


def _attached(repo: Path) -> bool:
    import subprocess

    return subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo).returncode == 0


def test_commit_creates_branch_from_head_with_files(git_repo: Path) -> None:
    head = git(git_repo, "rev-parse", "HEAD")
    result = commit_files(git_repo, "judge/demo", FILES, "Add demo judge\n")
    assert result.created_branch and result.parent == head
    assert git(git_repo, "show", "judge/demo:reviews/demo.md") == "# demo"
    assert git(git_repo, "show", "judge/demo:README.md") == "hello"


def test_dirty_working_tree_and_index_are_untouched(git_repo: Path) -> None:
    (git_repo / "README.md").write_text("edited but not staged\n")
    (git_repo / "staged.txt").write_text("staged\n")
    git(git_repo, "add", "staged.txt")
    (git_repo / "untracked.txt").write_text("untracked\n")
    before = snapshot(git_repo)
    commit_files(git_repo, "judge/demo", FILES, "Add demo judge\n")
    assert snapshot(git_repo) == before
    assert (git_repo / "README.md").read_text() == "edited but not staged\n"
    assert not (git_repo / "generated_judges").exists()
    assert git(git_repo, "show", "judge/demo:README.md") == "hello"


def test_detached_head_is_untouched_and_used_as_parent(git_repo: Path) -> None:
    (git_repo / "second.txt").write_text("2\n")
    git(git_repo, "add", "second.txt")
    git(git_repo, "commit", "-q", "-m", "second")
    first = git(git_repo, "rev-parse", "HEAD~1")
    git(git_repo, "checkout", "-q", "--detach", first)
    before = snapshot(git_repo)
    result = commit_files(git_repo, "judge/demo", FILES, "Add demo judge\n")
    assert snapshot(git_repo) == before
    assert result.parent == first


def test_existing_branch_tip_is_the_parent(git_repo: Path) -> None:
    first = commit_files(git_repo, "judge/demo", FILES, "one\n")
    second = commit_files(git_repo, "judge/demo", {"reviews/demo.md": b"# demo v2\n"}, "two\n")
    assert second.parent == first.commit and not second.created_branch
    assert git(git_repo, "rev-parse", "judge/demo") == second.commit


def test_concurrent_ref_change_is_refused_cleanly(git_repo: Path) -> None:
    commit_files(git_repo, "judge/demo", FILES, "one\n")
    prepared = prepare_commit(git_repo, "judge/demo", {"reviews/demo.md": b"# mine\n"}, "mine\n")
    other = commit_files(git_repo, "judge/demo", {"reviews/demo.md": b"# theirs\n"}, "theirs\n")
    before = snapshot(git_repo)
    with pytest.raises(RefChanged, match="changed while publishing"):
        update_branch(prepared)
    assert git(git_repo, "rev-parse", "judge/demo") == other.commit
    assert snapshot(git_repo) == before


def test_concurrent_branch_creation_is_refused(git_repo: Path) -> None:
    prepared = prepare_commit(git_repo, "judge/demo", FILES, "mine\n")
    commit_files(git_repo, "judge/demo", {"x.txt": b"x\n"}, "theirs\n")
    with pytest.raises(RefChanged):
        update_branch(prepared)


def test_unchanged_files_make_no_new_commit(git_repo: Path) -> None:
    first = commit_files(git_repo, "judge/demo", FILES, "one\n")
    again = commit_files(git_repo, "judge/demo", FILES, "one again\n")
    assert again.commit == first.commit and not again.changed


def test_trailers_are_parsed_by_git(git_repo: Path) -> None:
    message = format_message("Add demo judge", "Body.", [("Judgegen-Model", "m-1")])
    assert message.endswith("\n")
    result = commit_files(git_repo, "judge/demo", FILES, message)
    trailers = git(
        git_repo, "log", "-1", "--format=%(trailers:key=Judgegen-Model,valueonly)", result.commit
    )
    assert trailers == "m-1"


def test_repository_without_commits_gets_a_root_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.generator.conftest import GIT_ENV

    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    result = commit_files(repo, "judge/demo", FILES, "first\n")
    assert result.parent is None and result.created_branch
    assert git(repo, "ls-tree", "-r", "--name-only", "judge/demo").splitlines() == sorted(FILES)
    assert git(repo, "status", "--porcelain") == ""


def test_removals_leave_the_branch_tree_and_the_checkout_alone(git_repo: Path) -> None:
    commit_files(git_repo, "judge/demo", FILES, "one\n")
    before = snapshot(git_repo)
    result = commit_files(
        git_repo,
        "judge/demo",
        {"reviews/demo.old.md": b"# old\n"},
        "two\n",
        removals=["reviews/demo.md"],
    )
    files = git(git_repo, "ls-tree", "-r", "--name-only", result.commit).splitlines()
    assert "reviews/demo.md" not in files and "reviews/demo.old.md" in files
    assert snapshot(git_repo) == before


def test_commit_message_is_stored_byte_for_byte_so_trailers_parse(git_repo: Path) -> None:
    message = format_message("Subject", "Body.", [("Judgegen-Task", "demo")])
    result = commit_files(git_repo, "judge/demo", FILES, message)
    assert git(git_repo, "cat-file", "commit", result.commit).endswith("\n\n" + message.strip())
    trailers = git(git_repo, "log", "-1", "--format=%(trailers:key=Judgegen-Task)", result.commit)
    assert trailers == "Judgegen-Task: demo"


def test_file_at_reads_a_committed_version_and_names_a_bad_revision(git_repo: Path) -> None:
    (git_repo / "README.md").write_text("changed on disk\n")
    assert file_at(git_repo / "README.md", "HEAD") == "hello\n"
    with pytest.raises(GitError, match="unknown revision 'nope'"):
        file_at(git_repo / "README.md", "nope")
    assert last_change(git_repo / "README.md") == git(git_repo, "rev-parse", "HEAD")


def test_versions_lists_the_index_then_commits_newest_first(git_repo: Path) -> None:
    (git_repo / "README.md").write_text("second\n")
    git(git_repo, "commit", "-q", "-am", "second")
    (git_repo / "README.md").write_text("staged\n")
    git(git_repo, "add", "README.md")
    texts = [text for _, text in versions(git_repo, ["README.md"], max_commits=10)]
    assert texts == ["staged\n", "second\n", "hello\n"]


def test_outside_a_repository_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git work tree"):
        list(versions(tmp_path, ["task.yaml"], max_commits=1))
