"""The files an offline provider's answers come from: a replay's recordings, a scripted policy's
module. Results record a hash of them, so re-recording or editing them in place makes the
results judged from them stale.

Stdlib only and nothing imported from the user: a rerun with nothing to redo computes this.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

WAL_SUFFIX = "-wal"
"""A SQLite recordings file's write-ahead log: part of what it holds until checkpointed."""


def answer_sources(spec: str) -> list[Path]:
    """The files or folders the provider `spec` answers from: a `replay:PATH`'s recordings, the
    module file a `scripted:pkg.mod:func` names (as import would find it); none for a model."""
    kind, _, rest = spec.partition(":")
    if kind == "replay" and rest:
        return [Path(rest).resolve()]
    if kind == "scripted" and rest:
        module = policy_file(rest.partition(":")[0])
        return [module] if module is not None else []
    return []


def policy_file(module_name: str) -> Path | None:
    """The source file import would load for `module_name` (from the working directory too, as
    `load_policy` imports it), without running it; None when there is none to hash. Its parent
    packages are imported, as `importlib.util.find_spec` does."""
    if not module_name:
        return None
    importable_from_cwd()
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.has_location or not spec.origin:
        return None
    return Path(spec.origin).resolve()


def importable_from_cwd() -> None:
    """Let modules of the working directory be imported, as `--backend` factories are."""
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))


def answer_digest(spec: str) -> str | None:
    """16 hex digits of the bytes the provider `spec` answers from (`answer_sources`): a
    recordings folder's `*.json` records (what replay reads), a recordings or module file and
    its `-wal` log; None for a provider that answers from no local file."""
    sources = answer_sources(spec)
    if not sources:
        return None
    digest = hashlib.sha256()
    for source in sources:
        digest.update(f"{source}\0".encode())
        if source.is_dir():
            files = sorted(source.glob("*.json"))
        else:
            files = [source, source.with_name(source.name + WAL_SUFFIX)]
        for path in files:
            digest.update(f"{path.name}\0".encode())
            try:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
            except OSError:
                digest.update(b"absent")
    return digest.hexdigest()[:16]
