"""Imported Mind2Web 2 judges give the same summaries sandboxed as in process (tools included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.importer import import_judge
from tests.fixtures.m2w2 import scenario
from tests.fixtures.m2w2.scenario import TASKS
from toolkit.backends import ScriptedBackend
from toolkit.sandbox.pool import WorkerPool
from toolkit.sandbox.protocol import EvalJob, SandboxLimits
from toolkit.tools.maps import maps_tools


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("generated_judges")
    paths = {}
    for task in TASKS.values():
        report = import_judge(task.m2w2_judge, out)
        assert report.status == "written", report.problems
        paths[task.name] = Path(report.output)
    return paths


@pytest.mark.parametrize("pattern", ["all_pass", "mix:2"])
@pytest.mark.parametrize("task_name", list(TASKS))
async def test_imported_judge_summary_is_the_same_in_the_sandbox(
    imported, task_name: str, pattern: str
) -> None:
    task = TASKS[task_name]
    answer_key = next(iter(task.answers))
    expected = await scenario.run(task, imported[task_name], answer_key, pattern)
    answer, answer_data = task.answers[answer_key]
    backend = ScriptedBackend(
        extract=scenario.extractions(answer_data), verify=scenario.verdicts(pattern)
    )
    tools = maps_tools(scenario.FakeMaps())
    job = EvalJob(
        judge_path=str(imported[task_name]),
        answer=answer,
        agent_name="agent",
        answer_name=answer_key,
    )
    async with WorkerPool(
        1, SandboxLimits(timeout_s=20), backend, scenario.DictPages(), tools
    ) as pool:
        outcome = await pool.evaluate(job)
    assert outcome.status == "complete", outcome.errors
    assert outcome.summary == expected.summary
    assert len(backend.calls) == expected.backend_calls
