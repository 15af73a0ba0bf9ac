"""Record files (`cache export`) are read only as written: an answer never reaches a request
it was not recorded for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import verify_request
from toolkit.errors import SpecError
from toolkit.llm.cache import ResponseCache
from toolkit.llm.models import LLMRequest, LLMResponse, Message, SystemBlock
from toolkit.llm.records import CacheRecord, load_records, record_json

SUPPORTED = LLMResponse(
    text='{"reasoning": "r", "result": true}',
    parsed={"reasoning": "r", "result": True},
    model="o4-mini",
    stop_reason="end_turn",
)
UNSUPPORTED = LLMResponse(
    text='{"reasoning": "r", "result": false}',
    parsed={"reasoning": "r", "result": False},
    model="o4-mini",
    stop_reason="end_turn",
)


def recording(directory: Path, name: str, record: CacheRecord) -> dict[str, Any]:
    """Write `record` as `directory/name` and return its file data, to edit and write back."""
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(record_json(record), encoding="utf-8")
    return json.loads(record_json(record))


def rewrite(directory: Path, name: str, data: dict[str, Any]) -> None:
    (directory / name).write_text(json.dumps(data), encoding="utf-8")


def refusal(directory: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_records(directory)
    return caught.value


def test_a_misspelt_field_is_refused_not_read_as_its_default(tmp_path: Path) -> None:
    data = recording(tmp_path, "a.json", CacheRecord.of(verify_request(index=1), UNSUPPORTED))
    data["request"]["sample_idx"] = data["request"].pop("sample_index")
    rewrite(tmp_path, "a.json", data)
    error = refusal(tmp_path)
    assert error.file == str(tmp_path / "a.json") and "sample_idx" in error.problem


def test_a_request_changed_after_its_answer_was_recorded_is_refused(tmp_path: Path) -> None:
    data = recording(tmp_path, "a.json", CacheRecord.of(verify_request("Paris"), SUPPORTED))
    content = data["request"]["messages"][0]["content"][0]
    content["text"] = content["text"].replace("Paris", "Lyon")
    rewrite(tmp_path, "a.json", data)
    error = refusal(tmp_path)
    assert error.field == "key" and "does not hash to its key" in error.problem


def test_a_record_keyed_by_an_older_key_version_is_keyed_again(tmp_path: Path) -> None:
    request = verify_request()
    data = recording(tmp_path, "a.json", CacheRecord.of(request, SUPPORTED))
    data["key"] = "sha256-v1:" + "0" * 64
    rewrite(tmp_path, "a.json", data)
    (record,) = load_records(tmp_path)
    assert record.key == request.cache_key()


@pytest.mark.parametrize(
    "path", [("version",), ("request", "version"), ("response", "version"), ("key",)]
)
def test_a_record_written_by_a_newer_judgegen_is_refused(
    tmp_path: Path, path: tuple[str, ...]
) -> None:
    data = recording(tmp_path, "a.json", CacheRecord.of(verify_request(), SUPPORTED))
    *parents, field = path
    holder = data
    for parent in parents:
        holder = holder[parent]
    holder[field] = "sha256-v9:" + "0" * 64 if field == "key" else 9
    rewrite(tmp_path, "a.json", data)
    error = refusal(tmp_path)
    assert error.field == ".".join(path) and "upgrade judgegen" in error.fix


def test_two_files_answering_one_request_differently_are_refused_naming_both(
    tmp_path: Path,
) -> None:
    recording(tmp_path, "a.json", CacheRecord.of(verify_request(), SUPPORTED))
    recording(tmp_path, "b.json", CacheRecord.of(verify_request(), UNSUPPORTED))
    error = refusal(tmp_path)
    assert error.file == str(tmp_path / "b.json") and str(tmp_path / "a.json") in error.problem


def test_two_files_answering_one_request_alike_both_load(tmp_path: Path) -> None:
    recording(tmp_path, "a.json", CacheRecord.of(verify_request(), SUPPORTED))
    recording(tmp_path, "b.json", CacheRecord.of(verify_request(), SUPPORTED))
    assert len(load_records(tmp_path)) == 2


def test_export_then_import_gives_back_every_request_and_answer_exactly(tmp_path: Path) -> None:
    page, shot = "Crème brûlée ✓ 東京\u2028" * 400, "iVBORw0KGgo" * 800  # both stored as blobs
    request = LLMRequest(
        model="o4-mini",
        provider="openai",
        system=(SystemBlock(text=page, cache=True),),
        messages=(Message.user(f"Claim: ü\n{page}", [shot, "small"]),),
        output_schema={"type": "object"},
        sample_index=2,
    )
    answered = SUPPORTED.model_copy(update={"model": "o4-mini-2025-04-16", "text": "ü ✓"})
    source = ResponseCache(tmp_path / "a.sqlite")
    source.put(CacheRecord.of(request, answered), checked=True)
    source.export_dir(tmp_path / "out")
    target = ResponseCache(tmp_path / "b.sqlite")
    assert target.import_dir(tmp_path / "out").added == 1
    exchanges = [[(r.key, r.request, r.response) for r in c.records()] for c in (source, target)]
    assert exchanges[0] == exchanges[1]
    assert target.lookup(request.cache_key())[:2] == (answered, False)  # checked when served


def test_every_committed_recording_reads_strictly() -> None:
    root = Path(__file__).resolve().parents[2] / "recordings"
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    assert folders and all(load_records(folder) for folder in folders)
