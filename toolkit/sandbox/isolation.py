"""How sandbox workers are wrapped: their environment and the namespaces the OS grants.

A worker is started as `unshare -rn --pid --fork --kill-child --mount-proc python -m
toolkit.sandbox.worker` (no network, its own PID namespace and /proc, a mount namespace it makes
read-only but for a size-capped scratch tmpfs) where the OS allows it, with a scrubbed
environment, a private temporary cwd/HOME and its own session.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import toolkit

_KEPT_VARS = ("PATH", "LANG", "LANGUAGE", "TZ")
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|^ANTHROPIC_|^OPENAI_|PROXY",
    re.IGNORECASE,
)


def scrubbed_environment(base: Mapping[str, str], home: str) -> dict[str, str]:
    """The worker's environment: a few harmless variables from `base`, never a secret.

    Only PATH, LANG, LANGUAGE, TZ and LC_* are copied, and any of them whose name looks like a
    secret or a proxy is dropped anyway; HOME and TMPDIR point at the worker's temp dir.
    """
    env = {
        name: value
        for name, value in base.items()
        if (name in _KEPT_VARS or name.startswith("LC_")) and not _SECRET_NAME.search(name)
    }
    package_root = str(Path(toolkit.__file__).resolve().parent.parent)
    extra = [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(
        HOME=home,
        TMPDIR=home,
        PYTHONPATH=os.pathsep.join([package_root, *extra]),
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONSAFEPATH="1",
    )
    return env


@dataclass(frozen=True)
class Isolation:
    """How workers are wrapped: the command prefix and what it achieves on this machine."""

    prefix: tuple[str, ...] = ()
    network_isolated: bool = False
    pid_isolated: bool = False
    readonly_fs: bool = False
    warning: str | None = None


async def _command_works(prefix: list[str]) -> tuple[bool, str]:
    try:
        process = await asyncio.create_subprocess_exec(
            *prefix,
            sys.executable,
            "-c",
            "pass",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    except (OSError, TimeoutError) as exc:
        return False, str(exc)
    return process.returncode == 0, err.decode(errors="replace").strip()[-300:]


async def probe_isolation(network: bool = False) -> Isolation:
    """Find the strongest `unshare` wrapper that works here; warn (stderr) when none does."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return Isolation(
            warning="`unshare` (util-linux) not found: judge workers run without network and "
            "PID isolation; only the in-process guards block sockets and processes"
        )
    net = [] if network else ["-n"]
    full = [unshare, "-r", *net, "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
    ok, why = await _command_works(full)
    if ok:
        return Isolation(
            tuple(full), network_isolated=not network, pid_isolated=True, readonly_fs=True
        )
    basic = [unshare, "-r", *net, "--mount", "--"]
    ok_basic, why_basic = await _command_works(basic)
    if ok_basic:
        return Isolation(
            tuple(basic),
            network_isolated=not network,
            readonly_fs=True,
            warning=f"no PID namespace for judge workers ({why or 'unshare failed'})",
        )
    return Isolation(
        warning=f"`unshare -r{'n' if not network else ''}` failed ({why_basic or why}): judge "
        "workers run without namespace isolation; only the in-process guards block sockets "
        "and processes"
    )


def fs_args(scratch_mb: int) -> list[str]:
    """Worker flags for its mount namespace: read-only, a scratch tmpfs, and credential files
    in the host's home and current directory (e.g. a repo's `.env`) hidden."""
    hidden = dict.fromkeys([str(Path.home()), str(Path.cwd())])
    return [
        "--readonly-fs",
        "--scratch-mb",
        str(scratch_mb),
        *(arg for directory in hidden for arg in ("--hide-under", directory)),
    ]
