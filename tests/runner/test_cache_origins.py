"""A cached answer no model is known to have given is never passed off as a model's: records
written by hand, naming `openai`, imported into a cache and served to a `judgegen run` of
that provider are named as of unknown origin in its `LLM:` line, its run record, its results'
usage and notes and its ledger, and the model they name is not counted as one that answered."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import llm_run, result_files
from toolkit.llm.models import LLMRequest

TASK = "louvre_hours"
CLAIMED = "o4-mini-2025-04-16"


def written_by_hand(exported: Path, into: Path) -> None:
    """Rewrite the records in `exported` as a hand-written file would say them: no origin, the
    request naming `openai` (keyed for it), the answer naming a dated OpenAI snapshot."""
    into.mkdir()
    for path in sorted(exported.glob("*.json")):
        record: dict[str, Any] = json.loads(path.read_text())
        record.pop("origin", None)
        record["request"]["provider"] = "openai"
        record["key"] = LLMRequest.model_validate(record["request"]).cache_key()
        record["response"]["model"] = CLAIMED
        (into / path.name).write_text(json.dumps(record, indent=2))


def invoke(args: list[str], env: Mapping[str, str | None]) -> Any:
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def served_from_hand_written_records(work: Path) -> Any:
    """Record the task's exchanges with the scripted policy, rewrite them by hand, import
    them into a fresh cache and run the task against `openai` from it (strict: any call to
    the API would fail the run); the run's `CliRunner` result."""
    args, env = llm_run(work, "--task", TASK)
    invoke(args, env)
    invoke(
        ["cache", "export", str(work / "exported"), "--cache-path", env["JUDGEGEN_CACHE_PATH"]], env
    )
    written_by_hand(work / "exported", work / "hand")
    served = work / "served.sqlite"
    invoke(["cache", "import", str(work / "hand"), "--cache-path", str(served)], env)
    args, env = llm_run(
        work, "--task", TASK, "--overwrite", "--cache-mode", "strict", provider="openai"
    )
    served_env = {
        **env,
        "JUDGEGEN_CACHE_PATH": str(served),
        "JUDGEGEN_LEDGER_PATH": str(work / "served-ledger.jsonl"),
        "OPENAI_BASE_URL": None,  # the provider is `openai`, the official API's name
        "JUDGEGEN_LLM_BASE_URL": None,
    }
    return invoke(args, served_env)


def test_the_llm_line_names_the_answers_of_unknown_origin(work: Path) -> None:
    run = served_from_hand_written_records(work)
    line = next(t for t in run.stderr.splitlines() if t.startswith("LLM: "))
    calls = int(line.split()[1])
    assert calls and line.startswith(f"LLM: {calls} calls, {calls} cached, ")
    assert f"; of the cached answers, {calls} of unknown origin (" in line
    assert "no model is known to have given them" in line


def test_the_run_record_counts_them_by_origin_and_not_as_answered_by_a_model(
    work: Path,
) -> None:
    run = served_from_hand_written_records(work)
    record = json.loads(run.stdout)
    calls = record["llm"]["calls"]
    assert calls and record["llm"]["cached_by_origin"] == {"unknown": calls}
    assert record["usage"]["cache_hits_by_origin"] == {"unknown": calls}
    assert record["usage"]["answered_by"] == {}
    assert CLAIMED not in json.dumps(record["summaries"])


def test_each_result_says_its_answers_are_of_unknown_origin(work: Path) -> None:
    served_from_hand_written_records(work)
    results = [r for name, r in result_files(work / "results").items() if f"/{TASK}/" in name]
    assert results and all(r["usage"]["llm_calls"] for r in results)
    for result in results:
        usage = result["usage"]
        assert usage["cache_hits_by_origin"] == {"unknown": usage["llm_calls"]}
        assert usage["answered_by"] == {}
        assert any(" of unknown origin (" in note for note in result["notes"])


def test_each_ledger_row_names_the_origin_and_no_model(work: Path) -> None:
    served_from_hand_written_records(work)
    lines = (work / "served-ledger.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows and all(row["cache_hit"] and row["origin"] == "unknown" for row in rows)
    assert all(row["answered_by"] is None and row["imported_from"] for row in rows)
