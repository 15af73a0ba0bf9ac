"""The confinement applied inside the sandbox: audit-hook guard, rlimits, seccomp, file system.

Judges are untrusted code. Each evaluation runs in a fresh job process forked from a worker
(`toolkit.sandbox.worker`) with no API keys in its environment, no network, rlimits, a seccomp
filter and an audit-hook guard. The audit hook gives clear messages; seccomp and namespaces
are the boundary.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import resource
import socket
import sys
from types import MappingProxyType
from typing import Any

from toolkit.sandbox.protocol import SandboxLimits

# -- the audit-hook guard (clear errors for the usual ways out) ------------------------------

_PROC_PID = re.compile(r"^/proc/(\d+)(?:/|$)")


def _foreign_proc_entry(path: Any) -> bool:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return False
    match = _PROC_PID.match(os.path.realpath(path))
    return match is not None and int(match.group(1)) != os.getpid()


_BLOCKED_EVENTS = MappingProxyType(
    {
        "subprocess.Popen": "starting a process",
        "os.system": "starting a process",
        "os.exec": "starting a process",
        "os.posix_spawn": "starting a process",
        "os.spawn": "starting a process",
        "os.fork": "starting a process",
        "os.forkpty": "starting a process",
        "socket.connect": "network access",
        "socket.bind": "network access",
        "socket.sendto": "network access",
        "socket.getaddrinfo": "network access",
        "socket.gethostbyname": "network access",
        "socket.gethostbyaddr": "network access",
        "resource.setrlimit": "changing resource limits",
        "resource.prlimit": "changing resource limits",
        "os.kill": "signalling other processes",
        "os.killpg": "signalling other processes",
        "signal.pthread_kill": "signalling other processes",
        "ctypes.dlopen": "loading native code with ctypes",
    }
)


class SandboxViolation(PermissionError):
    """A judge tried something the sandbox forbids (process, network, limits, native code)."""


class Guard:
    """The in-process audit-hook guard of one job process; remembers every violation."""

    def __init__(self, allow_network: bool = False) -> None:
        self.allow_network = allow_network
        self.violations: list[str] = []
        self.active = False

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        """`sys.addaudithook` callback: raise `SandboxViolation` on a forbidden event."""
        if not self.active:
            return
        what = _BLOCKED_EVENTS.get(event)
        if what is None and event == "socket.__new__" and args and args[1] != socket.AF_UNIX:
            what = "network access"
        if what is None and event == "open" and args and _foreign_proc_entry(args[0]):
            what = "reading another process's /proc entry"
        if what is None or (what == "network access" and self.allow_network):
            return
        message = f"sandbox: {what} is not allowed in a judge (audit event '{event}')"
        if len(self.violations) < 20:
            self.violations.append(message)
        raise SandboxViolation(message)


# -- rlimits ---------------------------------------------------------------------------------


def vm_size_bytes() -> int:
    """This process's address-space size: the baseline the memory limit is added to."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_job_limits(limits: SandboxLimits, baseline: int) -> list[str]:
    """Set this job process's rlimits and seccomp filter; returns the guards applied."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    file_bytes = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
    address_space = baseline + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    applied = ["rlimits"]
    if install_seccomp(allow_network=limits.network):
        applied.append("seccomp")
    return applied


# -- seccomp: the kernel-level guard (x86_64 only; the audit hook covers the rest) ----------

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_CLONE_THREAD = 0x00010000
_RET_ALLOW = 0x7FFF0000
_LD_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_NR_SOCKET, _NR_CLONE, _NR_FORK, _NR_VFORK, _NR_EXECVE = 41, 56, 57, 58, 59
_NR_PTRACE, _NR_SETRLIMIT, _NR_MOUNT, _NR_UNSHARE, _NR_SETNS = 101, 160, 165, 272, 308
_NR_PRLIMIT64, _NR_PROCESS_VM_READV, _NR_PROCESS_VM_WRITEV = 302, 310, 311
_NR_EXECVEAT, _NR_CLONE3 = 322, 435


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


def _errno_ret(code: int) -> int:
    return 0x00050000 | code


def _seccomp_program(allow_network: bool) -> list[tuple[int, int, int, int]]:
    """BPF denying process creation, exec, tracing, limit changes and (optionally) sockets."""
    eperm = _errno_ret(errno.EPERM)
    prog = [
        (_LD_ABS, 0, 0, 4),
        (_JEQ, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET, 0, 0, eperm),
        (_LD_ABS, 0, 0, 0),
        (_JGE, 0, 1, _X32_SYSCALL_BIT),
        (_RET, 0, 0, eperm),
    ]
    denied = [_NR_FORK, _NR_VFORK, _NR_EXECVE, _NR_EXECVEAT, _NR_PTRACE, _NR_SETRLIMIT]
    denied += [_NR_MOUNT, _NR_UNSHARE, _NR_SETNS, _NR_PROCESS_VM_READV, _NR_PROCESS_VM_WRITEV]
    if not allow_network:
        denied.append(_NR_SOCKET)
    for number in denied:
        prog += [(_JEQ, 0, 1, number), (_RET, 0, 0, eperm)]
    prog += [(_JEQ, 0, 1, _NR_CLONE3), (_RET, 0, 0, _errno_ret(errno.ENOSYS))]
    prog += [
        (_JEQ, 0, 4, _NR_CLONE),
        (_LD_ABS, 0, 0, 16),
        (_JSET, 0, 1, _CLONE_THREAD),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, eperm),
    ]
    prog += [
        (_JEQ, 0, 6, _NR_PRLIMIT64),
        (_LD_ABS, 0, 0, 32),
        (_JEQ, 0, 3, 0),
        (_LD_ABS, 0, 0, 36),
        (_JEQ, 0, 1, 0),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, eperm),
    ]
    prog.append((_RET, 0, 0, _RET_ALLOW))
    return prog


def install_seccomp(allow_network: bool) -> bool:
    """Install the seccomp filter in this process; False where unsupported (not x86_64 Linux)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    program = _seccomp_program(allow_network)
    filters = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0


# -- read-only file system (inside the worker's own mount namespace) -------------------------

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 8, 32, 4096
_MOUNT_FLAGS = MappingProxyType(
    {
        "nosuid": _MS_NOSUID,
        "nodev": _MS_NODEV,
        "noexec": _MS_NOEXEC,
        "noatime": 1024,
        "nodiratime": 2048,
        "relatime": 1 << 21,
        "strictatime": 1 << 24,
    }
)


def _unescape_mount_point(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


CREDENTIAL_PATHS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".docker",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".config/anthropic",
    ".config/openai",
    ".anthropic",
    ".openai",
    ".claude",
    ".codex",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".env",
)


def hide_credentials(home: str) -> list[str]:
    """Mount empty stand-ins over well-known credential files and dirs under `home`.

    Keys belong in the environment (which workers never inherit), but a host may also keep
    them in files a same-uid judge could read. Only call this in a private mount namespace.
    Returns the paths hidden.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    hidden = []
    for relative in CREDENTIAL_PATHS:
        path = os.path.join(home, relative)
        target = os.fsencode(path)
        if os.path.isdir(path) and not os.path.islink(path):
            flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
            done = libc.mount(b"tmpfs", target, b"tmpfs", flags, b"size=4k,mode=0500") == 0
        elif os.path.isfile(path) and not os.path.islink(path):
            done = libc.mount(b"/dev/null", target, None, _MS_BIND, None) == 0
        else:
            continue
        if done:
            hidden.append(path)
    return hidden


def make_filesystem_readonly(writable: str, scratch_mb: int | None = None) -> list[str]:
    """Remount every mount read-only except `writable` (then cwd); returns the ones that failed.

    `writable` becomes a private tmpfs of `scratch_mb` MiB (a bind of itself when None), so a
    judge can neither fill the host's disk nor leave files where the host would see them.
    Only call this in a private mount namespace (the worker's `unshare --mount`): there it
    leaves the host untouched and keeps judges from writing the repo, results or other judges.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    target = os.fsencode(writable)
    if scratch_mb is None:
        mounted = libc.mount(target, target, None, _MS_BIND, None)
    else:
        options = f"size={scratch_mb}m,mode=0700".encode()
        mounted = libc.mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, options)
    if mounted != 0:
        return [writable]
    failed = []
    with open("/proc/self/mountinfo") as mountinfo:
        mounts = [line.split() for line in mountinfo]
    for fields in mounts:
        point = _unescape_mount_point(fields[4])
        if point == writable:
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
        for option in fields[5].split(","):
            flags |= _MOUNT_FLAGS.get(option, 0)
        if libc.mount(None, os.fsencode(point), None, flags, None) != 0:
            failed.append(point)
    os.chdir(writable)
    return failed
