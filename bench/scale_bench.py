"""Scale-out bench: throughput of judge runs and page capture on a Ray cluster of 1, 2 and 4
worker nodes on this machine, side by side with local runs.

A real cluster is started here (`ray start --head --num-cpus=0`, so the head only holds the
gateway, plus N worker nodes of one CPU each, joined with `ray start --address`) and grown
from 1 to 2 to 4 workers. Judge runs use the runner bench's published-style judges
(bench/runner_workload.py) and its scripted provider with a fixed per-call latency
(bench/latency_model.py): the provider is the only simulated part. Each worker node runs
--jobs-per-node evaluations at a time; the LLM concurrency is set high enough that the
provider is not what binds (docs/scale-out.md: as nodes are added, it becomes the limit).
Page capture serves small pages from a loopback server and captures them with each node's
system Chromium, --concurrency pages at a time per node.

Printed per worker count: the cluster run's wall and throughput (evaluations/s, pages/s);
ideal = the local run of one node's worth (--jobs J, --concurrency C) divided by N; their
ratio wall/ideal; and the local run with the cluster's total concurrency (J*N, C*N) on this
one machine, side by side. Results of the cluster and the local runs are checked to match.

    python bench/scale_bench.py                # ~4 minutes on 2 busy cores
    python bench/scale_bench.py --quick        # fewer evaluations and pages
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from latency_model import LATENCY_ENV  # noqa: E402
from runner_workload import Workload, build  # noqa: E402

from tests.scale.local_cluster import LocalCluster  # noqa: E402

LAUNCH = "from generator.cli import entry; entry()"  # what the `judgegen` script runs
PROVIDER = "scripted:latency_model:respond"
WORKERS = (1, 2, 4)


@dataclass
class Timed:
    wall: float
    code: int
    stdout: str
    stderr: str


def environment(latency: float) -> dict[str, str]:
    """This checkout and bench/ first, the provider's latency, no judgegen settings or keys."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGEGEN_") and not k.endswith("_API_KEY") and "PROXY" not in k.upper()
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH)])
    env[LATENCY_ENV] = repr(latency)
    env["JUDGEGEN_SERVER"] = "off"  # every run timed cold, and no warm server left behind
    return env


def judgegen(root: Path, env: dict[str, str], *args: str) -> Timed:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, *args], cwd=root, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.stderr.write(f"judgegen {args[0]} exited {done.returncode}:\n{done.stderr[-3000:]}\n")
    return Timed(wall, done.returncode, done.stdout, done.stderr)


def run_judges(root: Path, env: dict[str, str], results: str, jobs: int, *extra: str) -> Timed:
    args = ["run", "--answers", "answers", "--judges", "judges", "--pages", "pages"]
    args += ["--include-unreviewed", "--provider", PROVIDER, "--cache-mode", "off", "--json"]
    args += ["--results", results, "--jobs", str(jobs), "--concurrency", "256", *extra]
    return judgegen(root, env, *args)


def capture(root: Path, env: dict[str, str], store: str, concurrency: int, *extra: str) -> Timed:
    args = ["cache-pages", "--answers", "cited.md", "--store", store, "--json"]
    return judgegen(root, env, *args, "--concurrency", str(concurrency), *extra)


def scores(root: Path, results: str) -> tuple[dict[str, Any], int]:
    """Every result's status and score (what must match between runs), and the LLM calls."""
    out, calls = {}, 0
    for path in sorted((root / results).rglob("*.json")):
        if path.name != "summary.json":
            data = json.loads(path.read_text())
            out[str(path.relative_to(root / results))] = (data["status"], data["final_score"])
            calls += data["usage"]["llm_calls"]
    return out, calls


def page_server(pages: int) -> tuple[ThreadingHTTPServer, list[str]]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"<html><body><h1>Page {self.path}</h1><p>{'Text. ' * 200}</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    return httpd, [f"{base}/page/{n}" for n in range(pages)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="24 evaluations and 16 pages")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per LLM call")
    parser.add_argument("--jobs-per-node", type=int, default=4)
    parser.add_argument("--pages-per-node", type=int, default=2, help="capture concurrency")
    args = parser.parse_args()
    workload = Workload(
        "scale", tasks=6 if args.quick else 8, answers=4 if args.quick else 6, items=2
    )
    n_pages = 16 if args.quick else 32
    env = environment(args.latency)
    base = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    build(base, workload, page_chars=2000, screenshot_bytes=20_000)
    httpd, urls = page_server(n_pages)
    (base / "cited.md").write_text(" ".join(f"See {url}." for url in urls))
    j, c = args.jobs_per_node, args.pages_per_node
    print(f"machine: {os.cpu_count()} CPUs")
    print(
        f"judge runs: {workload.evaluations} evaluations, {args.latency:g} s per LLM call, "
        f"{j} evaluations in flight per node; capture: {n_pages} pages, {c} per node"
    )

    one_node = run_judges(base, env, "local-1", j)
    one_node_pages = capture(base, env, "store-local-1", c)
    reference, reference_calls = scores(base, "local-1")
    rows: list[tuple[int, Timed, Timed, Timed, Timed, bool, str]] = []
    cluster = LocalCluster()
    os.environ.update({k: env[k] for k in ("PYTHONPATH", LATENCY_ENV)})  # the nodes' env
    try:
        cluster.start_head(cpus=0)
        for n in WORKERS:
            while len(cluster.nodes) - 1 < n:
                cluster.add_worker(cpus=1)
            ray = ("--ray", cluster.address)
            on_cluster = run_judges(base, env, f"cluster-{n}", j * n, *ray)
            local = run_judges(base, env, f"local-{n}x", j * n)
            pages_cluster = capture(base, env, f"store-cluster-{n}", c, *ray)
            pages_local = capture(base, env, f"store-local-{n}x", c * n)
            cluster_scores, cluster_calls = scores(base, f"cluster-{n}")
            local_scores, local_calls = scores(base, f"local-{n}x")
            same = cluster_scores == reference == local_scores
            calls = f"{cluster_calls}/{local_calls}"
            rows.append((n, on_cluster, local, pages_cluster, pages_local, same, calls))
    finally:
        cluster.stop()
        httpd.shutdown()
        shutil.rmtree(base, ignore_errors=True)

    ev, pg = workload.evaluations, n_pages
    print(
        f"\nLLM calls of the local one-node run: {reference_calls} (every run must make the "
        "same calls: a claim's page checks complete wave by wave, toolkit/sources.py)"
    )
    print(
        f"\nlocal, one node's worth: judges --jobs {j}: {one_node.wall:.1f} s "
        f"({ev / one_node.wall:.2f} evaluations/s); capture --concurrency {c}: "
        f"{one_node_pages.wall:.1f} s ({pg / one_node_pages.wall:.2f} pages/s)"
    )
    print("\njudge runs")
    print(
        f"{'workers':>7}  {'cluster s':>9}  {'eval/s':>6}  {'ideal s':>7}  {'wall/ideal':>10}  "
        f"{'local same jobs s':>17}  {'eval/s':>6}  same scores  LLM calls cluster/local"
    )
    for n, on_cluster, local, _, _, same, calls in rows:
        ideal = one_node.wall / n
        print(
            f"{n:>7}  {on_cluster.wall:>9.1f}  {ev / on_cluster.wall:>6.2f}  {ideal:>7.1f}  "
            f"{on_cluster.wall / ideal:>10.2f}  {local.wall:>17.1f}  {ev / local.wall:>6.2f}  "
            f"{'yes' if same else 'NO':>11}  {calls}"
        )
    print("\npage capture")
    print(
        f"{'workers':>7}  {'cluster s':>9}  {'pages/s':>7}  {'ideal s':>7}  {'wall/ideal':>10}  "
        f"{'local same conc. s':>18}  {'pages/s':>7}"
    )
    for n, _, _, pages_cluster, pages_local, _, _ in rows:
        ideal = one_node_pages.wall / n
        print(
            f"{n:>7}  {pages_cluster.wall:>9.1f}  {pg / pages_cluster.wall:>7.2f}  {ideal:>7.1f}  "
            f"{pages_cluster.wall / ideal:>10.2f}  {pages_local.wall:>18.1f}  "
            f"{pg / pages_local.wall:>7.2f}"
        )


if __name__ == "__main__":
    main()
