"""Every git operation judgegen does, on GitPython: reading files at revisions, and committing
generated files to a branch without touching the user's checkout.

Invariant: the user's working tree, index and HEAD are exactly as before, whatever happens.
Files are staged in a temporary index (GIT_INDEX_FILE), the tree and commit are built with
`write-tree`/`commit-tree`, and the branch moves with `update-ref NEW OLD`, a compare-and-swap
that refuses when someone else moved the branch in between.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from git import Blob, GitCommandError, InvalidGitRepositoryError, NoSuchPathError, Repo
from git.db import IStream
from git.exc import BadName, BadObject
from pydantic import BaseModel

from toolkit.errors import JudgegenError

ZERO_SHA = "0" * 40


class GitError(JudgegenError):
    """A git command failed (not a repository, no identity, corrupt objects…)."""


class NotAtRevision(GitError):
    """The revision exists but has no such file (it was added or deleted since)."""


class RefChanged(GitError):
    """The branch moved between reading its tip and updating it; nothing was written."""


class PreparedCommit(BaseModel):
    """A commit object written to the object store but not yet on any branch."""

    repo: str
    branch: str
    commit: str
    parent: str | None
    expected_tip: str | None
    changed: bool


class CommitResult(BaseModel):
    """Where the published commit went."""

    version: int = 1
    branch: str
    commit: str
    parent: str | None
    created_branch: bool
    changed: bool


@contextmanager
def open_repo(path: str | Path) -> Iterator[Repo]:
    """The repository whose work tree holds `path` (closed afterwards); GitError if none."""
    try:
        repo = Repo(Path(path), search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise GitError(f"{path} is not inside a git work tree") from None
    with repo:
        try:
            yield repo
        except GitCommandError as exc:
            detail = (exc.stderr or "").strip().removeprefix("stderr: ").strip("'")
            command = exc.command if isinstance(exc.command, list) else [str(exc.command)]
            raise GitError(f"git {' '.join(map(str, command[1:3]))} failed: {detail}") from None


def _root(repo: Repo) -> Path:
    if repo.working_tree_dir is None:
        raise GitError(f"{repo.git_dir} is a bare repository; judgegen needs a work tree")
    return Path(repo.working_tree_dir)


def _relative(repo: Repo, path: Path) -> str:
    try:
        return path.resolve().relative_to(_root(repo).resolve()).as_posix()
    except ValueError:
        raise GitError(f"{path} is outside the repository {_root(repo)}") from None


def repo_root(path: str | Path) -> Path:
    """The top of the git work tree containing `path`."""
    with open_repo(path) as repo:
        return _root(repo)


def format_message(subject: str, body: str, trailers: list[tuple[str, str]]) -> str:
    """A commit message whose trailers git can parse (blank line before them, final newline)."""
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        parts.append("\n".join(f"{key}: {value}" for key, value in trailers))
    return "\n\n".join(parts) + "\n"


# -- reading ------------------------------------------------------------------------------


def file_at(path: Path, rev: str) -> str:
    """The text of `path` (a file in a work tree) as committed at revision `rev`."""
    with open_repo(path.resolve().parent) as repo:
        relative = _relative(repo, path)
        try:
            blob = repo.commit(rev).tree / relative
        except (BadName, BadObject, ValueError):
            raise GitError(f"git show {rev}:{relative}: unknown revision '{rev}'") from None
        except KeyError:
            raise NotAtRevision(f"git show {rev}:{relative}: no such file at '{rev}'") from None
        return blob.data_stream.read().decode("utf-8")


def last_change(path: Path) -> str | None:
    """The last commit on HEAD that touched `path`, or None when there is none."""
    with open_repo(path.resolve().parent) as repo:
        if not repo.head.is_valid():
            return None
        found = next(repo.iter_commits(paths=_relative(repo, path), max_count=1), None)
        return found.hexsha if found else None


def versions(folder: Path, names: Sequence[str], max_commits: int) -> Iterator[tuple[str, str]]:
    """(where, text) of the files `names` in `folder`: the index's, then every commit's on any
    ref that touched them, newest first; `where` is `the index:<path>` or `<commit>:<path>`.

    Raises GitError when `folder` is not in a git work tree.
    """
    with open_repo(folder) as repo:
        relative = _relative(repo, folder)
        paths = [name if relative == "." else f"{relative}/{name}" for name in names]
        for path in paths:
            entry = repo.index.entries.get((path, 0))
            if entry is not None:
                yield f"the index:{path}", _text(Blob(repo, entry.binsha))
        listing = repo.git.log("--all", f"--max-count={max_commits}", "--format=%H", "--", *paths)
        for commit in listing.split():
            tree = repo.commit(commit).tree
            for path in paths:
                try:
                    yield f"{commit[:12]}:{path}", _text(tree / path)
                except KeyError:
                    continue


def _text(blob: Blob) -> str:
    return blob.data_stream.read().decode("utf-8", errors="replace")


# -- committing without a checkout --------------------------------------------------------


def _commit_of(repo: Repo, name: str) -> str | None:
    try:
        return repo.git.rev_parse("--verify", "--quiet", f"{name}^{{commit}}") or None
    except GitCommandError:
        return None


def prepare_commit(
    repo: str | Path,
    branch: str,
    files: Mapping[str, bytes],
    message: str,
    *,
    removals: Sequence[str] = (),
) -> PreparedCommit:
    """Write `files` (repo-relative path -> bytes) and drop `removals` on top of the branch
    tip (else HEAD), as a commit that no branch points to yet."""
    with open_repo(repo) as git_repo, tempfile.TemporaryDirectory(prefix="judgegen-") as tmp:
        root = _root(git_repo)
        tip = _commit_of(git_repo, f"refs/heads/{branch}")
        parent = tip or _commit_of(git_repo, "HEAD")
        cache_info = []
        for path, content in sorted(files.items()):
            blob = git_repo.odb.store(IStream("blob", len(content), io.BytesIO(content)))
            cache_info += ["--cacheinfo", f"100644,{blob.binsha.hex()},{path}"]
        with git_repo.git.custom_environment(GIT_INDEX_FILE=str(Path(tmp) / "index")):
            if parent:
                git_repo.git.read_tree(parent)
            if cache_info:
                git_repo.git.update_index("--add", *cache_info)
            if removals:
                git_repo.git.update_index("--force-remove", "--", *removals)
            tree = git_repo.git.write_tree()
        changed = parent is None or git_repo.commit(parent).tree.hexsha != tree
        if not changed and tip is not None:
            commit = tip
        else:
            message_file = Path(tmp) / "message"
            message_file.write_text(message, encoding="utf-8")
            parent_args = ["-p", parent] if parent else []
            commit = git_repo.git.commit_tree(tree, *parent_args, "-F", str(message_file))
    return PreparedCommit(
        repo=str(root),
        branch=branch,
        commit=commit,
        parent=parent,
        expected_tip=tip,
        changed=changed,
    )


def update_branch(prepared: PreparedCommit) -> CommitResult:
    """Move the branch to the prepared commit if it is still where it was; else `RefChanged`."""
    ref = f"refs/heads/{prepared.branch}"
    old = prepared.expected_tip or ZERO_SHA
    if prepared.commit != prepared.expected_tip:
        with open_repo(prepared.repo) as repo:
            try:
                repo.git.update_ref("-m", "judgegen publish", ref, prepared.commit, old)
            except GitCommandError as exc:
                raise RefChanged(
                    f"branch '{prepared.branch}' changed while publishing (expected "
                    f"{old[:12]}); nothing was written. Re-run the command. "
                    f"({(exc.stderr or '').strip()})"
                ) from None
    return CommitResult(
        branch=prepared.branch,
        commit=prepared.commit,
        parent=prepared.parent,
        created_branch=prepared.expected_tip is None,
        changed=prepared.changed,
    )


def commit_files(
    repo: str | Path,
    branch: str,
    files: Mapping[str, bytes],
    message: str,
    *,
    removals: Sequence[str] = (),
) -> CommitResult:
    """Commit `files` (and drop `removals`) on `branch`, created from HEAD when missing,
    without touching the checkout."""
    return update_branch(prepare_commit(repo, branch, files, message, removals=removals))
