"""How sandbox workers are wrapped: bubblewrap with an allow-listed, read-only file system.

A worker sees the Python runtime and its installed packages (read-only, at their host paths),
the project's `toolkit/` and `prompts/` packages, a private size-capped scratch directory (also
its /tmp and HOME), its own /proc and /dev, and nothing else of the host: no home, no working
directory, no host /tmp. It runs with every namespace unshared (no network unless allowed), no
capabilities, a cleared environment, its own session, dies with the runner, and under the
sandbox seccomp filter. Judge bytes arrive over the worker's socket, never from a path.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import toolkit
from toolkit.sandbox.confinement import JOB_GUARDS, WORKER_GUARDS
from toolkit.util.code_files import Stamp, stamp

SCRATCH = "/scratch"
_KEPT_VARS = ("PATH", "LANG", "LANGUAGE", "TZ")
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|^ANTHROPIC_|^OPENAI_|PROXY",
    re.IGNORECASE,
)
_SYSTEM_LIBRARIES = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache")
PROJECT_PACKAGES = ("toolkit", "prompts")
"""judgegen's packages mounted for judges (`policy_sources.JUDGE_PACKAGES`, kept equal: what a
judge may import of judgegen's). Here so the early launch imports nothing more."""
_NO_BWRAP = (
    "bubblewrap (`bwrap`) not found: judge workers run without namespaces or a file-system "
    "allow-list (install the `bubblewrap` package)"
)


def package_root() -> Path:
    """The directory holding the `toolkit` package (what PYTHONPATH names in the worker)."""
    return Path(toolkit.__file__).resolve().parent.parent


def site_directories() -> list[str]:
    """The import-path entries the fork server, which starts without `site`, appends itself:
    this interpreter's site-packages directories and what their `.pth` files added inside them
    (mounted with them), in this process's path order; `.pth` code never runs there."""
    paths = sysconfig.get_paths()
    candidates = [
        *site.getsitepackages(),
        *(paths[k] for k in ("purelib", "platlib") if k in paths),
    ]
    sites = list(dict.fromkeys(os.path.abspath(c) for c in candidates if os.path.isdir(c)))
    inside = [
        entry
        for entry in dict.fromkeys(os.path.abspath(p) for p in sys.path if p)
        if any(entry == s or entry.startswith(s.rstrip("/") + "/") for s in sites)
        and os.path.isdir(entry)
    ]
    return inside + [s for s in sites if s not in inside]


def scrubbed_environment(base: Mapping[str, str], home: str) -> dict[str, str]:
    """The worker's environment: a few harmless variables from `base`, never a secret.

    Only PATH, LANG, LANGUAGE, TZ and LC_* are copied, and any of them whose name looks like a
    secret or a proxy is dropped anyway; HOME and TMPDIR point at the worker's scratch dir.
    pydantic plugins (host code found through installed packages' entry points) stay off.
    """
    env = {
        name: value
        for name, value in base.items()
        if (name in _KEPT_VARS or name.startswith("LC_")) and not _SECRET_NAME.search(name)
    }
    env.update(
        HOME=home,
        TMPDIR=home,
        PYTHONPATH=str(package_root()),
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONSAFEPATH="1",
        PYTHONNOUSERSITE="1",
        PYDANTIC_DISABLE_PLUGINS="__all__",
    )
    return env


def runtime_paths() -> list[str]:
    """Host paths the worker needs, read-only: interpreter, stdlib, site-packages, system
    libraries and the project's packages; nested paths are covered by their ancestor."""
    paths = sysconfig.get_paths()
    candidates = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths),
        *site.getsitepackages(),
        os.path.dirname(sys.executable),
        os.path.dirname(os.path.realpath(sys.executable)),
        *_SYSTEM_LIBRARIES,
        *(str(package_root() / name) for name in PROJECT_PACKAGES),
    }
    existing = sorted(os.path.abspath(p) for p in candidates if p and os.path.lexists(p))
    kept: list[str] = []
    for path in existing:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _mount_args(paths: Sequence[str]) -> list[str]:
    """`--ro-bind` each path (a symlink becomes the same symlink plus a bind of its target)."""
    args: list[str] = []
    targets: list[str] = []
    for path in paths:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
            targets.append(os.path.realpath(path))
        else:
            targets.append(path)
    for target in dict.fromkeys(targets):
        if os.path.exists(target):
            args += ["--ro-bind", target, target]
    return args


@dataclass(frozen=True)
class Isolation:
    """How workers are wrapped on this machine, and the guards a worker should measure."""

    bwrap: str | None = None
    network: bool = False
    warning: str | None = None

    @property
    def expected_guards(self) -> frozenset[str]:
        """Every guard a fully confined evaluation reports."""
        worker = set(WORKER_GUARDS) - ({"network_namespace"} if self.network else set())
        return frozenset(worker | set(JOB_GUARDS))

    def command(
        self, env: Mapping[str, str], scratch_bytes: int, seccomp_fd: int | None
    ) -> list[str]:
        """The wrapper's command line, up to the worker's own argv (empty without bwrap)."""
        if self.bwrap is None:
            return []
        args = [self.bwrap, "--unshare-all", *(["--share-net"] if self.network else [])]
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
        for name, value in sorted(env.items()):
            args += ["--setenv", name, value]
        args += _mount_args(runtime_paths())
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--size", str(scratch_bytes), "--perms", "0700", "--tmpfs", SCRATCH]
        if not any(path == "/tmp" or path.startswith("/tmp/") for path in runtime_paths()):
            args += ["--symlink", SCRATCH, "/tmp"]
        args += ["--chdir", SCRATCH]
        if seccomp_fd is not None:
            args += ["--add-seccomp-fd", str(seccomp_fd)]
        return [*args, "--"]


def bubblewrap() -> tuple[str | None, Stamp | None]:
    """The bubblewrap a launch now would wrap workers with — found on PATH — and its stamp
    (an upgrade replaces the file); (None, None) when none is installed."""
    path = shutil.which("bwrap")
    return path, stamp(path) if path is not None else None


def assumed_isolation(network: bool = False) -> Isolation:
    """Bubblewrap when it is installed, without trying it first (a launch that fails under
    it falls back to `probe_isolation`, which says why)."""
    if shutil.which("bwrap") is None:
        return Isolation(network=network, warning=_NO_BWRAP)
    return Isolation(bwrap=shutil.which("bwrap"), network=network)


def hidden_probes(probe_file: str) -> list[str]:
    """Host paths a confined worker must not see: `probe_file` (in the host's temp dir) and
    an entry of the runner's home and working directory that is not on the allow-list."""
    allowed = runtime_paths()
    probes = [probe_file]
    for directory in dict.fromkeys([str(Path.home()), os.getcwd()]):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if not any(a == path or a.startswith(path + "/") for a in allowed):
                probes.append(path)
                break
    return probes


async def _command_works(command: list[str]) -> tuple[bool, str]:
    import asyncio  # here, not at the top: the early launch of the sandbox does not need it

    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            sys.executable,
            "-c",
            "pass",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=scrubbed_environment(os.environ, SCRATCH),
        )
        _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    except (OSError, TimeoutError) as exc:
        return False, str(exc)
    return process.returncode == 0, err.decode(errors="replace").strip()[-300:]


async def probe_isolation(network: bool = False) -> Isolation:
    """Check bubblewrap works here; otherwise an `Isolation` without it and a warning."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Isolation(network=network, warning=_NO_BWRAP)
    isolation = Isolation(bwrap=bwrap, network=network)
    ok, why = await _command_works(isolation.command({}, 1 << 20, None))
    if ok:
        return isolation
    return Isolation(
        network=network,
        warning=f"bubblewrap cannot create the sandbox here ({why or 'bwrap failed'}): judge "
        "workers run without namespaces or a file-system allow-list",
    )
