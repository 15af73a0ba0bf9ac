"""Start-up and exit bench: the fixed costs around a run that `runner_bench.py` only shows
summed into wall times, each measured on its own in fresh interpreters.

  teardown      from the end of a command's work to process exit, with the runner's modules
                loaded: Python's normal exit vs `generator.cli.leave` (what `judgegen` does)
  fork server   importing what the sandbox's fork server loads before it says Ready, and
                parsing the Public Suffix List it builds once idle (beside tldextract, which
                it replaced, if installed)
  validation    importing the output validator and checking one verdict against the strict
                schema, with jsonschema-rs (used) and, if installed, the pure-Python jsonschema
  job process   what one sandboxed evaluation's process costs before its judge's first call,
                step by step: children forked from an interpreter that loaded what the fork
                server loads, each doing one more step (CPU and minor page faults per child;
                copy-on-write faults are what a forked job mostly pays for), then the schemas
                of the judge's templates its first extracts build, before and after the
                server's idle warm-up of template schemas

    python bench/startup_bench.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUN_MODULES = (
    "import generator.cli.run, generator.cli.run_outcome, toolkit.runner.scheduler, "
    "toolkit.sandbox.pool, toolkit.llm.client, toolkit.llm.settings, prompts; "
    "prompts.environment()"
)
TEARDOWN = """
import sys, time
{modules}
from generator.cli import leave
sys.stdout.write(repr(time.time())); sys.stdout.flush()
{exit}
"""
TIMED = """
import time
started = time.perf_counter()
{setup}
print(time.perf_counter() - started)
"""
VALIDATION = """
import time
started = time.perf_counter()
{import_line}
imported = time.perf_counter() - started
schema = {{"type": "object", "additionalProperties": False, "required": ["reasoning", "result"],
          "properties": {{"reasoning": {{"type": "string"}}, "result": {{"type": "boolean"}}}}}}
validator = Draft202012Validator(schema)
value = {{"reasoning": "supported by the page", "result": True}}
started = time.perf_counter()
for _ in range(2000):
    validator.is_valid(value)
print(imported, (time.perf_counter() - started) / 2000)
"""


JOB = """
import asyncio, gc, importlib, os, resource, sys
sys.path.insert(0, {bench!r})
import toolkit.sandbox.worker as worker
for name in worker._WARM_MODULES:
    importlib.import_module(name)
from runner_workload import JUDGE
from toolkit.backends import ExtractRequest
from toolkit.runner.loader import code_from_text, code_to_text, compile_judge, load_judge_source
from toolkit.sandbox import confinement, seccomp
from toolkit.sandbox.protocol import SandboxLimits
from toolkit.util.hashing import sha256_text

source = JUDGE.format(task_id="startup_bench", items=3)
digest = sha256_text(source)
code = code_to_text(compile_judge(source, "judge.py"), digest)
program = seccomp.job_filter(False)
baseline = confinement.vm_size_bytes()
gc.freeze()  # as the fork server does before Ready


async def nothing():
    await asyncio.sleep(0)


def child(steps):
    if steps >= 1:
        confinement.make_undumpable()
        limits = SandboxLimits()
        confinement.apply_job_limits(limits, baseline, seccomp.bind_self(program, os.getpid()))
    if steps >= 2:
        asyncio.run(nothing())
    if steps in (3, 5, 6):
        judge = load_judge_source(source.encode(), "judge.py", code_from_text(code, digest))
        if steps >= 5:
            for name in ("ItemList", "PageFacts"):
                ExtractRequest.for_template(getattr(judge.module, name), prompt="p")
    if steps == 4:
        load_judge_source(source.encode(), "judge.py")
    os._exit(0)


for steps in range(7):
    if steps == 6:
        worker._warm("toolkit.backends:warm_template_schemas")  # the server's idle warm-up
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range({forks}):
        pid = os.fork()
        if pid == 0:
            child(steps)
        os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(steps, cpu / {forks} * 1000, (after.ru_minflt - before.ru_minflt) / {forks})
"""
JOB_STEPS = (
    "job: fork and exit",
    "job: + guards (rlimits, seccomp, not dumpable)",
    "job: + an event loop running one coroutine",
    "job: + a 3-model judge from parent-compiled code",
    "job:   the same, compiled in the job (before)",
    "job: + schemas of its 2 templates (as its extracts build)",
    "job:   the same, after the server's idle schema warm-up",
)


def python(code: str) -> str:
    """Run `code` in a fresh interpreter of this checkout; its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def teardown_ms(exit_call: str) -> float:
    """Milliseconds from the last line of work to the process having exited."""
    printed = python(TEARDOWN.format(modules=RUN_MODULES, exit=exit_call))
    return (time.time() - float(printed)) * 1000


def timed_ms(setup: str) -> float:
    return float(python(TIMED.format(setup=setup))) * 1000


def installed(module: str) -> bool:
    try:
        python(f"import {module}")
    except subprocess.CalledProcessError:
        return False
    return True


def line(label: str, values: list[float], unit: str = "ms") -> None:
    median, least = statistics.median(values), min(values)
    print(f"{label:<58} median {median:8.2f} {unit}, min {least:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            *(str(ROOT / p) for p in ("toolkit", "generator", "prompts")),
        ],
        check=True,
    )
    n = args.repeats
    line(
        "teardown, Python's normal exit (sys.exit)", [teardown_ms("sys.exit(0)") for _ in range(n)]
    )
    line(
        "teardown, judgegen's exit (generator.cli.leave)",
        [teardown_ms("leave(0)") for _ in range(n)],
    )
    warm = (
        "import importlib, toolkit.sandbox.worker as w\n"
        "for name in w._WARM_MODULES: importlib.import_module(name)"
    )
    line("fork server: imports before Ready", [timed_ms(warm) for _ in range(n)])
    psl = "from toolkit.checks.domains import suffix_list\nsuffix_list()"
    line("fork server: Public Suffix List parse (once idle)", [timed_ms(psl) for _ in range(n)])
    if installed("tldextract"):
        replaced = (
            "import tldextract\n"
            "tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(),"
            " include_psl_private_domains=True).extract_str('a.example.co.uk')"
        )
        line(
            "  for comparison: tldextract import + first use (replaced)",
            [timed_ms(replaced) for _ in range(n)],
        )
    job_costs(n)
    validators = [("jsonschema_rs", "from jsonschema_rs import Draft202012Validator")]
    if installed("jsonschema"):
        validators.append(("jsonschema", "from jsonschema import Draft202012Validator"))
    for name, import_line in validators:
        runs = [python(VALIDATION.format(import_line=import_line)).split() for _ in range(n)]
        line(f"validation: import {name}", [float(r[0]) * 1000 for r in runs])
        line(
            f"validation: one verdict checked with {name}", [float(r[1]) * 1e6 for r in runs], "µs"
        )


def job_costs(repeats: int) -> None:
    """CPU and minor faults per job process, step by step (see JOB)."""
    script = JOB.format(bench=str(ROOT / "bench"), forks=100)
    runs = [[row.split() for row in python(script).splitlines()] for _ in range(repeats)]
    for steps, label in enumerate(JOB_STEPS):
        cpu = [float(run[steps][1]) for run in runs]
        faults = statistics.median(float(run[steps][2]) for run in runs)
        line(label, cpu, f"ms CPU ({faults:.0f} minor faults)")


if __name__ == "__main__":
    main()
