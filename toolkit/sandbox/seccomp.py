"""The seccomp filters of the sandbox, built with libseccomp (`pyseccomp`) for the native arch.

Two filters, both returning EPERM for what they refuse (ENOSYS for clone3, so the C library
falls back to clone, whose flags a filter can inspect):
- the sandbox filter, installed by bubblewrap on the worker and everything it forks: no mounts,
  tracing, keyrings, BPF, perf, namespaces, module loading or other host-level syscalls;
- the job filter, installed by each job process on top: the sandbox list, plus no new
  processes or programs, no sockets (unless the network is allowed), no rlimit changes, and
  no signal to any process but itself (jobs share the fork server's PID namespace, so without
  this one judge could kill a sibling job or the server).
Filters are built in the parent (libseccomp is not needed inside the sandbox) and travel as
BPF bytes; a syscall the native arch lacks is skipped.
"""

from __future__ import annotations

import errno
import struct
import tempfile
from typing import Any

SANDBOX_DENIED = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "settimeofday",
    "clock_settime",
    "iopl",
    "ioperm",
)
JOB_DENIED = ("fork", "vfork", "execve", "execveat", "setrlimit")
_CLONE_THREAD = 0x00010000
# Syscalls that name a target process by its first argument: refused unless it is the job.
SIGNAL_TARGETED = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")
# fcntl/ioctl requests that make the kernel signal another process on I/O (F_SETOWN,
# F_SETOWN_EX; FIOSETOWN, SIOCSPGRP).
_FCNTL_OWNER = (8, 15)
_IOCTL_OWNER = (0x8901, 0x8902)
# Stands for the job's own pid in the exported filter until `bind_self` writes the real one:
# larger than any pid (pid_max <= 2**22) and than any syscall number.
SELF_PLACEHOLDER = 0x3FFFFFF3
_INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k


def _add(filter_: Any, syscall: str, action: int, *args: object) -> None:
    """Add one rule; a syscall unknown on this arch (e.g. `fork` on arm64) is skipped."""
    try:
        filter_.add_rule(action, syscall, *args)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise


def _export(filter_: Any) -> bytes:
    with tempfile.TemporaryFile() as handle:
        filter_.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _library() -> Any:
    """pyseccomp, imported on first use (it loads libseccomp; RuntimeError when missing)."""
    import pyseccomp  # type: ignore[import-untyped]

    return pyseccomp


def sandbox_filter() -> bytes:
    """BPF of the sandbox filter (for `bwrap --add-seccomp-fd`)."""
    pyseccomp = _library()

    filter_ = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for syscall in SANDBOX_DENIED:
        _add(filter_, syscall, pyseccomp.ERRNO(errno.EPERM))
    return _export(filter_)


def job_filter(allow_network: bool) -> bytes:
    """BPF of the job filter: the sandbox list plus processes, programs, sockets, rlimits."""
    pyseccomp = _library()

    eperm = pyseccomp.ERRNO(errno.EPERM)
    filter_ = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for syscall in (*SANDBOX_DENIED, *JOB_DENIED, *(() if allow_network else ("socket",))):
        _add(filter_, syscall, eperm)
    _add(filter_, "clone", eperm, pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _CLONE_THREAD, 0))
    _add(filter_, "clone3", pyseccomp.ERRNO(errno.ENOSYS))
    _add(filter_, "prlimit64", eperm, pyseccomp.Arg(2, pyseccomp.NE, 0))
    for syscall in SIGNAL_TARGETED:
        _add(filter_, syscall, eperm, pyseccomp.Arg(0, pyseccomp.NE, SELF_PLACEHOLDER))
    for request in _FCNTL_OWNER:
        _add(filter_, "fcntl", eperm, pyseccomp.Arg(1, pyseccomp.EQ, request))
    for request in _IOCTL_OWNER:
        _add(filter_, "ioctl", eperm, pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, request))
    return _export(filter_)


def bind_self(program: bytes, pid: int) -> bytes:
    """The job filter with the job's own pid in place of `SELF_PLACEHOLDER` (done in the job
    after fork, so one filter built in the parent serves every job). An empty program (no
    libseccomp) stays empty; a non-empty one without the placeholder is refused."""
    if not program:
        return program
    out = bytearray(program)
    bound = 0
    for offset in range(0, len(out) - _INSTRUCTION.size + 1, _INSTRUCTION.size):
        code, jt, jf, k = _INSTRUCTION.unpack_from(out, offset)
        if k == SELF_PLACEHOLDER:
            _INSTRUCTION.pack_into(out, offset, code, jt, jf, pid)
            bound += 1
    if bound == 0:
        raise ValueError("job filter has no self placeholder: it was not built by job_filter()")
    return bytes(out)
