"""Every cache entry says where its answer came from: recorded live, recorded from a fixture,
imported (from which file, and what the record said), or stored before origins were kept; a
hit of an answer no model is known to have given is never counted as a model's."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from generator.cli import main
from tests.llm.conftest import verify_request
from tests.llm.policies import verdict
from tests.llm.stub_api import OPENAI_PATH, Reply, StubAPI, openai_completion
from toolkit.llm.cache import FORMAT_VERSION, ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMResponse
from toolkit.llm.openai_provider import OpenAIProvider
from toolkit.llm.records import CacheRecord, record_json
from toolkit.llm.scripted import ScriptedProvider

GOOD = '{"reasoning": "It is.", "result": true}'
SNAPSHOT = "o4-mini-2025-04-16"


def openai_client(stub: StubAPI, path: Path, mode: CacheMode = CacheMode.RW) -> LLMClient:
    """The real OpenAI SDK against the loopback stub (a live provider), behind the cache."""
    provider = OpenAIProvider(base_url=stub.url("/v1"), max_retries=0, timeout_s=5.0)
    return LLMClient(provider, cache=ResponseCache(path), cache_mode=mode)


async def test_a_live_answer_exported_and_imported_keeps_its_live_origin(
    stub: StubAPI, tmp_path: Path
) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model=SNAPSHOT)))
    async with openai_client(stub, tmp_path / "a.sqlite") as client:
        await client.complete(verify_request())
    ResponseCache(tmp_path / "a.sqlite").export_dir(tmp_path / "out")
    (file,) = (tmp_path / "out").iterdir()
    assert json.loads(file.read_text())["origin"]["source"] == "live"
    report = ResponseCache(tmp_path / "b.sqlite").import_dir(tmp_path / "out")
    assert report.unknown_origin == 0
    async with openai_client(stub, tmp_path / "b.sqlite", CacheMode.STRICT) as served:
        hit = await served.complete(verify_request())
        (row,) = served.ledger.rows
        line = served.summary_line()
    assert hit.cache_hit and hit.origin is not None
    assert (hit.origin.source, hit.origin.imported_from) == ("live", str(file.resolve()))
    assert hit.origin.provider == served.provider.name
    assert (row.origin, row.imported_from, row.answered_by) == (
        "live",
        str(file.resolve()),
        SNAPSHOT,
    )
    assert "cached answers" not in line
    assert len(stub.calls(OPENAI_PATH)) == 1


async def test_a_record_that_does_not_say_its_origin_is_imported_and_served_as_unknown(
    tmp_path: Path,
) -> None:
    request = verify_request().model_copy(update={"provider": "scripted"})
    written = LLMResponse(text=GOOD, parsed=json.loads(GOOD), model=SNAPSHOT)
    record = json.loads(record_json(CacheRecord.of(request, written)))
    record.pop("origin", None)  # as a hand-written file, or one exported before origins, has none
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "hand-written.json").write_text(json.dumps(record))
    imported = CliRunner().invoke(
        main, ["cache", "import", str(tmp_path / "in"), "--cache-path", str(tmp_path / "c.sqlite")]
    )
    assert imported.exit_code == 0, imported.output
    assert "1 stored of unknown origin" in imported.stderr
    provider = ScriptedProvider(verdict)
    client = LLMClient(
        provider, cache=ResponseCache(tmp_path / "c.sqlite"), cache_mode=CacheMode.RW
    )
    hit = await client.complete(request)
    (row,) = client.ledger.rows
    assert hit.cache_hit and provider.calls == []
    assert (row.origin, row.answered_by) == ("unknown", None)  # no provider named a model
    assert client.summary().cached_by_origin == {"unknown": 1}
    assert "; of the cached answers, 1 of unknown origin (" in client.summary_line()


async def test_a_scripted_answer_is_stored_and_served_as_a_fixture(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(ScriptedProvider(verdict), cache=cache, cache_mode=CacheMode.RW)
    await client.complete(verify_request())
    hit = await client.complete(verify_request())
    assert hit.origin is not None and hit.origin.source == "scripted"
    assert cache.stats().by_origin == {"scripted": 1}
    assert "1 recorded from a scripted policy (fixtures: no model called)" in client.summary_line()


def as_format_3(path: Path) -> None:
    """Turn the cache at `path` into the format before origins were kept, as it was written."""
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE entries DROP COLUMN origin")
        db.execute("PRAGMA user_version = 3")


async def test_entries_of_a_cache_from_before_origins_are_served_as_stored_before_them(
    stub: StubAPI, tmp_path: Path
) -> None:
    stub.queue(OPENAI_PATH, Reply(body=openai_completion(GOOD, model=SNAPSHOT)))
    async with openai_client(stub, tmp_path / "c.sqlite") as client:
        await client.complete(verify_request())
    as_format_3(tmp_path / "c.sqlite")
    async with openai_client(stub, tmp_path / "c.sqlite", CacheMode.STRICT) as served:
        hit = await served.complete(verify_request())
        (row,) = served.ledger.rows
        line = served.summary_line()
    assert hit.cache_hit and hit.parsed == json.loads(GOOD)
    assert (row.origin, row.answered_by) == ("before_origins", SNAPSHOT)
    assert "1 stored before the cache kept origins" in line
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.stats().by_origin == {"before_origins": 1}
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == FORMAT_VERSION == 4
