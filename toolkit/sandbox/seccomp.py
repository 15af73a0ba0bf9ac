"""The seccomp filters of the sandbox, built with libseccomp (`pyseccomp`) for the native arch.

Two filters, both returning EPERM for what they refuse (ENOSYS for clone3, so the C library
falls back to clone, whose flags a filter can inspect):
- the sandbox filter, installed by bubblewrap on the worker and everything it forks: no mounts,
  tracing, keyrings, BPF, perf, namespaces, module loading or other host-level syscalls;
- the job filter, installed by each job process on top: the sandbox list, plus no new
  processes or programs, no sockets (unless the network is allowed) and no rlimit changes.
Filters are built in the parent (libseccomp is not needed inside the sandbox) and travel as
BPF bytes; a syscall the native arch lacks is skipped.
"""

from __future__ import annotations

import errno
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
    return _export(filter_)
