"""Content hashes with an algorithm prefix (`sha256:<hex>`), so a future change cannot alias."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_bytes(data: bytes) -> str:
    """`sha256:<hex>` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """`sha256:<hex>` of `text` encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | Path) -> str:
    """`sha256:<hex>` of a file's bytes."""
    return sha256_bytes(Path(path).read_bytes())


def sha256_tree(root: Path, pattern: str = "*.py") -> str:
    """`sha256:<hex>` of the files matching `pattern` under `root`: each one's path relative to
    `root` and its bytes, in path order (other files, bytecode caches included, do not count)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob(pattern)):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + digest.hexdigest()
