"""What a served command must share with the server that forks it, and where they meet.

Standard library only: the client computes this before anything else is imported. Two
processes with the same key import the same code the same way and see the same settings:
the interpreter and its flags and options, the import path (with the working folder for an
empty entry), the environment (except the variables that only say where the shell is, and
with the working folder when the linker is given paths relative to it), the user, the resource
limits, the nice value and CPU affinity, the cgroup and the namespaces — and they speak the
same protocol. A server answers only clients with its own key.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import sys
from pathlib import Path
from typing import Any

KEY_VERSION = 3
WIRE_VERSION = 3
"""The protocol the client and server speak (`wire.py`): part of the key, so a client only
ever finds a server that speaks it (one an older judgegen left would not greet it)."""
SWITCH_ENV = "JUDGEGEN_SERVER"
"""`off` (or 0/no/false): never serve and never leave a server behind."""
IDLE_ENV = "JUDGEGEN_SERVER_IDLE"
"""Seconds a server waits for a command before it exits (default `DEFAULT_IDLE_S`)."""
RUNTIME_ENV = "JUDGEGEN_SERVER_DIR"
"""Where servers keep their sockets (default: $XDG_RUNTIME_DIR/judgegen, else /tmp)."""
DEFAULT_IDLE_S = 600.0
POSITIONAL_ENV = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})
"""Variables that only say where the shell is: served with the client's values, not keyed."""
SERVED_COMMANDS = frozenset({"run"})
_LIMITS = tuple(name for name in dir(resource) if name.startswith("RLIMIT_"))


def enabled(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether serving (and leaving servers behind) is on."""
    return environ.get(SWITCH_ENV, "").strip().lower() not in {"off", "0", "no", "false"}


def idle_seconds(environ: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """How long a server idles before it exits (a bad value falls back to the default)."""
    try:
        value = float(environ.get(IDLE_ENV, DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S
    return value if value > 0 else DEFAULT_IDLE_S


_FLAG_OPTIONS = (
    ("optimize", "-O"),
    ("dont_write_bytecode", "-B"),
    ("no_user_site", "-s"),
    ("no_site", "-S"),
    ("ignore_environment", "-E"),
    ("isolated", "-I"),
    ("safe_path", "-P"),
    ("bytes_warning", "-b"),
    ("verbose", "-v"),
)
"""`sys.flags` set from the command line, and the option that sets each (once per level)."""


def _unbuffered() -> bool:
    """Whether this interpreter's output is unbuffered (`-u`, or PYTHONUNBUFFERED)."""
    return bool(getattr(sys.__stdout__, "write_through", False))


def interpreter_options() -> list[str] | None:
    """The command-line options that start an interpreter with this one's flags, warning
    options, `-X` options and unbuffered streams: a server started with them forks commands
    that run as this process would. None for a mode no server reproduces (interactive)."""
    if sys.flags.interactive or sys.flags.inspect:
        return None
    options = [
        option for name, option in _FLAG_OPTIONS for _ in range(int(getattr(sys.flags, name)))
    ]
    if _unbuffered():
        options.append("-u")
    options += [f"-W{option}" for option in sys.warnoptions]
    for name, value in sys._xoptions.items():
        options += ["-X", name if value is True else f"{name}={value}"]
    return options


def material() -> dict[str, Any]:
    """Everything the key is made of, for this process."""
    cwd = os.getcwd()
    return {
        "version": KEY_VERSION,
        "wire": WIRE_VERSION,
        "executable": sys.executable,
        "path": [entry or cwd for entry in sys.path],
        "flags": [*sys.flags, _unbuffered()],
        "warnoptions": list(sys.warnoptions),
        "xoptions": sorted(f"{k}={v}" for k, v in sys._xoptions.items()),
        "env": sorted((k, v) for k, v in os.environ.items() if k not in POSITIONAL_ENV),
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "limits": [resource.getrlimit(getattr(resource, name)) for name in _LIMITS],
        "scheduling": [os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0))],
        "cgroup": _read("/proc/self/cgroup"),
        "namespaces": [_inode(f"/proc/self/ns/{ns}") for ns in ("mnt", "pid", "net", "user")],
        "linker_cwd": cwd if _linker_paths_relative(os.environ) else None,
    }


def _linker_paths_relative(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether the dynamic linker is given a path relative to the working folder — an empty
    or relative LD_LIBRARY_PATH entry, an LD_PRELOAD path with a relative folder — so what a
    fresh process loads depends on where it starts (`code_files.library_path_folders`)."""
    folders = environ.get("LD_LIBRARY_PATH", "").replace(";", ":")
    preloads = environ.get("LD_PRELOAD", "").replace(":", " ").split()
    return (
        bool(folders) and any(not entry.startswith("/") for entry in folders.split(":"))
    ) or any("/" in entry and not entry.startswith("/") for entry in preloads)


def key(of: dict[str, Any]) -> str:
    """The key of `of` (a `material()`): a short hash."""
    encoded = json.dumps(of, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:24]


def runtime_dir() -> Path:
    """This user's folder of server sockets, created private. Raises OSError when it exists
    but is not this user's alone (someone else could then answer as a server)."""
    base = os.environ.get(RUNTIME_ENV) or (
        os.path.join(os.environ["XDG_RUNTIME_DIR"], "judgegen")
        if os.environ.get("XDG_RUNTIME_DIR")
        else f"/tmp/judgegen-server-{os.getuid()}"
    )
    os.makedirs(base, mode=0o700, exist_ok=True)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{base} is not a folder only this user can use; remove it")
    return Path(base)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return 0
