"""Start-up and exit bench: the fixed costs around a run that `runner_bench.py` only shows
summed into wall times, each measured on its own in fresh interpreters.

  teardown      from the end of a command's work to process exit, with the runner's modules
                loaded: Python's normal exit vs `generator.cli.leave` (what `judgegen` does)
  fork server   importing what the sandbox's fork server loads before it says Ready, and
                parsing the Public Suffix List it builds once idle (beside tldextract, which
                it replaced, if installed)
  validation    importing the output validator and checking one verdict against the strict
                schema, with jsonschema-rs (used) and, if installed, the pure-Python jsonschema

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
    print(f"{label:<58} median {statistics.median(values):8.2f} {unit}, min {min(values):8.2f}")


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
    validators = [("jsonschema_rs", "from jsonschema_rs import Draft202012Validator")]
    if installed("jsonschema"):
        validators.append(("jsonschema", "from jsonschema import Draft202012Validator"))
    for name, import_line in validators:
        runs = [python(VALIDATION.format(import_line=import_line)).split() for _ in range(n)]
        line(f"validation: import {name}", [float(r[0]) * 1000 for r in runs])
        line(
            f"validation: one verdict checked with {name}", [float(r[1]) * 1e6 for r in runs], "µs"
        )


if __name__ == "__main__":
    main()
