"""Result files: atomic writes, tolerant reads, webeval score files."""

from __future__ import annotations

import json
from pathlib import Path

from toolkit.runner import results as results_module
from toolkit.runner.fingerprint import Fingerprint, make_fingerprint
from toolkit.runner.results import (
    RESULT_VERSION,
    EvaluationResult,
    ResultHead,
    ResultStore,
    UsageTotals,
    write_score_file,
)
from toolkit.util.files import write_atomic


def fingerprint() -> Fingerprint:
    return Fingerprint(
        templates_sha256="sha256:p", toolkit_version="0", backend="b", answer_sha256="sha256:a"
    )


def result(**overrides: object) -> EvaluationResult:
    values: dict[str, object] = {
        "task_id": "t",
        "agent_name": "agent",
        "answer_name": "answer_1",
        "status": "complete",
        "final_score": 0.75,
        "fingerprint": fingerprint(),
    }
    values.update(overrides)
    return EvaluationResult(**values)


def test_result_round_trips_through_the_store(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    path = store.write(result())
    assert path == tmp_path / "agent" / "t" / "answer_1.json"
    assert store.read("agent", "t", "answer_1") == result()
    assert json.loads(path.read_text())["version"] == RESULT_VERSION == 4


def test_a_result_written_before_attempts_were_counted_is_read_as_it_was(tmp_path: Path) -> None:
    """Version 1 results have no `earlier_attempts`, `usage_all_attempts` or
    `usage.unknown_cost_calls`: they read as a first attempt, counted whole."""
    old = result(status="incomplete", final_score=None, usage=UsageTotals(cost_usd=0.5))
    data = json.loads(old.model_dump_json())
    for key in ("earlier_attempts", "usage_all_attempts"):
        del data[key]
    del data["usage"]["unknown_cost_calls"]
    del data["usage"]["answered_by"]
    data["version"] = 1
    path = tmp_path / "agent" / "t" / "answer_1.json"
    write_atomic(path, json.dumps(data, indent=2))
    store = ResultStore(tmp_path)
    for read in (store.read, store.read_incomplete):
        found = read("agent", "t", "answer_1")
        assert found is not None and found.version == 1 and found.earlier_attempts is None
        assert found.usage_all_attempts == found.usage == UsageTotals(cost_usd=0.5)


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.json"
    write_atomic(target, "{}")
    write_atomic(target, '{"x": 1}')
    assert [p.name for p in target.parent.iterdir()] == ["b.json"]
    assert json.loads(target.read_text()) == {"x": 1}


def test_unreadable_result_reads_as_missing(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    path = store.path("agent", "t", "answer_1")
    path.parent.mkdir(parents=True)
    path.write_text('{"task_id": "t", "status": "compl')
    assert store.read("agent", "t", "answer_1") is None
    assert list(store.iter_heads("agent")) == []


def test_stray_temp_files_of_a_killed_run_are_removed(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write(result())
    stray = tmp_path / "agent" / "t" / ".answer_2.json.abc.tmp"
    stray.write_text('{"half')
    assert store.remove_stray_temp_files("agent") == 1
    assert not stray.exists() and store.read("agent", "t", "answer_1") is not None


def test_score_file_holds_score_and_full_result_as_json_text(tmp_path: Path) -> None:
    path = write_score_file(tmp_path, "t", result(), writer=tmp_path / "results")
    assert path == tmp_path / "scores" / "judgegen_t.json"
    data = json.loads(path.read_text())
    assert set(data) == {"score", "gpt_response_text"}
    assert data["score"] == 0.75
    assert json.loads(data["gpt_response_text"])["final_score"] == 0.75


def test_usage_totals_add_field_by_field() -> None:
    total = UsageTotals(backend_calls=2, cost_usd=0.5) + UsageTotals(backend_calls=1, llm_calls=4)
    assert (total.backend_calls, total.llm_calls, total.cost_usd) == (3, 4, 0.5)


def test_usage_totals_add_the_models_that_answered_as_a_union_by_model_asked_for() -> None:
    first = UsageTotals(answered_by={"o4-mini": ["o4-mini-b"], "gpt-4.1": ["gpt-4.1-a"]})
    second = UsageTotals(answered_by={"o4-mini": ["o4-mini-a", "o4-mini-b"]})
    total = first + second
    assert total.answered_by == {"o4-mini": ["o4-mini-a", "o4-mini-b"], "gpt-4.1": ["gpt-4.1-a"]}
    total.note_answered("o4-mini", "o4-mini-c")
    assert first.answered_by["o4-mini"] == ["o4-mini-b"]  # the sum shares no list with them
    assert second.answered_by["o4-mini"] == ["o4-mini-a", "o4-mini-b"]


def test_a_result_written_before_the_answering_models_were_recorded_reads_with_none(
    tmp_path: Path,
) -> None:
    data = json.loads(result().model_dump_json())
    del data["usage"]["answered_by"]
    data["version"] = 2
    path = tmp_path / "agent" / "t" / "answer_1.json"
    write_atomic(path, json.dumps(data, indent=2))
    found = ResultStore(tmp_path).read("agent", "t", "answer_1")
    assert found is not None and found.version == 2 and found.usage.answered_by == {}


def test_fingerprint_names_backend_class_and_model_without_a_spec() -> None:
    class Backend:
        model = "m1"

    fp = make_fingerprint(judge_sha256="sha256:j", answer_sha256="sha256:a", backend=Backend())
    assert fp.backend.endswith("Backend model=m1") and fp.judge_model == "m1"
    assert fp.templates_sha256.startswith("sha256:")


def test_a_run_reports_repr_is_one_line_whatever_it_holds() -> None:
    """asyncio formats the result of a run's main task when `asyncio.run` ends; the report
    must not list every result there."""
    from toolkit.runner.report import RunReport

    heads = [ResultHead.of(result(answer_name=f"answer_{i}")) for i in range(500)]
    report = RunReport(results=heads, reused=500)
    assert (
        repr(report) == "RunReport(500 results, evaluated=0, decided=0, reused=500, stopped=None)"
    )


def test_an_agents_results_come_from_memory_when_known_and_from_disk_otherwise(
    tmp_path: Path, monkeypatch
) -> None:
    store = ResultStore(tmp_path)
    mine, other = result(task_id="t1"), result(task_id="t2")
    store.write(mine)
    store.write(other)
    parsed: list[Path] = []
    real = results_module.read_result
    monkeypatch.setattr(results_module, "read_result", lambda p: parsed.append(p) or real(p))
    known = ResultHead.of(mine)
    found = list(store.iter_heads(mine.agent_name, known=[known]))
    assert [r.task_id for r in found] == ["t1", "t2"]
    assert found[0] is known  # as the run holds it, not parsed again
    assert found[1] == ResultHead.of(other)
    assert parsed == [store.path(other.agent_name, "t2", other.answer_name)]
