"""Cache format 2: large parts stored once by digest, old files migrated, damage handled."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.llm.conftest import VERDICT_SCHEMA, verify_request
from tests.llm.policies import verdict
from toolkit.errors import CacheError
from toolkit.llm.cache import FORMAT_VERSION, CacheRecord, ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient
from toolkit.llm.models import (
    KEY_VERSION,
    LLMRequest,
    LLMResponse,
    Message,
    RequestMeta,
    SystemBlock,
    TextPart,
)
from toolkit.llm.scripted import ScriptedProvider

PAGE = "river facts " * 25_000  # 300 KB of page text
SCREENSHOT = "iVBORw0KGgo" * 20_000  # 220 KB of base64


def page_request(claim: str = "The Nile is long.", index: int = 0) -> LLMRequest:
    return LLMRequest(
        model="o4-mini",
        provider="scripted",
        system=[SystemBlock(text="You verify claims.", cache=True)],
        messages=[Message.user(f"Claim: {claim}\nPage:\n{PAGE}", [SCREENSHOT])],
        output_schema=VERDICT_SCHEMA,
        schema_name="VerificationResult",
        sample_index=index,
        metadata=RequestMeta(purpose="verify"),
    )


def client_on(path: Path, policy=verdict) -> tuple[LLMClient, ScriptedProvider]:
    provider = ScriptedProvider(policy)
    return LLMClient(provider, cache=ResponseCache(path), cache_mode=CacheMode.RW), provider


def table_bytes(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchone()[0] or 0


async def test_a_page_and_screenshot_are_stored_once_across_three_trials(tmp_path: Path) -> None:
    client, _ = client_on(tmp_path / "c.sqlite")
    base = page_request()
    for index in range(3):
        await client.complete(base.with_sample(index))
    await client.aclose()
    path = tmp_path / "c.sqlite"
    assert ResponseCache(path).stats().blobs == 1 + 1
    blob_bytes = table_bytes(path, "SELECT SUM(LENGTH(data)) FROM blobs")
    row_bytes = table_bytes(path, "SELECT SUM(LENGTH(request) + LENGTH(response)) FROM entries")
    assert blob_bytes < len(PAGE) + len(SCREENSHOT) + 100
    assert row_bytes < 3 * 2_000


async def test_records_read_back_whole_with_their_blobs(tmp_path: Path) -> None:
    client, _ = client_on(tmp_path / "c.sqlite")
    await client.complete(page_request())
    [record] = ResponseCache(tmp_path / "c.sqlite").records()
    assert record.request.messages[0].content[1].data == SCREENSHOT
    assert record.key == page_request().cache_key()


def test_trials_derive_their_keys_from_one_hash_of_the_request() -> None:
    base = page_request()
    trials = [base.with_sample(index) for index in range(3)]
    assert len({trial.cache_key() for trial in trials}) == 3
    assert {trial._base_digest for trial in trials} == {base.base_digest()}
    assert trials[1].cache_key() == page_request(index=1).cache_key()


def test_the_stored_request_text_is_the_compact_json_of_its_storage_form() -> None:
    base = page_request()
    base.base_digest()
    for request in (base, base.with_sample(2), base.model_copy(update={"provider": "other"})):
        data, blobs = request.storage_form()
        text, text_blobs = request.storage_json()
        assert text == json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        assert text_blobs == blobs


def test_a_copy_that_changes_the_prompt_is_hashed_again() -> None:
    base = page_request()
    base.base_digest()
    changed = base.model_copy(update={"max_tokens": 7})
    assert changed.cache_key() != base.cache_key()


@pytest.mark.parametrize(
    "change",
    [
        lambda r: setattr(r, "model", "another-model"),
        lambda r: setattr(r, "output_schema", None),
        lambda r: setattr(r.system[0], "text", "other rules"),
        lambda r: setattr(r.messages[0], "role", "assistant"),
    ],
    ids=["model", "schema", "system block", "message"],
)
def test_a_hashed_request_cannot_be_changed_in_place_under_its_old_key(change) -> None:
    request = page_request()
    key = request.cache_key()  # memoized from here on: an assignment would keep it stale
    with pytest.raises(ValidationError, match="frozen"):
        change(request)
    assert request.cache_key() == key == page_request().cache_key()


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.messages.append(Message.user("a follow-up question")),
        lambda r: r.system.append(SystemBlock(text="more rules")),
        lambda r: r.messages[0].content.append(TextPart(text="more text")),
    ],
    ids=["messages", "system blocks", "message parts"],
)
def test_a_hashed_request_cannot_grow_in_place_under_its_old_key(change) -> None:
    """Appending a turn and asking again must not reuse the first conversation's key (and its
    cached answer): the sequences are tuples, so the append fails loudly."""
    request = page_request()
    key = request.cache_key()
    with pytest.raises(AttributeError):
        change(request)
    assert request.cache_key() == key == page_request().cache_key()


def test_a_copy_given_a_list_of_messages_keeps_a_tuple_and_a_new_key() -> None:
    request = page_request()
    longer = request.model_copy(update={"messages": [*request.messages, Message.user("more")]})
    assert isinstance(longer.messages, tuple)
    assert longer.cache_key() != request.cache_key()


def test_a_message_copy_given_a_list_of_parts_keeps_a_tuple() -> None:
    message = Message.user("first").model_copy(update={"content": [TextPart(text="other")]})
    assert message.content == (TextPart(text="other"),)


def pinned_request(index: int) -> LLMRequest:
    """A request whose keys are written down below; built from literals only (no schema a
    library generates), so only judgegen's own key derivation can change them."""
    return LLMRequest(
        model="o4-mini",
        provider="anthropic",
        system=[SystemBlock(text="You verify claims.", cache=True)],
        messages=[
            Message.user(
                "Claim: the page says so.\nPage:\n" + "text " * 2000, ["iVBORw0KGgo" * 500]
            )
        ],
        output_schema={
            "type": "object",
            "properties": {"result": {"type": "boolean"}},
            "required": ["result"],
        },
        schema_name="VerificationResult",
        max_tokens=512,
        sample_index=index,
        metadata=RequestMeta(purpose="verify", task_id="t"),
    )


def test_cache_keys_change_only_with_the_key_version() -> None:
    """Every cached answer and recording is found by these keys. If this fails, the key
    derivation changed: bump KEY_VERSION (old entries are then plainly misses, never served
    under a key they were not stored for), then write the new keys here. It was once changed
    without a bump (the base digest gained its "sha256:" prefix), silently splitting caches."""
    assert KEY_VERSION == 2
    assert pinned_request(0).cache_key() == (
        "sha256-v2:9c3719e43a88d34d89e3e913bdcf121afb900fc7aaeee8dd06360cabe601dd31"
    )
    assert pinned_request(1).cache_key() == (
        "sha256-v2:0bc5a19b90b6a1badc81bf559fed01b6c7b62253a9feeff31c39f0742ee8a399"
    )


def write_v1_cache(path: Path, request: LLMRequest, response: LLMResponse) -> None:
    """A cache file exactly as format 1 wrote it: whole requests in one `responses` table."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT "
            "NOT NULL, purpose TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL, "
            "created REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                "sha256-v1:" + "0" * 64,
                request.provider,
                request.model,
                "verify",
                request.model_dump_json(),
                response.model_dump_json(),
                1.0,
            ),
        )
        db.execute(
            "INSERT INTO responses VALUES ('sha256-v1:bad', 'p', 'm', 'verify', '{oops', '{}', 1)"
        )


async def test_a_format_1_cache_is_migrated_and_still_serves_its_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.sqlite"
    answer = {"reasoning": "recorded", "result": True}
    write_v1_cache(path, page_request(), LLMResponse(text=json.dumps(answer), parsed=answer))
    with caplog.at_level(logging.WARNING, "judgegen.llm.cache"):
        client, provider = client_on(path)
        response = await client.complete(page_request())
    assert response.cache_hit and response.parsed == answer
    assert provider.calls == []
    assert table_bytes(path, "PRAGMA user_version") == FORMAT_VERSION
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert str(path) in caplog.records[0].getMessage()


def test_a_format_2_cache_gains_the_checked_column_and_keeps_its_entries(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE entries (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT "
            "NOT NULL, purpose TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL, "
            "created REAL NOT NULL)"
        )
        db.execute("CREATE TABLE blobs (digest TEXT PRIMARY KEY, data TEXT NOT NULL)")
        db.execute("INSERT INTO entries VALUES ('k', 'p', 'm', 'verify', '{}', '{}', 1)")
        db.execute("PRAGMA user_version = 2")
    cache = ResponseCache(path)
    assert cache.lookup("k")[:2] == (LLMResponse(), False)
    assert table_bytes(path, "PRAGMA user_version") == FORMAT_VERSION


async def test_stored_answers_are_checked_once_and_hits_skip_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.llm import cached_provider as cache_module

    path = tmp_path / "c.sqlite"
    request = verify_request().model_copy(update={"provider": "scripted"})
    answer = {"reasoning": "stored", "result": True}
    ResponseCache(path).put(CacheRecord.of(request, LLMResponse(parsed=answer)))
    checks: list[str] = []
    real = cache_module.answer_problems

    def counting(*args):
        checks.append("check")
        return real(*args)

    monkeypatch.setattr(cache_module, "answer_problems", counting)
    client, provider = client_on(path)
    for _ in range(3):
        assert (await client.complete(request)).parsed == answer
    assert checks == ["check"] and provider.calls == []


def test_a_cache_from_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {FORMAT_VERSION + 1}")
    with pytest.raises(CacheError, match="upgrade judgegen"):
        ResponseCache(path)


def test_a_file_that_is_not_sqlite_is_a_cache_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_text("these are not the bytes of a database\n" * 100)
    with pytest.raises(CacheError, match=str(path)):
        ResponseCache(path)


async def test_a_truncated_cache_file_is_a_cache_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    client, _ = client_on(path)
    await client.complete(page_request())
    await client.aclose()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CacheError, match="truncated"):
        ResponseCache(path)


async def test_garbled_rows_are_misses_replaced_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite"
    writer, _ = client_on(path)
    for text in ("a", "b"):
        await writer.complete(verify_request(text))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE entries SET response = '{garbled'")
    with caplog.at_level(logging.WARNING, "judgegen.llm.cache"):
        reader, provider = client_on(path)
        for text in ("a", "b", "a"):
            response = await reader.complete(verify_request(text))
            assert response.parsed == verdict(verify_request(text))
    assert len(provider.calls) == 2
    assert len(caplog.records) == 1 and str(path) in caplog.records[0].getMessage()


async def test_a_stored_answer_that_breaks_its_schema_is_not_served(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    bad = LLMResponse(text='{"unexpected": 1}', parsed={"unexpected": 1}, stop_reason="end_turn")
    request = verify_request().model_copy(update={"provider": "scripted"})
    cache.put(CacheRecord.of(request, bad))
    client, provider = client_on(path)
    response = await client.complete(request)
    assert not response.cache_hit and len(provider.calls) == 1
    assert ResponseCache(path).get_response(request.cache_key()).parsed == response.parsed


async def test_invalid_model_output_is_re_asked_then_an_error_and_never_cached(
    tmp_path: Path,
) -> None:
    from toolkit.errors import LLMError

    client, provider = client_on(tmp_path / "c.sqlite", lambda request: {"unexpected": 1})
    with pytest.raises(LLMError) as caught:
        await client.complete(verify_request())
    assert caught.value.kind == "invalid_output"
    assert len(provider.calls) == 3
    assert "'unexpected' was unexpected" in provider.calls[1].prompt_text()
    assert ResponseCache(tmp_path / "c.sqlite").stats().entries == 0
