"""A page store that cannot be read stops a run loudly (exit 3, the file and the fix named),
instead of failing every evaluation that cites a page, one by one, with a bare SQLite message,
after paying for its calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import run_args
from tests.fixtures.sqlite_faults import damage


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandbox"])
def test_a_damaged_page_store_stops_the_run_naming_the_file_and_the_fix(
    work: Path, sandbox: bool
) -> None:
    damage(work / "pages" / "pages.sqlite")
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(work, "--include-unreviewed", "--json", "--jobs", "1", *mode)
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 3, done.stderr
    record = json.loads(done.stdout)
    assert record["not_started"] > 0  # the first evaluation to read a page stopped it
    assert "page store" in record["stopped"] and "pages.sqlite" in record["stopped"]
    assert "judgegen cache-pages" in record["stopped"]
    assert "malformed" in record["stopped"]
