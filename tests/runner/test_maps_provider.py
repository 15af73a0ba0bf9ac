"""Maps-using judges run offline against a pluggable provider (`judgegen run --maps`), and
Mind2Web 2 judges' `evaluator.verifier.logger` error paths reach the result."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import copy_fixtures, options, stored
from tests.fixtures.runner.scripted import make_backend
from toolkit.errors import InfraError, SpecError
from toolkit.runner.inputs import discover_answers
from toolkit.runner.report import RunReport
from toolkit.runner.scheduler import run_evaluations
from toolkit.tools.scripted_maps import ScriptedMapsProvider

REPO = Path(__file__).resolve().parents[2]
JUDGE = REPO / "tests" / "fixtures" / "runner" / "maps_judges" / "powells_distance.py"
POWELLS = "1005 W Burnside St, Portland, OR"
SQUARE = "701 SW 6th Ave, Portland, OR"
SCRIPT = {
    "version": 1,
    "geocode": {},
    "directions": [
        {
            "origin": POWELLS,
            "destination": SQUARE,
            "mode": "walking",
            "routes": [{"legs": [{"distance": {"value": 900}, "duration": {"value": 660}}]}],
        }
    ],
}
PROVIDER_MODULE = """
from toolkit.tools.scripted_maps import ScriptedMapsProvider

def provider():
    return ScriptedMapsProvider.from_file("maps.json")

def not_a_provider():
    return {"maps": "no"}
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "judges").mkdir()
    shutil.copy(JUDGE, tmp_path / "judges" / JUDGE.name)
    answers = tmp_path / "answers" / "agent" / "powells_distance"
    answers.mkdir(parents=True)
    (answers / "answer_1.md").write_text(f"{POWELLS}\nPowell's City of Books.\n")
    (tmp_path / "reviews").mkdir()
    (tmp_path / "maps.json").write_text(json.dumps(SCRIPT))
    (tmp_path / "offline_maps.py").write_text(PROVIDER_MODULE)
    return tmp_path


def run(work: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """`judgegen run` as a real process in `work` (so `--maps offline_maps:…` imports from it)."""
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            "from generator.cli import main; main()",
            "run",
            "--answers",
            "answers",
            "--backend",
            "tests.fixtures.runner.maps_judges.support:backend",
            "--judges",
            "judges",
            "--include-unreviewed",
            *extra,
        ],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    result = work / "results" / "agent" / "powells_distance" / "answer_1.json"
    return process, json.loads(result.read_text()) if result.exists() else {}


def test_a_maps_judge_runs_sandboxed_against_a_scripted_provider(work: Path) -> None:
    process, result = run(work, "--maps", "offline_maps:provider")
    assert process.returncode == 0, process.stderr
    assert (result["status"], result["final_score"]) == ("complete", 1.0)


def test_without_a_maps_provider_the_judge_logs_and_the_result_is_incomplete(work: Path) -> None:
    process, result = run(work, "--maps", "none")
    assert process.returncode == 1
    assert result["status"] == "incomplete"
    info = result["eval_breakdown"][0]["info"]
    logged = [entry["judge_log"] for entry in info if "judge_log" in entry]
    assert logged and logged[0]["level"] == "ERROR"
    assert logged[0]["message"].startswith(f"distance lookup failed for {POWELLS}")
    assert any(error.get("kind") == "tool" for error in result["errors"])


@pytest.mark.parametrize(
    ("factory", "problem"),
    [("not_a_provider", "has no geocode/directions"), ("ScriptedMapsProvider", "() failed")],
)
def test_a_maps_factory_that_gives_no_provider_is_a_usage_error(
    work: Path, factory: str, problem: str
) -> None:
    process, _ = run(work, "--maps", f"offline_maps:{factory}")
    assert process.returncode == 2
    assert "--maps" in process.stderr and problem in process.stderr


async def test_a_trip_missing_from_the_script_is_an_infrastructure_error(work: Path) -> None:
    provider = ScriptedMapsProvider.from_file(work / "maps.json")
    assert await provider.directions(POWELLS, SQUARE, "walking")
    with pytest.raises(InfraError, match="no driving directions"):
        await provider.directions(POWELLS, SQUARE, "driving")
    with pytest.raises(InfraError, match="no geocode answer"):
        await provider.geocode(POWELLS)


def test_a_malformed_script_names_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "maps.json"
    bad.write_text(json.dumps({"directions": [{"origin": "a"}]}))
    with pytest.raises(SpecError) as info:
        ScriptedMapsProvider.from_file(bad)
    assert str(bad) in str(info.value) and "directions.0.destination" in str(info.value)


def write_far_script(work: Path) -> None:
    """`far.json`: the script of a provider giving the walk ten times the distance."""
    far = {**SCRIPT, "directions": [{**SCRIPT["directions"][0]}]}
    far["directions"][0]["routes"] = [
        {"legs": [{"distance": {"value": 9000}, "duration": {"value": 6600}}]}
    ]
    (work / "far.json").write_text(json.dumps(far))


def test_a_result_that_called_a_tool_is_redone_when_the_maps_provider_changes(
    work: Path,
) -> None:
    write_far_script(work)
    with (work / "offline_maps.py").open("a") as module:
        module.write('\ndef far():\n    return ScriptedMapsProvider.from_file("far.json")\n')
    _, first = run(work, "--maps", "offline_maps:provider")
    assert first["fingerprint"]["tools"].startswith("offline_maps:provider code=")
    process, second = run(work, "--maps", "offline_maps:far", "--json")
    assert json.loads(process.stdout)["evaluated"] == 1
    assert (second["status"], second["final_score"]) == ("complete", 0.0)
    assert second["fingerprint"]["tools"].startswith("offline_maps:far code=")


def test_a_result_that_called_a_tool_is_redone_when_the_maps_factory_s_code_changes(
    work: Path,
) -> None:
    """The same spec, another provider behind it: the factory's module is the user's code."""
    write_far_script(work)
    _, first = run(work, "--maps", "offline_maps:provider")
    assert first["final_score"] == 1.0
    module = work / "offline_maps.py"
    module.write_text(module.read_text().replace('"maps.json"', '"far.json"'))

    process, second = run(work, "--maps", "offline_maps:provider", "--json")

    assert json.loads(process.stdout)["evaluated"] == 1
    assert (second["status"], second["final_score"]) == ("complete", 0.0)
    assert second["fingerprint"]["tools"] != first["fingerprint"]["tools"]


def test_a_result_that_called_no_tool_is_kept_when_the_maps_provider_changes(
    tmp_path: Path,
) -> None:
    work = copy_fixtures(tmp_path)
    inputs = [i for i in discover_answers(work / "answers") if i.task_id == "python_match"]

    def run_with(tools: str) -> RunReport:
        opts = options(work, tools=tools)
        return asyncio.run(
            run_evaluations(inputs, backend=make_backend(), options=opts, isolation="in_process")
        )

    first = run_with("maps:a")
    assert {stored(work, head).fingerprint.tools for head in first.results} == {None}
    second = run_with("maps:b")
    assert second.reused == len(inputs) and second.evaluated == 0
