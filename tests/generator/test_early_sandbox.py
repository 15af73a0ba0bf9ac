"""The executable starts the fork server before parsing flags when `run` will need it; `run`
adopts it only if its parsed flags agree, and whatever is not adopted is killed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.cli.early_sandbox import EarlySandbox
from tests.fixtures.runner.helpers import copy_fixtures, run_args


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def runs(work: Path, *extra: str) -> list[str]:
    args = run_args(work, "--include-unreviewed", *extra, pages=False)
    return [*args, "--results", str(work / "out")]


def test_a_sandboxed_run_with_nothing_fresh_launches_at_once(work: Path) -> None:
    early = EarlySandbox.start(runs(work))
    try:
        assert early.take() is not None
    finally:
        early.discard()


@pytest.mark.parametrize(
    "extra", [("--no-sandbox",), ("--ray", "auto"), ("--ray=auto",), ("--help",)]
)
def test_runs_that_do_not_use_the_local_sandbox_launch_nothing(
    work: Path, extra: tuple[str, ...]
) -> None:
    assert EarlySandbox.start(runs(work, *extra)).take() is None


def test_a_rerun_that_may_be_fresh_launches_nothing_unless_overwriting(work: Path) -> None:
    (work / "out" / "agent").mkdir(parents=True)
    assert EarlySandbox.start(runs(work)).take() is None
    early = EarlySandbox.start(runs(work, "--overwrite"))
    try:
        assert early.take() is not None
    finally:
        early.discard()


def test_other_commands_and_missing_judges_launch_nothing(work: Path) -> None:
    assert EarlySandbox.start(["validate", "--judges", str(work / "judges")]).take() is None
    args = runs(work)
    args[args.index("--judges") + 1] = str(work / "no-such-judges")
    assert EarlySandbox.start(args).take() is None


def test_run_adopts_the_early_launch_and_judges_in_it(work: Path) -> None:
    early = EarlySandbox.start(runs(work))
    result = CliRunner().invoke(main, runs(work), obj=early, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert early.take() is None  # taken by `run`, which closed it with its pool
    assert list((work / "out").rglob("*.json"))


def test_a_launch_run_does_not_adopt_is_killed_by_discard(work: Path) -> None:
    early = EarlySandbox.start(runs(work))
    result = CliRunner().invoke(main, [*runs(work), "--no-sandbox"], obj=early)
    assert result.exit_code == 0, result.output
    launch = early.take()
    assert launch is not None  # `run` parsed --no-sandbox: not its launch
    EarlySandbox(launch).discard()
    assert launch.process.poll() is not None


def test_launching_early_loads_no_pydantic_asyncio_or_runner_code() -> None:
    script = (
        "import sys\n"
        "from generator.cli.early_sandbox import launch_now\n"
        "import toolkit.sandbox.launch\n"
        "print(' '.join(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pydantic', 'asyncio', 'jinja2') "
        "or m.startswith(('toolkit.runner', 'toolkit.llm')))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []  # the fork server starts before any of them is imported
