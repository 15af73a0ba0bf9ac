"""`judgegen cache` and the shared `llm_options` decorator."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click
from click.testing import CliRunner

from generator.cli import main
from generator.cli.llm_options import llm_options
from tests.fixtures.cli_flags import flags_named, flags_of
from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from toolkit.llm.cache import CacheRecord, ResponseCache, record_json
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMResponse
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import LLMSettings


async def filled_cache(path: Path, count: int = 3) -> None:
    client = LLMClient(
        ScriptedProvider(verdict), cache=ResponseCache(path), cache_mode=CacheMode.RW
    )
    for index in range(count):
        await client.complete(verify_request(f"claim {index}"))


async def test_stats_prints_counts_as_json(tmp_path: Path) -> None:
    await filled_cache(tmp_path / "c.sqlite")
    result = CliRunner().invoke(
        main, ["cache", "stats", "--json", "--cache-path", str(tmp_path / "c.sqlite")]
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["entries"] == 3 and figures["by_purpose"] == {"verify": 3}


def test_stats_counts_the_entries_never_served_apart(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    answers = [
        LLMResponse(text="The answer is", stop_reason="end_turn"),
        LLMResponse(parsed=False, stop_reason="end_turn"),  # parsed, no text: served
        LLMResponse(text="The answer is", stop_reason="max_tokens"),
        LLMResponse(text="The answer is", stop_reason="refusal"),
        LLMResponse(text=" \n\t", stop_reason="end_turn"),
    ]
    for index, response in enumerate(answers):
        request = verify_request(f"claim {index}").model_copy(update={"output_schema": None})
        cache.put(CacheRecord.of(request, response))
    cache.put(CacheRecord.of(verify_request("garbled"), LLMResponse(text="x")))
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("UPDATE entries SET response = '{oops' WHERE request LIKE '%garbled%'")
    args = ["cache", "stats", "--cache-path", str(tmp_path / "c.sqlite")]
    assert json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)["never_served"] == 4
    text = CliRunner().invoke(main, args).stdout
    assert "6 entries (4 never served: truncated, refused, empty or unreadable)" in text


async def test_export_import_round_trip(tmp_path: Path) -> None:
    await filled_cache(tmp_path / "a.sqlite")
    runner = CliRunner()
    exported = runner.invoke(
        main, ["cache", "export", str(tmp_path / "out"), "--cache-path", str(tmp_path / "a.sqlite")]
    )
    imported = runner.invoke(
        main, ["cache", "import", str(tmp_path / "out"), "--cache-path", str(tmp_path / "b.sqlite")]
    )
    assert (exported.exit_code, imported.exit_code) == (0, 0)
    assert len(list((tmp_path / "out").glob("*.json"))) == 3
    assert ResponseCache(tmp_path / "b.sqlite").stats().entries == 3
    assert "imported 3 records" in imported.stderr


def test_export_says_it_skipped_an_unreadable_entry_and_exits_1(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    for claim in ("kept", "garbled"):
        cache.put(CacheRecord.of(verify_request(claim), LLMResponse(text="x")))
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("UPDATE entries SET response = '{oops' WHERE request LIKE '%garbled%'")
    args = ["cache", "export", str(tmp_path / "out"), "--cache-path", str(tmp_path / "c.sqlite")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert len(list((tmp_path / "out").glob("*.json"))) == 1
    assert "error: 1 cache entry could not be read and was not exported" in result.stderr


async def test_clear_empties_the_cache(tmp_path: Path) -> None:
    await filled_cache(tmp_path / "c.sqlite")
    result = CliRunner().invoke(
        main, ["cache", "clear", "--yes", "--cache-path", str(tmp_path / "c.sqlite")]
    )
    assert result.exit_code == 0
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0


def test_stats_on_a_missing_cache_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["cache", "stats", "--cache-path", str(tmp_path / "none.sqlite")]
    )
    assert result.exit_code == 2


def test_a_damaged_cache_stops_cache_stats_with_a_fix_naming_only_its_flags(
    tmp_path: Path,
) -> None:
    (tmp_path / "c.sqlite").write_text("not a database, though named like one " * 4)
    result = CliRunner().invoke(
        main, ["cache", "stats", "--cache-path", str(tmp_path / "c.sqlite")]
    )
    assert result.exit_code == 3
    assert "is unusable: it is not an SQLite database. Fix: move it aside" in result.stderr
    assert flags_named(result.stderr) <= flags_of("cache", "stats")


def test_import_of_a_malformed_record_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.json").write_text("{}")
    result = CliRunner().invoke(
        main, ["cache", "import", str(tmp_path / "in"), "--cache-path", str(tmp_path / "c.sqlite")]
    )
    assert result.exit_code == 2
    assert "bad.json" in result.output


async def test_import_over_a_different_cached_answer_exits_2_until_replace(tmp_path: Path) -> None:
    await filled_cache(tmp_path / "c.sqlite", count=1)
    (record,) = ResponseCache(tmp_path / "c.sqlite").records()
    parsed = {"reasoning": "edited", "result": not record.response.parsed["result"]}
    edited = record.model_copy(
        update={"response": record.response.model_copy(update={"parsed": parsed})}
    )
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / record.file_name()).write_text(record_json(edited))
    args = ["cache", "import", str(tmp_path / "in"), "--cache-path", str(tmp_path / "c.sqlite")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and record.file_name() in refused.output
    replaced = CliRunner().invoke(main, [*args, "--replace"])
    assert replaced.exit_code == 0
    assert "imported 1 records: 0 new, 1 replaced, 0 already in the cache" in replaced.stderr
    assert ResponseCache(tmp_path / "c.sqlite").get_response(record.key).parsed == parsed


def _probe() -> click.Command:
    @click.command()
    @llm_options
    def probe(llm_settings: LLMSettings) -> None:
        click.echo(llm_settings.model_dump_json())

    return probe


def test_llm_options_merge_flags_over_environment() -> None:
    result = CliRunner().invoke(
        _probe(),
        ["--model", "gpt-4.1", "--budget", "2.5", "--cache-mode", "ro"],
        env={"JUDGEGEN_CONCURRENCY": "4", "JUDGEGEN_CACHE_MODE": "strict"},
    )
    settings = LLMSettings.model_validate_json(result.stdout)
    assert (settings.model, settings.budget_usd, settings.concurrency) == ("gpt-4.1", 2.5, 4)
    assert settings.cache_mode is CacheMode.RO


def test_llm_options_reject_an_invalid_environment_value() -> None:
    result = CliRunner().invoke(_probe(), [], env={"JUDGEGEN_CONCURRENCY": "zero"})
    assert result.exit_code == 2
