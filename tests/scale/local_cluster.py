"""A real Ray cluster on this machine for the scale-out tests: a head and worker nodes.

Each node is a `ray start --block` process in its own session, so a test can kill exactly one
node (its raylet and agents; its workers share the raylet's fate) and teardown stops exactly
these processes, never another Ray on the machine (unlike `ray stop`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
STARTED = "Ray runtime started"
# Lost nodes are noticed within a few seconds, not the default ~30 s.
FAST_FAILURE_DETECTION = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "4",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc), children first found first."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found.extend(children)
        todo.extend(children)
    return found


def node_env() -> dict[str, str]:
    env = {**os.environ, **FAST_FAILURE_DETECTION, "RAY_USAGE_STATS_ENABLED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


@dataclass
class LocalCluster:
    """The nodes started so far; `address` is the head's GCS address."""

    temp_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="jgray", dir="/tmp"))
    port: int = field(default_factory=free_port)
    nodes: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, args: list[str]) -> subprocess.Popen[str]:
        command = [RAY, "start", "--block", "--disable-usage-stats", *args]
        command += ["--object-store-memory=80000000", "--node-ip-address=127.0.0.1"]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=node_env(),
            cwd=self.temp_dir,
            start_new_session=True,
        )
        self.nodes.append(process)
        seen: list[str] = []
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("ray start ended early:\n" + "".join(seen[-30:]))
            seen.append(line)
            if STARTED in line:
                return process
        raise RuntimeError("ray start did not finish:\n" + "".join(seen[-30:]))

    def start_head(self, cpus: int = 1) -> None:
        self._start(
            [
                "--head",
                f"--port={self.port}",
                f"--num-cpus={cpus}",
                "--include-dashboard=false",
                f"--temp-dir={self.temp_dir}",
            ]
        )

    def add_worker(self, cpus: int = 1) -> subprocess.Popen[str]:
        """Start one more node joining the head; returns its `ray start` process."""
        return self._start([f"--address={self.address}", f"--num-cpus={cpus}"])

    def kill(self, node: subprocess.Popen[str]) -> None:
        """Kill a node at once, as a crashed machine would go: SIGKILL to every process it
        started (its raylet and agents, and the workers and actors the raylet started, which
        run in sessions of their own)."""
        for pid in [node.pid, *descendants(node.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)
        node.wait(timeout=30)

    def stop(self) -> None:
        """Kill every node this cluster started (a test cluster keeps nothing worth a graceful
        stop; worker processes exit with their raylet), then remove its temp dir."""
        for node in reversed(self.nodes):
            if node.poll() is None:
                self.kill(node)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, signal.SIGKILL)  # anything the node left in its group
            if node.stdout is not None:
                node.stdout.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
