"""A judge is one module: one importing a module of the user's is refused before it runs, with
the same outcome in process and sandboxed; the standard library, installed packages and
judgegen's own are a judge's to import."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import HOSTILE_JUDGES, run_in_sandbox
from toolkit.backends import ScriptedBackend
from toolkit.runner.executors import InProcessExecutor
from toolkit.runner.loader import user_import_problem
from toolkit.sandbox.protocol import EvalJob, EvalOutcome

Evaluate = Callable[[EvalJob], Awaitable[EvalOutcome]]
NORMAL = (HOSTILE_JUDGES / "normal.py").read_text()
ANSWER = "Paris is the capital, see https://a"


def backend() -> ScriptedBackend:
    return ScriptedBackend(extract=lambda request: {"city": "Paris", "url": "https://a"})


def with_imports(imports: str) -> str:
    """The well-behaved fixture judge with `imports` added after its own."""
    return NORMAL.replace(
        "from pydantic import BaseModel\n", f"from pydantic import BaseModel\n{imports}"
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working directory: a judge folder holding a helper module (`judges/helpers.py`,
    not on sys.path); its modules are forgotten after the test."""
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "helpers.py").write_text('raise SystemExit("the helper ran")\n')
    monkeypatch.chdir(tmp_path)
    for name in [name for name in sys.modules if name.partition(".")[0] == "judges"]:
        monkeypatch.delitem(sys.modules, name)  # another test's `judges`, which import would use
    yield tmp_path
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def judge(folder: Path, source: str) -> EvalJob:
    path = folder / "judges" / "capital.py"
    path.write_text(source)
    return EvalJob(judge_path=str(path), answer=ANSWER, agent_name="agent", answer_name="a_1")


async def in_process(job: EvalJob) -> EvalOutcome:
    return await InProcessExecutor(backend()).evaluate(job)


async def sandboxed(job: EvalJob) -> EvalOutcome:
    return await run_in_sandbox(job, backend())


@pytest.mark.parametrize("evaluate", [in_process, sandboxed], ids=["in_process", "sandboxed"])
async def test_a_judge_importing_a_module_of_the_users_is_refused_unrun(
    project: Path, evaluate: Evaluate
) -> None:
    outcome = await evaluate(judge(project, with_imports("from judges.helpers import DOMAIN\n")))

    assert outcome.status == "incomplete" and outcome.summary is None
    [error] = outcome.errors
    assert (error["type"], error["kind"]) == ("JudgeImportError", "judge_load")
    helper = project / "judges" / "helpers.py"
    assert f"`judges.helpers` (line 4) from {helper}" in error["message"]
    assert "the helper ran" not in str(outcome)


async def test_a_refused_judge_gets_the_same_outcome_in_process_and_sandboxed(
    project: Path,
) -> None:
    job = judge(project, with_imports("import judges.helpers\n"))

    assert await in_process(job) == await sandboxed(job)


@pytest.mark.parametrize("evaluate", [in_process, sandboxed], ids=["in_process", "sandboxed"])
async def test_a_judge_importing_the_standard_library_installed_packages_and_toolkit_runs(
    project: Path, evaluate: Evaluate
) -> None:
    imports = "import json\nimport pydantic.fields\nfrom toolkit import checks\n"

    outcome = await evaluate(judge(project, with_imports(imports)))

    assert outcome.status == "complete" and outcome.errors == []


def test_an_import_inside_a_function_is_seen(project: Path) -> None:
    source = with_imports("").replace(
        "async def evaluate(ev):\n", "async def evaluate(ev):\n    from judges import helpers\n"
    )

    problem = user_import_problem(source, "capital.py")

    assert problem is not None and "`judges.helpers` (line 15)" in problem


def test_a_relative_import_is_not_a_module_of_the_users(project: Path) -> None:
    """A judge runs as a module of no package: `from . import helpers` fails to import in
    either mode, on its own."""
    assert user_import_problem(with_imports("from . import helpers\n"), "capital.py") is None


def test_a_judge_that_does_not_parse_is_left_to_its_load_error(project: Path) -> None:
    assert user_import_problem("import judges.helpers\ndef broken(:\n", "capital.py") is None


def test_judgegens_generator_package_is_not_a_judges_to_import(project: Path) -> None:
    """The sandbox mounts `toolkit` and `prompts` only: a judge importing `generator` would
    run in process and fail sandboxed, so it is refused in both, wherever it is installed."""
    problem = user_import_problem(with_imports("from generator.cli import entry\n"), "capital.py")

    assert problem is not None and "`generator`" in problem


def test_the_packages_a_judge_may_import_are_those_the_sandbox_mounts() -> None:
    from toolkit.llm.policy_sources import JUDGE_PACKAGES
    from toolkit.sandbox.isolation import PROJECT_PACKAGES

    assert JUDGE_PACKAGES == PROJECT_PACKAGES
