"""`judgegen run` loads only what a run uses: no generation code, browser or unused SDKs.

Checked in a fresh interpreter by listing `sys.modules` after the command, never by timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from generator.cli.fresh_stamp import STAMP_FILE
from tests.fixtures.runner.helpers import build_page_store, copy_fixtures

REPO = Path(__file__).resolve().parents[2]

# Top-level packages or module prefixes `run` never needs.
NEVER_FOR_RUN = (
    "libcst",
    "playwright",
    "anthropic",
    "openai",
    "generator.stages.lint",
    "generator.stages.debug",
)
NEVER_FOR_HELP = (
    *NEVER_FOR_RUN,
    "jinja2",
    "pydantic",
    "toolkit.runner.results_lock",
    "toolkit.llm.cache",
    "toolkit.runner.scheduler",
    "toolkit.evaluator",
    "prompts",
)

PROBE = """
import json, sys
from generator.cli import main
try:
    main(sys.argv[1:], prog_name="judgegen")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(*args: str, cwd: Path = REPO) -> set[str]:
    """The modules a fresh interpreter holds after `judgegen ARGS` (last stdout line)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GOOGLE_MAPS_API_KEY", None)  # no maps provider: nothing needs an HTTP client
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def offending(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_cli_import_and_run_help_load_no_generation_browser_or_runner_code() -> None:
    modules = loaded_modules("run", "--help")
    assert "generator.cli.run" in modules
    assert offending(modules, NEVER_FOR_HELP) == []


def in_process_run(work: Path) -> list[str]:
    """`judgegen run` arguments for the runner fixtures copied into `work`, in process."""
    copy_fixtures(work)
    build_page_store(work / "pages")
    args = ["run", "--answers", str(work / "answers"), "--judges", str(work / "judges")]
    args += ["--results", str(work / "results"), "--pages", str(work / "pages")]
    args += ["--include-unreviewed", "--no-sandbox", "--cache-mode", "off"]
    return [*args, "--provider", "scripted:tests.fixtures.runner.llm_policy:policy"]


def test_an_in_process_run_loads_no_generation_code_browser_or_provider_sdk(
    tmp_path: Path,
) -> None:
    modules = loaded_modules(*in_process_run(tmp_path), cwd=tmp_path)
    assert "toolkit.runner.scheduler" in modules and list((tmp_path / "results").rglob("*.json"))
    assert offending(modules, (*NEVER_FOR_RUN, "httpx2", "toolkit.tools.google_maps")) == []


NEVER_FOR_FRESH_RERUN = (
    *NEVER_FOR_RUN,
    "jinja2",
    "jsonschema_rs",
    "toolkit.runner.scheduler",
    "toolkit.runner.executors",
    "toolkit.sandbox",
    "toolkit.evaluator",
    "toolkit.backends",
    "toolkit.llm.client",
    "toolkit.llm.cache",
    "toolkit.llm.models",
    "toolkit.tools",
    "toolkit.pages.capture",
)


def test_a_rerun_with_nothing_to_redo_is_decided_without_the_runner_sandbox_or_llm_layer(
    tmp_path: Path,
) -> None:
    args = in_process_run(tmp_path)
    loaded_modules(*args, cwd=tmp_path)
    (tmp_path / "results" / STAMP_FILE).unlink()  # the slow fresh path, not the stamp's
    modules = loaded_modules(*args, cwd=tmp_path)
    assert "toolkit.runner.freshness" in modules
    assert offending(modules, NEVER_FOR_FRESH_RERUN) == []


def test_a_sandboxed_rerun_with_nothing_to_redo_starts_no_sandbox(tmp_path: Path) -> None:
    args = [a for a in in_process_run(tmp_path) if a != "--no-sandbox"]
    loaded_modules(*args, cwd=tmp_path)
    modules = loaded_modules(*args, cwd=tmp_path)
    assert offending(modules, ("toolkit.sandbox", "toolkit.runner.builder")) == []
