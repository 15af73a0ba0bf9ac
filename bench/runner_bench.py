"""Runner bench: what a user waits for when `judgegen run` scores answers with default flags.

Every figure is timed from process start: the bench runs the real CLI in a subprocess
(`python -c 'from generator.cli import entry; entry()' run ...`, what the `judgegen` script
does) with its default flags — sandboxed, default --jobs and --concurrency, response cache on
— plus `--provider scripted:latency_model:respond`, a scripted provider that sleeps a fixed
wall-clock latency per call. The provider is the only simulated part: prompts, voting,
cache, the run's LLM concurrency limit, budget, ledger and the sandbox broker are the real
ones. Each scenario also runs in process (`--no-sandbox`).

Scenarios (bench/runner_workload.py has the judges; they are shaped like published
Mind2Web 2 judges — item after item, each a dependent chain of extraction and checks):
  chain       few evaluations with ~50-call dependent chains (chain-bound); run from scratch
              --chain-runs times (3), the median shown and every run's ratio listed; cold
              (no warm server: what the first run in an environment pays) and "served" (as
              a later run gets it: forked by the warm server an earlier run left behind)
  throughput  450 evaluations (throughput-bound at the default LLM concurrency)
  zero        the throughput workload at zero latency: overhead per evaluation
  cached      9 evaluations run once, then rerun with --overwrite (every call a cache hit)
              and rerun as is (every result fresh), both cold; then the --overwrite rerun
              served by the warm server an earlier run left behind (what a user's rerun
              gets with default flags; median of 3)

Printed per run: wall; ideal = max(longest dependent chain x latency, LLM calls x latency /
LLM concurrency), the chain measured per evaluation on a virtual clock through the real
LLMBackend (bench/runner_workload.py); wall/ideal (target <= 1.2); "floor", the same
workload on that virtual clock with every evaluation sharing the run's LLM concurrency limit
(zero overhead, the limit's own policy: bursts of calls over the limit wait there too, which
the ideal leaves out), and wall/floor, what this machine and judgegen's overhead add to it;
LLM calls per evaluation
and what Mind2Web 2's toolkit spends on the same judges and verdicts (target: never more);
ms per evaluation at zero latency (target <= 10 sandboxed); the CPU all processes used per
evaluation ("cpu ms", from /proc/stat: the parent, the fork server and every job) and, at
zero latency, that CPU spread over the usable cores (the "CPU floor": no schedule can beat
it, so the ms/eval target needs CPU per evaluation <= target x cores), the page faults per
evaluation of every process and what one copy-on-write fault costs here (a forked job copies
each page of the fork server it writes to), and the CPU of the
`judgegen` process itself (one core: a floor of its own; the timed command is the
`judgegen` script's with one exit hook that writes its getrusage); when the
first LLM call reached the provider, from process start ("1st call"), and the sandboxed
one against the in-process one (what the fork server and first job add), and how long the
process ran after the last answer came back ("tail": results, summaries, the fresh stamp,
exit); how long after its latency a chain-bound run's calls resumed (the simulated model
answers at the deadline through a timerfd, as a reply wakes the loop through its socket, so
that delay is the loop busy with judgegen's other work); for a chain-bound run, where the
time of the evaluation that finished last went ("where the time went": its first call, its
rounds of model latency, how late their answers were taken up, judgegen's work before a
round's calls went out, and waits over half a latency: no free slot under the LLM concurrency
limit, or the host stalled — together its last answer, then the exit); the same command rerun at once, every result fresh (median of 3; "rerun", target <= 0.2 s
for 9 evaluations); cold `run --help` (target <= 0.3 s); and a bare interpreter's start on
this machine, with the share of its `site` start-up (.pth hooks), which every process timed
from its start pays before judgegen runs a line; and what importing the real providers' SDKs
adds to a real run's first call (the scripted provider imports none).

Every run is also checked for what it judged: each evaluation's result must be complete, with
the score the bench's own checkout gives it in process (`Schedule.scores`, computed with the
schedule). A run that judged differently — faster because it skipped a page check, say — is
listed as RESULTS DIFFER and the bench exits 1: its timing is not a speed-up. With `--repo`,
the reference still comes from the bench's checkout, so an A/B run also compares verdicts.

    python bench/runner_bench.py                  # everything, ~3-4 minutes on 2 busy cores
    python bench/runner_bench.py --quick          # 90 throughput evaluations, fewer items
    python bench/runner_bench.py --only chain,cached --modes sandboxed

Cited pages carry 30 KB of text and a 40 KB screenshot by default. `judgegen cache-pages`
captures full-page JPEGs (1280 px wide, up to 8000 px tall, quality 70), most far larger
than 40 KB; what page handling costs with such captures shows with `--screenshot-bytes
1000000 --quick` (and, per page, in `bench/page_read_bench.py`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from latency_model import FIRST_CALL_ENV, LAST_CALL_ENV, LATENCY_ENV  # noqa: E402
from runner_workload import Schedule, Workload, build  # noqa: E402

LAUNCH = "from generator.cli import entry; entry()"  # what the `judgegen` script runs
PARENT_CPU_ENV = "JUDGEGEN_BENCH_PARENT_CPU"
# A timed run is LAUNCH with one exit hook: the CPU the `judgegen` process used itself (its
# own getrusage, without the fork server and the job processes), written to PARENT_CPU_ENV.
TIMED_LAUNCH = (
    "import atexit, os, resource\n"
    "def _cpu():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    f"    with open(os.environ['{PARENT_CPU_ENV}'], 'w') as out:\n"
    "        out.write(repr(usage.ru_utime + usage.ru_stime))\n"
    "atexit.register(_cpu)\n"
) + LAUNCH
PROVIDER = "scripted:latency_model:respond"
REPO_ENV = "RUNNER_BENCH_REPO"
SERVERS_ENV = "RUNNER_BENCH_SERVERS"  # the warm servers' folder (JUDGEGEN_SERVER_DIR)
MODES = ("sandboxed", "in-process")
SCENARIOS = ("chain", "throughput", "zero", "cached")
RERUNS = 3


@dataclasses.dataclass
class Run:
    """One timed `judgegen run` process."""

    wall: float
    exit_code: int
    record: dict[str, Any]
    stderr: str
    first_call: float | None
    tail: float | None = None
    cpu: float | None = None
    model_late_ms: float | None = None
    """How long after its latency, on average, a call resumed."""
    model_timer: str | None = None
    """What woke the calls: "timerfd" (the model answers at the deadline, so `model_late_ms`
    is the event loop busy with judgegen's other work) or "asyncio" (its timer's rounding too)."""
    judge_cpu: float | None = None
    """CPU seconds of the sandboxed job processes behind the results this run wrote (their
    `judge_cpu_s`); None in process."""
    spans: list[tuple[str | None, float, float]] | None = None
    """Every call's (task id, when it reached the model, when it was answered), wall clock."""
    parent_cpu: float | None = None
    """CPU seconds of the `judgegen` process itself (not the fork server or job processes);
    of a served run, the client's alone."""
    served: bool = False
    """Whether a warm server ran the command (the `judgegen` process only waited for it)."""
    faults: int | None = None
    """Page faults on the whole machine during the run (/proc/vmstat: every process's)."""

    @property
    def usage(self) -> dict[str, Any]:
        return self.record.get("usage", {})

    @property
    def provider_calls(self) -> int:
        """LLM calls that reached the provider (cache hits excluded)."""
        return int(self.usage.get("llm_calls", 0)) - int(self.usage.get("cache_hits", 0))


def cli_env(latency: float, served: bool = False) -> dict[str, str]:
    """The environment of the CLI: the checkout under test first, no judgegen settings or keys;
    warm servers in the bench's own folder, on only for `served` runs (a cold run is what the
    first run in an environment pays, and leaves no server behind)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGEGEN_") and not k.endswith("_API_KEY")
    }
    if SERVERS_ENV in os.environ:
        env["JUDGEGEN_SERVER_DIR"] = os.environ[SERVERS_ENV]
    env["JUDGEGEN_SERVER"] = "on" if served else "off"
    env["PYTHONPATH"] = os.pathsep.join([os.environ.get(REPO_ENV, str(ROOT)), str(BENCH)])
    env[LATENCY_ENV] = repr(latency)
    return env


def judgegen_run(
    root: Path, sandboxed: bool, latency: float, extra: list[str], served: bool = False
) -> Run:
    """Run `judgegen run` in `root` and time it from process start to exit (`served`: with
    warm servers on; `Run.served` says whether one ran it)."""
    args = [sys.executable, "-c", TIMED_LAUNCH, "run", "--answers", "answers"]
    args += ["--judges", "judges"]
    args += ["--pages", "pages", "--include-unreviewed", "--provider", PROVIDER, "--json"]
    args += ([] if sandboxed else ["--no-sandbox"]) + extra
    env = cli_env(latency, served)
    commands_served = served_count()
    marker, last, own = root / "first-call", root / "last-call", root / "parent-cpu"
    for path in (marker, last, own):
        path.unlink(missing_ok=True)
    env[FIRST_CALL_ENV], env[LAST_CALL_ENV], env[PARENT_CPU_ENV] = map(str, (marker, last, own))
    began = time.time()
    cpu_before, faults_before = machine_cpu(), machine_faults()
    started = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu_after, faults_after = machine_cpu(), machine_faults()
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    first_call = float(marker.read_text()) - began if marker.exists() else None
    tail = late = timer = spans = None
    if last.exists():
        answered = json.loads(last.read_text())
        tail = began + wall - answered["at"]
        late = answered["late_s"] / answered["calls"] * 1000 if answered["calls"] else None
        timer = answered.get("timer")
        spans = [(task, start - began, end - began) for task, start, end in answered["spans"]]
    try:
        record = json.loads(done.stdout)
    except ValueError:
        record = {}
    if done.returncode != 0 or not record:
        sys.stderr.write(f"judgegen run exited {done.returncode}:\n{done.stderr[-3000:]}\n")
    judge_cpu = written_judge_cpu(root / "results", began)
    served_it = served_count() > commands_served
    return Run(
        wall,
        done.returncode,
        record,
        done.stderr,
        first_call,
        tail,
        cpu,
        late,
        timer,
        judge_cpu,
        spans,
        float(own.read_text()) if own.exists() else None,
        served_it,
        faults_after - faults_before if faults_before is not None and faults_after else None,
    )


def served_chain(
    base: Path,
    workload: Workload,
    mode: str,
    args: argparse.Namespace,
    sched: Schedule,
    concurrency: int,
    wrong: list[str | None],
) -> dict:
    """The chain-bound scenario as a user's later runs get it: served by the warm server the
    first run left behind (that first run is not timed; each timed run starts from scratch,
    like the cold ones, and waits for nothing but what a user would)."""
    sandboxed, latency, label = mode == "sandboxed", args.latency, f"chain {mode} served"
    shutil.rmtree(base / f"{workload.name}-{mode}", ignore_errors=True)  # the cold runs' root
    root = prepare(base, workload, mode, args)
    leave_server(root, sandboxed, latency, args.run_args)
    runs = []
    for _ in range(args.chain_runs):
        shutil.rmtree(root)
        root = prepare(base, workload, mode, args)
        runs.append(judgegen_run(root, sandboxed, latency, args.run_args, served=True))
        wrong.append(check_results(root, sched, label))
    stop_servers()
    shutil.rmtree(root)
    median = sorted(runs, key=lambda run: run.wall)[len(runs) // 2]
    served = row(label, median, workload.evaluations, latency, sched, concurrency)
    print_row(served)
    _say_runs(label, runs, served["ideal_s"])
    if not all(run.served for run in runs):
        print(f"  {label}: {sum(not run.served for run in runs)} run(s) NOT served (run cold)")
    timed = chain_time(median.spans or [], latency)
    if timed is not None:
        served["chain_time"] = dataclasses.asdict(timed)
        _say_chain_time(label, median, timed)
    return served


def served_overwrite(root: Path, sandboxed: bool, extra: list[str], runs: int = 3) -> Run:
    """The fully cached `--overwrite` rerun as a user's later runs get it with default flags:
    served by the warm server an earlier run left behind (that run is not timed); the median
    of `runs`. The run that leaves it judges (a run with nothing to redo leaves none)."""
    leave_server(root, sandboxed, 0.0, ["--overwrite", *extra])
    timed = [
        judgegen_run(root, sandboxed, 0.0, ["--overwrite", *extra], served=True)
        for _ in range(runs)
    ]
    stop_servers()
    return sorted(timed, key=lambda run: run.wall)[len(timed) // 2]


def served_count() -> int:
    """How many commands the bench's warm servers have run so far (from their logs)."""
    folder = Path(os.environ.get(SERVERS_ENV, "/nonexistent"))
    return sum(log.read_text().count("serving ['run']") for log in folder.glob("*.log"))


def leave_server(root: Path, sandboxed: bool, latency: float, extra: list[str]) -> None:
    """A cold run with servers on, which leaves one behind for `root`'s environment; return
    once it listens (it imports first)."""
    folder = Path(os.environ[SERVERS_ENV])
    before = set(folder.glob("*.sock"))
    judgegen_run(root, sandboxed, latency, extra, served=True)
    deadline = time.monotonic() + 60
    while not set(folder.glob("*.sock")) - before and time.monotonic() < deadline:
        time.sleep(0.05)


def stop_servers() -> None:
    """End the bench's warm servers (each after its running command)."""
    from generator.cli.warm.client import servers, stop_servers

    folder = Path(os.environ[SERVERS_ENV])
    stop_servers(folder)
    deadline = time.monotonic() + 30
    while servers(folder) and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclasses.dataclass
class ChainTime:
    """Where the time of the evaluation that finished last went, from process start to its
    last answer: `start` (its first call), then `steps` dependent rounds of calls (calls in
    flight together are one round). A round lasts from its first call to its last answer:
    `latency`, plus how late the call that ended the round was answered after its latency
    (`late`: the event loop busy elsewhere), plus how long after the round began that call was
    sent. That delay, and each gap between a round's last answer and the next round's first
    call, is judgegen's own work (`between`: the answer through the LLM stack and the judge, the
    next request built) unless it is over half a latency: then it is a stall (`stalls`: no free
    slot under the LLM concurrency limit, or a stalled host — more than judgegen does between
    two calls)."""

    task: str | None
    start: float
    steps: int
    latency: float
    late: float
    between: float
    stalls: float
    stall_count: int
    median_gap_ms: float

    @property
    def end(self) -> float:
        return self.start + self.steps * self.latency + self.late + self.between + self.stalls


def chain_time(spans: list[tuple[str | None, float, float]], latency: float) -> ChainTime | None:
    """The `ChainTime` of the evaluation whose last answer came last, its calls told apart by
    task id (the chain scenario has one answer per task); None without calls or latency."""
    if not spans or latency <= 0:
        return None
    by_task: dict[str | None, list[tuple[float, float]]] = {}
    for task, start, end in spans:
        by_task.setdefault(task, []).append((start, end))
    task, calls = max(by_task.items(), key=lambda item: max(end for _, end in item[1]))
    rounds: list[list[tuple[float, float]]] = []
    for call in sorted(calls):
        if rounds and call[0] < max(end for _, end in rounds[-1]):
            rounds[-1].append(call)
        else:
            rounds.append([call])
    sent_late, gaps, late = [], [], 0.0
    for index, calls_of_round in enumerate(rounds):
        last_start, last_end = max(calls_of_round, key=lambda call: call[1])
        late += last_end - last_start - latency
        sent_late.append(last_start - calls_of_round[0][0])  # the round's last call, sent late
        if index + 1 < len(rounds):
            gaps.append(rounds[index + 1][0][0] - last_end)  # to the next round's first call
    waits = sent_late + gaps
    stalled = [wait for wait in waits if wait > latency / 2]
    return ChainTime(
        task=task,
        start=rounds[0][0][0],
        steps=len(rounds),
        latency=latency,
        late=late,
        between=sum(waits) - sum(stalled),
        stalls=sum(stalled),
        stall_count=len(stalled),
        median_gap_ms=statistics.median(gaps) * 1000 if gaps else 0.0,
    )


def written_judge_cpu(results: Path, since: float) -> float | None:
    """The summed `judge_cpu_s` of the results written at or after `since` (None when none
    of them was judged in a sandbox)."""
    total = None
    for path in results.glob("*/*/*.json"):
        if path.stat().st_mtime < since:
            continue
        with contextlib.suppress(OSError, ValueError):
            cpu = json.loads(path.read_text()).get("judge_cpu_s")
            if cpu is not None:
                total = (total or 0.0) + float(cpu)
    return total


def machine_cpu() -> float | None:
    """CPU seconds every process on the machine has used (user + nice + system, from
    /proc/stat): around a run, what it cost in all its processes — the parent, the fork
    server and every job — which a process's own rusage cannot see (jobs are not its
    children). Includes anything else running; the bench wants a quiet machine."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    return sum(int(v) for v in fields[1:4]) / os.sysconf("SC_CLK_TCK")


def machine_faults() -> int | None:
    """Page faults every process on the machine has taken (`pgfault` in /proc/vmstat): around
    a run, what touching memory cost all its processes; a forked job copies each page of the
    fork server it writes to, one fault each."""
    try:
        with open("/proc/vmstat") as vmstat:
            for line in vmstat:
                name, _, value = line.partition(" ")
                if name == "pgfault":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


def fault_cost_us(pages: int = 4096, repeats: int = 5) -> float | None:
    """What one copy-on-write page fault costs on this machine (median µs): a forked child
    writes one byte in each of `pages` pages its parent filled, and times it. On a virtual
    machine it can be several times what it costs on bare metal."""
    page = os.sysconf("SC_PAGE_SIZE")
    memory = bytearray(os.urandom(16)) * (pages * page // 16)
    times = []
    for _ in range(repeats):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            started = time.perf_counter()
            for offset in range(0, len(memory), page):
                memory[offset] = 1
            os.write(write, repr(time.perf_counter() - started).encode())
            os._exit(0)
        os.close(write)
        taken = os.read(read, 64)
        os.close(read)
        os.waitpid(pid, 0)
        if taken:
            times.append(float(taken) / pages * 1e6)
    return statistics.median(times) if times else None


def fresh_rerun(root: Path, sandboxed: bool, latency: float, extra: list[str]) -> Run:
    """The same command rerun (every result fresh), the median of `RERUNS` runs: one ~0.1 s
    sample moves by tens of ms with the machine's noise."""
    runs = [judgegen_run(root, sandboxed, latency, extra) for _ in range(RERUNS)]
    return sorted(runs, key=lambda run: run.wall)[RERUNS // 2]


def byte_compile(repo: Path) -> None:
    """Compile the checkout's modules first, as installing a package does: with
    PYTHONDONTWRITEBYTECODE set (as on some CI machines) every run would otherwise compile
    judgegen's sources again, which no installed copy does."""
    packages = [str(repo / name) for name in ("toolkit", "generator", "prompts")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True)


def help_time(repeats: int) -> tuple[float, float]:
    """(min, median) seconds of a cold `judgegen run --help`."""
    return cold_time([sys.executable, "-c", LAUNCH, "run", "--help"], repeats)


def cold_time(command: list[str], repeats: int) -> tuple[float, float]:
    """(min, median) seconds of `command` run `repeats` times in the CLI's environment."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, env=cli_env(0.0), capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def say_sdk_imports(repeats: int) -> None:
    """What a real run adds before its first LLM call: its provider's SDK, imported when the
    provider first calls (the scripted provider here imports none). Timed after pydantic,
    which the run has imported by then."""
    base = cold_time([sys.executable, "-c", "import pydantic"], repeats)[1]
    costs = []
    for sdk in ("openai", "anthropic"):
        with_sdk = cold_time([sys.executable, "-c", f"import pydantic, {sdk}"], repeats)[1]
        costs.append(f"{sdk} +{(with_sdk - base) * 1000:.0f} ms")
    default = subprocess.run(
        [sys.executable, "-c", DEFAULT_PROVIDER],
        env=cli_env(0.0),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(
        f"provider SDK import on a real run's first call (median, after pydantic): "
        f"{', '.join(costs)}; `run` judges with {default} by default"
    )


DEFAULT_PROVIDER = (
    "from toolkit.llm.settings import LLMSettings; s = LLMSettings(); "
    "m = s.model_for('judge'); print(f'{s.provider_for(m)} ({m})')"
)


def say_interpreter_start(repeats: int) -> None:
    """What every Python process pays on this machine before judgegen runs a line: part of
    the first call's time from process start, and not judgegen's to cut (the `site` start-up
    runs the machine's `.pth` hooks)."""
    bare = cold_time([sys.executable, "-c", "pass"], repeats)[1]
    no_site = cold_time([sys.executable, "-S", "-c", "pass"], repeats)[1]
    print(
        f"interpreter start on this machine (median): {bare * 1000:.0f} ms, of which "
        f"{(bare - no_site) * 1000:.0f} ms is `site` (the machine's .pth start-up hooks)"
    )


def measure_schedule(root: Path, concurrency: int) -> Schedule:
    """The workload's schedule, computed by the checkout under test (its own backend); its
    reference scores come from the bench's own checkout, so a checkout run with `--repo`
    that judges differently from this one shows as a mismatch, not as a speed-up."""
    sched = _schedule_by(root, concurrency, os.environ.get(REPO_ENV, str(ROOT)))
    if Path(os.environ.get(REPO_ENV, ROOT)).resolve() != ROOT:
        sched.scores = _schedule_by(root, None, str(ROOT)).scores
    return sched


def _schedule_by(root: Path, concurrency: int | None, checkout: str) -> Schedule:
    env = {**cli_env(0.0), "PYTHONPATH": os.pathsep.join([checkout, str(BENCH)])}
    limit = [] if concurrency is None else [str(concurrency)]
    done = subprocess.run(
        [sys.executable, str(BENCH / "runner_workload.py"), str(root), *limit],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Schedule(**json.loads(done.stdout))


def prepare(base: Path, workload: Workload, mode: str, args: argparse.Namespace) -> Path:
    root = base / f"{workload.name}-{mode}"
    build(root, workload, args.page_chars, args.screenshot_bytes)
    return root


def row(label: str, run: Run, n: int, latency: float, sched: Schedule, concurrency: int) -> dict:
    """One printed line: wall, ideal, ratio, calls per evaluation (ours and Mind2Web 2's)."""
    chain = max(sched.chains)
    calls = run.provider_calls
    ideal = max(chain * latency, calls * latency / concurrency)
    bound = "chain" if chain * latency >= calls * latency / concurrency else "calls"
    floor = sched.shared_steps * latency if sched.shared_steps and latency else None
    return {
        "run": label,
        "exit": run.exit_code,
        "evaluations": n,
        "wall_s": round(run.wall, 3),
        "first_call_s": round(run.first_call, 3) if run.first_call is not None else None,
        "tail_s": round(run.tail, 3) if run.tail is not None else None,
        "model_late_ms": round(run.model_late_ms, 2) if run.model_late_ms is not None else None,
        "model_timer": run.model_timer,
        "ideal_s": round(ideal, 3),
        "bound": bound,
        "ratio": round(run.wall / ideal, 2) if ideal else None,
        "floor_s": round(floor, 3) if floor else None,
        "floor_ratio": round(run.wall / floor, 2) if floor else None,
        "ms_per_eval": round(run.wall / n * 1000, 1),
        "cpu_ms_per_eval": round(run.cpu / n * 1000, 1) if run.cpu is not None else None,
        "faults_per_eval": round(run.faults / n) if run.faults is not None else None,
        "judge_cpu_ms_per_eval": (
            round(run.judge_cpu / n * 1000, 1) if run.judge_cpu is not None else None
        ),
        "parent_cpu_ms_per_eval": (
            round(run.parent_cpu / n * 1000, 1) if run.parent_cpu is not None else None
        ),
        "calls_per_eval": round(calls / n, 1),
        "m2w2_calls_per_eval": round(sum(sched.m2w2_calls) / n, 1),
        "chain_calls": chain,
        "scheduled_calls": sum(sched.calls),
        "rerun_s": None,
    }


def print_row(r: dict) -> None:
    ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "  - "
    floor = f"{r['floor_s']:.2f}" if r["floor_s"] is not None else "-"
    floor_ratio = f"{r['floor_ratio']:.2f}" if r["floor_ratio"] is not None else "-"
    first = f"{r['first_call_s']:.2f}" if r["first_call_s"] is not None else "-"
    tail = f"{r['tail_s']:.2f}" if r["tail_s"] is not None else "-"
    rerun = f"{r['rerun_s']:.2f}" if r["rerun_s"] is not None else "-"
    cpu = f"{r['cpu_ms_per_eval']:.1f}" if r["cpu_ms_per_eval"] is not None else "-"
    print(
        f"{r['run']:<36} {r['evaluations']:>5} {r['wall_s']:>8.2f} {r['ideal_s']:>7.2f} "
        f"{r['bound']:>5} {ratio:>6} {floor:>6} {floor_ratio:>6} {r['ms_per_eval']:>8.1f} {cpu:>7} {r['calls_per_eval']:>6.1f}"
        f"/{r['m2w2_calls_per_eval']:<6.1f} {r['chain_calls']:>5} {first:>8} {tail:>5} {rerun:>6}"
        f"  exit {r['exit']}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="Seconds per LLM call.")
    parser.add_argument("--quick", action="store_true", help="90 throughput evaluations.")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="Scenarios to run.")
    parser.add_argument("--modes", default=",".join(MODES), help="sandboxed,in-process")
    parser.add_argument(
        "--items", type=int, default=12, help="Items per chain-bound answer (~4 chain calls each)."
    )
    parser.add_argument("--page-chars", type=int, default=30_000, help="Text per cited page.")
    parser.add_argument("--screenshot-bytes", type=int, default=40_000)
    parser.add_argument("--help-repeats", type=int, default=5)
    parser.add_argument(
        "--chain-runs",
        type=int,
        default=3,
        help="First runs per chain-bound mode; the median is shown (one run on a busy 2-core "
        "machine moves the ratio by several hundredths).",
    )
    parser.add_argument("--json", action="store_true", help="Also print the rows as JSON.")
    parser.add_argument(
        "--repo", type=Path, help="Run the CLI of this checkout (default: the bench's own)."
    )
    parser.add_argument("run_args", nargs="*", help="Extra `judgegen run` flags, after --.")
    args = parser.parse_args()
    if args.repo:
        os.environ[REPO_ENV] = str(args.repo.resolve())
    byte_compile(Path(os.environ.get(REPO_ENV, ROOT)))
    only = set(args.only.split(","))
    modes = [m for m in MODES if m in args.modes.split(",")]
    items = 6 if args.quick else args.items
    throughput = Workload("throughput", tasks=9, answers=10 if args.quick else 50, items=1)
    workloads = {
        "chain": Workload("chain", tasks=3, answers=1, items=items),
        "throughput": throughput,
        "zero": throughput,
        "cached": Workload("cached", tasks=3, answers=3, items=4),
    }
    concurrency = _concurrency(args.run_args)
    rows: list[dict] = []
    servers = tempfile.TemporaryDirectory(prefix="runner-bench-servers-")
    os.environ[SERVERS_ENV] = servers.name
    help_min, help_median = help_time(args.help_repeats)
    print(f"cold `judgegen run --help`: min {help_min:.3f} s, median {help_median:.3f} s")

    say_interpreter_start(args.help_repeats)
    say_sdk_imports(3)
    print(
        f"latency {args.latency * 1000:.0f} ms, LLM concurrency {concurrency}; extra flags: "
        f"{' '.join(args.run_args) or '(none)'}; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (cpu ms counts every process)"
    )
    print(
        f"{'run':<36} {'evals':>5} {'wall s':>8} {'ideal':>7} {'bound':>5} {'ratio':>6} "
        f"{'floor':>6} {'/floor':>6} "
        f"{'ms/eval':>8} {'cpu ms':>7} {'calls/m2w2':>13} {'chain':>5} {'1st call':>8} {'tail':>5} {'rerun':>6}"
    )
    schedules: dict[str, Schedule] = {}
    differ = 0  # runs whose results are not the in-process reference's
    with tempfile.TemporaryDirectory(prefix="runner-bench-") as tmp:
        base = Path(tmp)
        for name in SCENARIOS:
            if name not in only:
                continue
            workload = workloads[name]
            latency = 0.0 if name in ("zero", "cached") else args.latency
            for mode in modes:
                root = prepare(base, workload, mode, args)
                if workload.name not in schedules:
                    schedules[workload.name] = measure_schedule(root, concurrency)
                sched = schedules[workload.name]
                label = f"{name} {mode}"
                first = judgegen_run(root, mode == "sandboxed", latency, args.run_args)
                wrong = [check_results(root, sched, label)]
                repeats = [first]
                for _ in range(args.chain_runs - 1 if name == "chain" else 0):
                    shutil.rmtree(root)  # results and response cache: another first run
                    root = prepare(base, workload, mode, args)
                    repeats.append(judgegen_run(root, mode == "sandboxed", latency, args.run_args))
                    wrong.append(check_results(root, sched, label))
                first = sorted(repeats, key=lambda run: run.wall)[len(repeats) // 2]
                if name != "cached":
                    rerun = fresh_rerun(root, mode == "sandboxed", latency, args.run_args)
                    wrong.append(check_results(root, sched, f"{label} rerun"))
                    rows.append(
                        row(label, first, workload.evaluations, latency, sched, concurrency)
                    )
                    rows[-1]["rerun_s"] = round(rerun.wall, 3)
                    print_row(rows[-1])
                    _say_runs(label, repeats, rows[-1]["ideal_s"])
                    timed = chain_time(first.spans or [], latency) if name == "chain" else None
                    if timed is not None:
                        rows[-1]["chain_time"] = dataclasses.asdict(timed)
                        _say_chain_time(label, first, timed)
                    _say_if_redone(rerun)
                    _say_if_off_schedule(first, sched)
                else:
                    overwrite = judgegen_run(
                        root, mode == "sandboxed", 0.0, ["--overwrite", *args.run_args]
                    )
                    wrong.append(check_results(root, sched, f"{label} rerun --overwrite"))
                    fresh = fresh_rerun(root, mode == "sandboxed", 0.0, args.run_args)
                    wrong.append(check_results(root, sched, f"{label} rerun fresh"))
                    served = served_overwrite(root, mode == "sandboxed", args.run_args)
                    wrong.append(check_results(root, sched, f"{label} served rerun --overwrite"))
                    for suffix, run in (
                        ("rerun --overwrite", overwrite),
                        ("rerun fresh", fresh),
                        ("served rerun --overwrite", served),
                    ):
                        rows.append(
                            row(
                                f"{label} {suffix}",
                                run,
                                workload.evaluations,
                                0.0,
                                sched,
                                concurrency,
                            )
                        )
                        print_row(rows[-1])
                    _say_if_redone(fresh)
                    if not served.served:
                        print(f"  {label} served rerun --overwrite: NOT served (run cold)")
                if name == "chain":
                    rows.append(served_chain(base, workload, mode, args, sched, concurrency, wrong))
                for message in filter(None, wrong):
                    print(message)
                    differ += 1
                shutil.rmtree(root, ignore_errors=True)
    above = sum(
        sum(c > m for c, m in zip(s.calls, s.m2w2_calls, strict=True)) for s in schedules.values()
    )
    total = sum(len(s.calls) for s in schedules.values())
    print(f"evaluations with more LLM calls than Mind2Web 2 would make: {above} of {total}")
    for mode in modes:
        mine = [r for r in rows if r["run"].endswith(mode)]
        for key, what in (
            ("first_call_s", "first LLM call after process start"),
            ("tail_s", "time from the last answer to exit"),
        ):
            values = [r[key] for r in mine if r[key] is not None]
            if values:
                print(f"{what}, {mode}: min {min(values):.3f} s, max {max(values):.3f} s")
    _say_sandbox_delay(rows)
    _say_model_lateness(rows)
    cost_us = fault_cost_us() if any(r["run"].startswith("zero ") for r in rows) else None
    _say_cpu_floor(rows, cost_us)
    if args.json:
        print(json.dumps({"help_s": [help_min, help_median], "rows": rows}, indent=2))
    servers.cleanup()
    if differ:
        sys.exit(f"RESULTS DIFFER in {differ} run(s) (listed above): their timings do not count")
    print("results: every run wrote the in-process reference's scores, every evaluation complete")


def check_results(root: Path, sched: Schedule, label: str) -> str | None:
    """What is wrong when the run in `root` did not write, for every evaluation, a complete
    result with the score the in-process reference gave (`Schedule.scores`); else None. A
    faster run that judged differently must never pass for a speed-up."""
    wrong = []
    for key, expected in sorted(sched.scores.items()):
        try:
            result = json.loads((root / "results" / f"{key}.json").read_text())
        except (OSError, ValueError) as exc:
            wrong.append(f"{key}: no readable result ({exc})")
            continue
        got = result.get("final_score")
        if result.get("status") != "complete":
            wrong.append(f"{key}: {result.get('status')} ({result.get('reason') or ''})")
        elif got is None or expected is None or abs(got - expected) > 1e-9:
            wrong.append(f"{key}: score {got}, the reference's {expected}")
    if not wrong:
        return None
    return f"  RESULTS DIFFER, {label}: {len(wrong)} of {len(sched.scores)}: {'; '.join(wrong[:3])}"


def _say_sandbox_delay(rows: list[dict]) -> None:
    """What the sandbox adds before the first LLM call: each scenario's sandboxed first call
    against its in-process one (the same start-up but for the fork server and the first job,
    which should stay off the critical path)."""
    firsts = {r["run"]: r["first_call_s"] for r in rows if r["first_call_s"] is not None}
    for name in SCENARIOS:
        sandboxed, in_process = firsts.get(f"{name} sandboxed"), firsts.get(f"{name} in-process")
        if sandboxed is not None and in_process is not None:
            print(
                f"first LLM call, {name}: sandboxed {(sandboxed - in_process) * 1000:+.0f} ms "
                "against in process (what the fork server and the first job add)"
            )


def _say_runs(label: str, runs: list[Run], ideal: float) -> None:
    """Every first run's wall/ideal when there were several (the row shows the median)."""
    if len(runs) > 1 and ideal:
        ratios = ", ".join(f"{run.wall / ideal:.2f}" for run in runs)
        print(f"  {label}: wall/ideal of {len(runs)} first runs {ratios} (the median is shown)")


def _say_chain_time(label: str, run: Run, timed: ChainTime) -> None:
    """Where the wall time of a chain-bound run went, from the evaluation that finished last
    (`chain_time`): what adds up to the wall, beyond its rounds of model latency."""
    latency = timed.latency
    tail = f", exit {run.tail:.3f} s later" if run.tail is not None else ""
    print(
        f"  where the time went, {label}, {timed.task} (finished last): first call at "
        f"{timed.start:.3f} s; {timed.steps} rounds x {latency * 1000:.0f} ms = "
        f"{timed.steps * latency:.3f} s; answers taken up late {timed.late:.3f} s; judgegen's "
        f"work before a round's calls went out {timed.between:.3f} s (median "
        f"{timed.median_gap_ms:.1f} ms between rounds); {timed.stall_count} waits over half a "
        f"latency {timed.stalls:.3f} s (no free slot under the LLM concurrency limit, or the "
        f"host stalled); last answer at {timed.end:.3f} s{tail}; wall {run.wall:.3f} s"
    )


def _say_model_lateness(rows: list[dict]) -> None:
    """How long after its latency a chain's calls resumed. The simulated model answers through
    a timerfd at the deadline, as a real reply wakes the loop through its socket, so the delay
    is the event loop busy with judgegen's other work. Without a timerfd it answers through
    asyncio's timer, which rounds each wait up to the millisecond: that share is the bench's."""
    for r in rows:
        if r["model_late_ms"] is not None and r["bound"] == "chain" and r["ratio"] is not None:
            over = r["model_late_ms"] * r["chain_calls"] / 1000
            whose = (
                "the event loop busy with judgegen's other work; the model answers on time"
                if r["model_timer"] == "timerfd"
                else "asyncio's timer, rounded up to the ms, is the bench's; the rest judgegen's"
            )
            print(
                f"calls resumed after their latency, {r['run']}: {r['model_late_ms']:.2f} ms per "
                f"call, ~{over:.3f} s over its chain of {r['chain_calls']} "
                f"({over / r['ideal_s']:.2f} of the ratio; {whose})"
            )


def _say_cpu_floor(rows: list[dict], cost_us: float | None) -> None:
    """At zero latency a run is bound by CPU alone: the CPU all its processes used per
    evaluation, spread over the cores this process may use, is the least wall time per
    evaluation any schedule could reach (what the ms/eval target has to fit under)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for r in rows:
        if r["run"].startswith("zero ") and r["cpu_ms_per_eval"] is not None and cores:
            floor = r["cpu_ms_per_eval"] / cores
            print(
                f"CPU floor, {r['run']}: {r['cpu_ms_per_eval']:.1f} ms of CPU per evaluation "
                f"over {cores} cores = {floor:.1f} ms/eval at best (measured {r['ms_per_eval']:.1f})"
            )
            jobs = r.get("judge_cpu_ms_per_eval")
            own = r.get("parent_cpu_ms_per_eval")
            if jobs is not None:
                print(
                    f"  of which {jobs:.1f} ms in the job processes that ran the judges (each "
                    f"one's start, judge and exit: their `judge_cpu_s`), "
                    f"{r['cpu_ms_per_eval'] - jobs:.1f} ms elsewhere (the parent, the fork "
                    "server's forks, the machine)"
                )
            if own is not None:
                print(
                    f"  the `judgegen` process itself: {own:.1f} ms of CPU per evaluation, "
                    f"all on one core, so no schedule gets below {own:.1f} ms/eval (its own "
                    "getrusage at exit)"
                )
            faults = r.get("faults_per_eval")
            if faults is not None and cost_us is not None:
                print(
                    f"  page faults: {faults} per evaluation (every process), ~{faults * cost_us / 1000:.1f} ms "
                    f"of CPU at this machine's {cost_us:.1f} µs per copy-on-write fault"
                )


def _say_if_off_schedule(run: Run, sched: Schedule) -> None:
    """The ideal and the floor come from the schedule's calls (cache off, nothing shared in
    flight); a run that made other calls is not measured against its own work: say so."""
    scheduled = sum(sched.calls)
    if run.exit_code == 0 and run.provider_calls != scheduled:
        print(
            f"  note: the run above made {run.provider_calls} provider calls, its schedule "
            f"{scheduled}: its ideal and floor are of other work"
        )


def _say_if_redone(rerun: Run) -> None:
    """A rerun meant to find every result fresh must judge nothing; say so if it did."""
    redone = rerun.record.get("evaluated")
    if redone:
        print(f"  note: the rerun above judged {redone} evaluation(s) again (not all fresh)")


def _concurrency(run_args: list[str]) -> int:
    """The LLM concurrency the runs use: --concurrency among the extra flags, else the default."""
    if "--concurrency" in run_args:
        return int(run_args[run_args.index("--concurrency") + 1])
    from toolkit.llm.settings import LLMSettings

    return int(LLMSettings.model_fields["concurrency"].default)


if __name__ == "__main__":
    main()
