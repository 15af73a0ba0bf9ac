"""Starting the sandbox's fork server: a quick, synchronous launch that returns at once.

`launch_sandbox` builds the seccomp filters, starts `python -m toolkit.sandbox.worker` under
bubblewrap (when installed) and returns without waiting: the fork server imports the toolkit
while the caller goes on with its own start-up. `judgegen run` launches it first thing, so
the sandbox is warm by the time the first judge needs it; `WorkerPool` adopts the launch and
waits for the server's `Ready`. This module imports little, so launching early is cheap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from toolkit.sandbox import host_dir, seccomp
from toolkit.sandbox.host_dir import HostDir
from toolkit.sandbox.isolation import (
    SCRATCH,
    Isolation,
    assumed_isolation,
    bubblewrap,
    hidden_probes,
    scrubbed_environment,
    site_directories,
)
from toolkit.sandbox.start import SEPARATOR, SITE_FLAG
from toolkit.util.code_files import Stamp

PROBE_NAME = "host-only"
SCRATCH_FILES = 4  # the scratch tmpfs holds this many files of the largest allowed size
DEFAULT_MAX_FILE_MB = 64


def _memfd(name: str, data: bytes) -> int | None:
    """An anonymous in-memory file holding `data`, rewound (what bwrap and the server read)."""
    if not data:
        return None
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _filters(network: bool) -> tuple[bytes, bytes, str | None]:
    """(sandbox filter, job filter, warning): empty filters and a warning without libseccomp."""
    try:
        return seccomp.sandbox_filter(), seccomp.job_filter(network), None
    except (ImportError, OSError, RuntimeError) as exc:
        return b"", b"", f"no seccomp filter: libseccomp is unavailable ({exc})"


@dataclass
class Launch:
    """A fork server that was started and may not be ready yet; `close` ends it."""

    process: subprocess.Popen[bytes]
    control: socket.socket
    isolation: Isolation
    host_dir: HostDir
    """The host folder holding the server's working folder and the probe; removed by
    `kill`, or when the launch is collected (or the process exits)."""
    warnings: list[str] = field(default_factory=list)
    max_file_mb: int = DEFAULT_MAX_FILE_MB  # sizes the scratch space its jobs share
    wrapper: tuple[str | None, Stamp | None] = (None, None)
    """The bubblewrap installed as it launched (`isolation.bubblewrap`), whether or not it
    wraps this server (one that fails here is probed and dropped)."""

    def __post_init__(self) -> None:
        weakref.finalize(self, host_dir.discard, self.host_dir.root, self.host_dir.lock)

    def wrapped_otherwise_now(self) -> str | None:
        """Why a launch now would be wrapped otherwise than this one — bubblewrap installed,
        removed or upgraded since (None: as this one). A server started ahead (early in
        start-up, or by a warm server's zygote) is used only when it is what a launch now
        would start."""
        was, was_stamp = self.wrapper
        now, now_stamp = bubblewrap()
        if now == was:
            return f"bubblewrap changed: {now}" if now_stamp != was_stamp else None
        if was is None:
            return f"bubblewrap installed since: {now}"
        if now is None:
            return f"bubblewrap removed since: {was}"
        return f"bubblewrap now found at {now}, not {was}"

    def measured(self) -> None:
        """The server measured its guards: the host probe may go."""
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(self.host_dir.root, PROBE_NAME))

    @property
    def network(self) -> bool:
        """Whether the server's namespace has the host network."""
        return self.isolation.network

    def kill(self) -> None:
        """Kill the server (its jobs die with it) and reap it; idempotent."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        self.control.close()
        self.host_dir.discard()

    def output(self) -> str:
        """The last of what a server that was killed printed (why it did not start)."""
        stream = self.process.stdout
        if stream is None or stream.closed:
            return ""
        with stream:
            return stream.read().decode(errors="replace")[-1000:]


def _probe(folder: HostDir) -> str:
    """A host file the server must not see (measures the allow-list), beside its home."""
    path = os.path.join(folder.root, PROBE_NAME)
    Path(path).write_text("a host file no judge may see\n")
    return path


def server_command() -> list[str]:
    """The fork server's command line up to its own arguments (`toolkit.sandbox.start`)."""
    sites = [arg for path in site_directories() for arg in (SITE_FLAG, path)]
    return [sys.executable, "-S", "-m", "toolkit.sandbox.start", *sites, SEPARATOR]


def import_ahead() -> None:
    """Import what `launch_sandbox` imports only when it runs — libseccomp's binding, and the
    build configuration `sysconfig` reads on first use — by building what a launch builds
    before it starts anything (a few ms). For a process that imports ahead what its children
    will run: a warm server, whose snapshot of its code then covers its zygotes' launches."""
    _filters(network=False)
    server_command()


def launch_sandbox(
    network: bool = False,
    max_file_mb: int = DEFAULT_MAX_FILE_MB,
    isolation: Isolation | None = None,
) -> Launch:
    """Start the fork server (wrapped per `isolation`, default: bubblewrap when installed)
    and return at once. Raises OSError when the process cannot be started at all."""
    wrapper = bubblewrap()
    isolation = isolation or assumed_isolation(network)
    sandbox_bpf, job_bpf, filter_warning = _filters(network)
    warnings = [w for w in (isolation.warning, filter_warning) if w]
    folder = host_dir.create()
    home = folder.home
    env = scrubbed_environment(os.environ, SCRATCH if isolation.bwrap else home)
    parent_end, child_end = socket.socketpair()
    job_fd = _memfd("judgegen-job-filter", job_bpf)
    sandbox_fd = _memfd("judgegen-sandbox-filter", sandbox_bpf)
    filter_fds = [fd for fd in (job_fd, sandbox_fd) if fd is not None]
    scratch_bytes = SCRATCH_FILES * max_file_mb * 1024 * 1024
    command = isolation.command(env, scratch_bytes, sandbox_fd)
    args = ["--fd", str(child_end.fileno())]
    args += ["--job-filter-fd", str(job_fd)] if job_fd is not None else []
    probes = hidden_probes(_probe(folder))
    args += [arg for path in probes for arg in ("--hidden", path)]
    try:
        process = subprocess.Popen(
            [*command, *server_command(), *args],
            pass_fds=(child_end.fileno(), *filter_fds),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=home,
            start_new_session=True,
        )
    except BaseException:
        parent_end.close()
        folder.discard()
        raise
    finally:
        child_end.close()
        for fd in filter_fds:
            os.close(fd)
    return Launch(process, parent_end, isolation, folder, warnings, max_file_mb, wrapper)
