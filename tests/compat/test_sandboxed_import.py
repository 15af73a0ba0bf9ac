"""An imported judge in the runner's sandbox: same tree as in-process, maps over the broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.importer import import_judge
from tests.fixtures.m2w2 import scenario
from tests.fixtures.runner.helpers import run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.sandbox.protocol import EvalJob, EvalOutcome, SandboxLimits
from toolkit.tools.maps import maps_tools

TASK = scenario.TASKS["portland_bookstores"]
ANSWER = "complete"
LIMITS = SandboxLimits(timeout_s=30)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    report = import_judge(TASK.m2w2_judge, tmp_path_factory.mktemp("generated_judges"))
    return Path(report.output)


async def sandboxed(judge: Path, pattern: str, tools) -> EvalOutcome:
    answer, data = TASK.answers[ANSWER]
    backend = ScriptedBackend(extract=scenario.extractions(data), verify=scenario.verdicts(pattern))
    job = EvalJob(judge_path=str(judge), answer=answer, agent_name="agent", answer_name=ANSWER)
    return await run_in_sandbox(job, backend, scenario.DictPages(), LIMITS, tools)


async def test_sandboxed_imported_judge_matches_in_process_native_judge(imported):
    outcome = await sandboxed(imported, "mix:1", maps_tools(scenario.FakeMaps()))
    native = await scenario.run(TASK, TASK.native_judge, ANSWER, "mix:1")
    assert outcome.status == "complete", outcome.errors
    assert outcome.summary is not None
    tree = outcome.summary["eval_breakdown"][0]["verification_tree"]
    assert tree == native.tree
    assert outcome.summary["final_score"] == native.summary["final_score"]


async def test_maps_without_a_provider_makes_the_evaluation_incomplete(imported):
    outcome = await sandboxed(imported, "all_pass", maps_tools(None))
    assert outcome.status == "incomplete"
    assert "tool" in [error["kind"] for error in outcome.errors]
