"""The confinement applied inside the sandbox, and the measurement of what actually took hold.

Judges are untrusted code. A worker runs under bubblewrap (`toolkit.sandbox.isolation`); each
evaluation runs in a fresh job process forked from it, which sets rlimits, installs the job
seccomp filter (`toolkit.sandbox.seccomp`) and an audit-hook guard. The audit hook gives clear
messages, each sent to the parent the moment it refuses something, so the parent's record of
it is out of the judge's reach; namespaces and seccomp are the boundary. Guards are reported
only when measured.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import resource
import socket
import threading
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the early launch imports this module: no pydantic before the fork server
    from toolkit.sandbox.protocol import SandboxLimits

MAX_VIOLATIONS = 20  # sandbox violations kept per evaluation

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
    """The in-process audit-hook guard of one job process: remembers every violation and hands
    it to `report` (which tells the parent) before the judge's code goes on."""

    def __init__(self, allow_network: bool = False) -> None:
        self.allow_network = allow_network
        self.violations: list[str] = []
        self.active = False
        self.report: Callable[[str], None] | None = None
        self._reporting = threading.local()

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
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(message)
        self._report(message)
        raise SandboxViolation(message)

    def _report(self, message: str) -> None:
        """Hand `message` to `report`; a violation raised while this thread reports one is
        refused but not reported again (no recursion), and a report that fails changes
        nothing for the judge (the violation is still raised and remembered)."""
        if self.report is None or getattr(self._reporting, "busy", False):
            return
        self._reporting.busy = True
        try:
            with contextlib.suppress(Exception):
                self.report(message)
        finally:
            self._reporting.busy = False


# -- guards, as measured ---------------------------------------------------------------------

WORKER_GUARDS = (
    "pid_namespace",
    "network_namespace",
    "filesystem_allowlist",
    "no_capabilities",
    "seccomp_sandbox",
)
JOB_GUARDS = ("rlimits", "seccomp_job", "audit_hook")
REQUIRED_KIND = "sandbox_required"
"""The error kind of an evaluation that lacked a guard under `--require-sandbox` (it stops
the run)."""


def missing_guards(required: Iterable[str], measured: Iterable[str]) -> list[str]:
    """The `required` guards not among those `measured` in effect, sorted."""
    return sorted(set(required) - set(measured))


def not_run_message(missing: Iterable[str]) -> str:
    """Why a judge was refused before its code loaded: the one wording of the parent (a fork
    server lacking a guard) and of the job (a job lacking one)."""
    names = ", ".join(missing)
    return f"--require-sandbox: the judge was not run; sandbox guards not in effect: {names}"


def _status_fields() -> dict[str, str]:
    with open("/proc/self/status") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def _umount_refused() -> bool:
    """True when the kernel refuses umount2 here (EPERM), i.e. a filter or no capability."""
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.umount2(b"/proc", 2)  # MNT_DETACH
    return result != 0 and ctypes.get_errno() == errno.EPERM


def measure_worker_guards(hidden: list[str]) -> list[str]:
    """The worker-level guards in effect in this process, checked one by one.

    `hidden` are host paths (the runner's home, working directory, a temp file) that must not
    be visible here when the file-system allow-list holds.
    """
    applied = []
    try:
        with open("/proc/1/comm") as comm:
            if comm.read().strip() == "bwrap":
                applied.append("pid_namespace")
    except OSError:
        pass
    if {name for _, name in socket.if_nameindex()} <= {"lo"}:
        applied.append("network_namespace")
    if hidden and not any(os.path.lexists(path) for path in hidden):
        applied.append("filesystem_allowlist")
    fields = _status_fields()
    if int(fields.get("CapEff", "1"), 16) == 0:
        applied.append("no_capabilities")
    if fields.get("Seccomp", "0").strip() == "2" and _umount_refused():
        applied.append("seccomp_sandbox")
    return applied


# -- the job's guards ------------------------------------------------------------------------


def vm_size_bytes() -> int:
    """This process's address-space size: the baseline the memory limit is added to."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


def make_undumpable() -> None:
    """Keep every other process of the sandbox out of this one: a process that is not
    dumpable cannot be ptraced or have its /proc/<pid>/mem opened without CAP_SYS_PTRACE."""
    pr_set_dumpable = 4
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def install_filter(program: bytes) -> bool:
    """Install a BPF seccomp program (built by `toolkit.sandbox.seccomp`) in this process."""
    count = len(program) // ctypes.sizeof(_SockFilter)
    if count == 0:
        return False
    filters = (_SockFilter * count).from_buffer_copy(program[: count * ctypes.sizeof(_SockFilter)])
    fprog = _SockFprog(count, filters)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0


def apply_job_limits(limits: SandboxLimits, baseline: int, program: bytes) -> list[str]:
    """Set this job process's rlimits and seccomp filter; returns the guards that took hold."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    file_bytes = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
    address_space = baseline + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    applied = []
    if resource.getrlimit(resource.RLIMIT_AS)[0] == address_space:
        applied.append("rlimits")
    before = int(_status_fields().get("Seccomp_filters", "0") or 0)
    if install_filter(program):
        after = int(_status_fields().get("Seccomp_filters", "0") or 0)
        if after > before:
            applied.append("seccomp_job")
    return applied
