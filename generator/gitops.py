"""Committing generated files to a branch with git plumbing, never touching the user's checkout.

Invariant: the user's working tree, index and HEAD are exactly as before, whatever happens.
Files are staged in a temporary index (GIT_INDEX_FILE), the tree and commit are built with
`write-tree`/`commit-tree`, and the branch moves with `update-ref NEW OLD`, a compare-and-swap
that refuses when someone else moved the branch in between.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from toolkit.errors import JudgegenError

ZERO_SHA = "0" * 40


class GitError(JudgegenError):
    """A git command failed (not a repository, no identity, corrupt objects…)."""


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


def _git(
    repo: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"}
    full_env.update(env or {})
    proc = subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, env=full_env, check=False
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {detail}")
    return proc.stdout.decode().strip()


def _rev(repo: Path, name: str) -> str | None:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    except GitError:
        return None


def repo_root(path: str | Path) -> Path:
    """The top of the git work tree containing `path`."""
    return Path(_git(Path(path), "rev-parse", "--show-toplevel"))


def format_message(subject: str, body: str, trailers: list[tuple[str, str]]) -> str:
    """A commit message whose trailers git can parse (blank line before them, final newline)."""
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        parts.append("\n".join(f"{key}: {value}" for key, value in trailers))
    return "\n\n".join(parts) + "\n"


def prepare_commit(
    repo: str | Path, branch: str, files: Mapping[str, bytes], message: str
) -> PreparedCommit:
    """Write `files` (repo-relative path -> bytes) on top of the branch tip (else HEAD)."""
    root = repo_root(repo)
    tip = _rev(root, f"refs/heads/{branch}")
    parent = tip or _rev(root, "HEAD")
    with tempfile.TemporaryDirectory(prefix="judgegen-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent:
            _git(root, "read-tree", parent, env=env)
        for path, content in sorted(files.items()):
            blob = _git(root, "hash-object", "-w", "--stdin", stdin=content)
            _git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = _git(root, "write-tree", env=env)
    changed = parent is None or _git(root, "rev-parse", f"{parent}^{{tree}}") != tree
    if not changed and tip is not None:
        commit = tip
    else:
        parent_args = ["-p", parent] if parent else []
        commit = _git(root, "commit-tree", tree, *parent_args, "-F", "-", stdin=message.encode())
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
    root = Path(prepared.repo)
    ref = f"refs/heads/{prepared.branch}"
    old = prepared.expected_tip or ZERO_SHA
    if prepared.commit != prepared.expected_tip:
        try:
            _git(root, "update-ref", "-m", "judgegen publish", ref, prepared.commit, old)
        except GitError as exc:
            raise RefChanged(
                f"branch '{prepared.branch}' changed while publishing (expected "
                f"{old[:12]}); nothing was written. Re-run the command. ({exc})"
            ) from None
    return CommitResult(
        branch=prepared.branch,
        commit=prepared.commit,
        parent=prepared.parent,
        created_branch=prepared.expected_tip is None,
        changed=prepared.changed,
    )


def commit_files(
    repo: str | Path, branch: str, files: Mapping[str, bytes], message: str
) -> CommitResult:
    """Commit `files` on `branch` (created from HEAD when missing) without touching the checkout."""
    return update_branch(prepare_commit(repo, branch, files, message))
