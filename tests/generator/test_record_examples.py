"""The example recorder (`python -m tests.generator.record_examples`) writes what the
repository should hold: each exchange once, as a scripted fixture."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.generator.record_examples import (
    export,
    import_pages,
    record_generation,
    record_run,
    seed_context,
)
from toolkit.llm.records import load_records
from toolkit.llm.replay import replay_key

TASK = "rust_2024_edition"


def test_the_generation_and_the_run_of_an_example_are_exported_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGEGEN_LEDGER_PATH", str(tmp_path / "ledger.jsonl"))
    scratch, cache = tmp_path / "scratch", tmp_path / "cache.sqlite"
    scratch.mkdir()
    seed_context(scratch)
    import_pages(scratch / "pages")
    asyncio.run(record_generation(TASK, cache, scratch))
    record_run(TASK, cache, scratch)
    count = export(TASK, cache, tmp_path / "recordings")
    requests = [replay_key(r.request) for r in load_records(tmp_path / "recordings")]
    assert len(requests) == count
    assert len(set(requests)) == count, "an exchange was exported under two provider names"
