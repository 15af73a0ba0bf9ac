"""The files an offline provider's answers come from: a replay's recordings, a scripted policy's
module and the user's modules it imports (`policy_sources`). Results record a hash of them, and
the fresh stamp watches the same list, so re-recording or editing them in place makes the
results judged from them stale. A user's factory (`--backend`, `--maps`) is known the same
way: by its spec and a hash of the files it runs (`factory_identity`).

Stdlib only and nothing imported from the user: a rerun with nothing to redo computes this.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

WAL_SUFFIX = "-wal"
"""A SQLite recordings file's write-ahead log: part of what it holds until checkpointed."""


def answer_sources(spec: str, *, importing: bool = True) -> list[Path]:
    """The files or folders the provider `spec` answers from, sorted: a `replay:PATH`'s
    recordings, the source files a `scripted:pkg.mod:func` runs (`policy_sources`, which
    imports the policy's parent packages unless not `importing`); none for a model."""
    kind, _, rest = spec.partition(":")
    if kind == "replay" and rest:
        return [Path(rest).resolve()]
    if kind == "scripted" and rest:
        from toolkit.llm.policy_sources import policy_sources  # ast: only for a policy

        return policy_sources(rest.partition(":")[0], importing=importing)
    return []


def factory_identity(spec: str) -> str:
    """How results name the user's `package.module:factory` (a `--backend` or `--maps`
    factory): `spec code=<answer_digest>` of its module and the user's modules it imports
    (`policy_sources`), so editing them makes the results that depend on it stale, as an
    edited scripted policy does; `spec` alone when it has no module file."""
    from toolkit.llm.policy_sources import policy_sources

    digest = answer_digest(policy_sources(spec.partition(":")[0]))
    return spec if digest is None else f"{spec} code={digest}"


def answer_digest(sources: Sequence[Path]) -> str | None:
    """16 hex digits of the bytes in `sources` (`answer_sources`): a recordings folder's
    `*.json` records (what replay reads), a recordings or module file and its `-wal` log;
    None for a provider that answers from no local file."""
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
