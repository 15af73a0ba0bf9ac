"""One results folder per agent name: a run refuses to write RESULTS/<agent> when it holds
results of another input (two webeval runs or answers folders whose folders share a name),
rather than overwrite them and count them in its summary — under the results lock, and for
library callers of `run_evaluations` too. A task's samples (`--answers tasks/<id>`) are
checked task by task: every task's are agent `samples`, each fed from its own folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator.cli import main
from tests.fixtures.runner.helpers import run_args, run_trajectories
from tests.fixtures.runner.scripted import make_backend
from toolkit.errors import ResultsOfAnotherInput
from toolkit.runner import results_lock
from toolkit.runner.results import input_root, recorded_roots

WEBEVAL = Path("webeval/fara-run")


def run(work: Path, *args: str, inputs: tuple[str, Path]) -> Result:
    """`judgegen run` over `inputs` (flag, folder) with the fixtures' judges and results."""
    flags = run_args(work, "--include-unreviewed", "--no-sandbox", *args)
    flags[1:3] = [inputs[0], str(inputs[1])]
    return CliRunner().invoke(main, flags, catch_exceptions=False)


def model_runs(work: Path) -> tuple[Path, Path]:
    """Two webeval runs laid out as <model>/<run_id>, both run ids `1_endpoint`: model A has
    every fixture trajectory, model B only louvre_hours."""
    a = work / "runs" / "modelA" / "1_endpoint"
    b = work / "runs" / "modelB" / "1_endpoint"
    shutil.copytree(work / WEBEVAL, a)
    (b / "traj").mkdir(parents=True)
    shutil.copytree(work / WEBEVAL / "traj" / "louvre_hours", b / "traj" / "louvre_hours")
    return a, b


def results(work: Path) -> dict[str, dict]:
    return {
        p.relative_to(work / "results").as_posix(): json.loads(p.read_text())
        for p in sorted((work / "results").glob("*/*/*.json"))
    }


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def score_files(traj: Path) -> list[Path]:
    return sorted(traj.glob("*/scores/*.json"))


def test_a_webeval_run_whose_folder_shares_another_runs_name_is_refused(work: Path) -> None:
    a, b = model_runs(work)
    assert run(work, inputs=("--trajectories", a)).exit_code == 0
    before = results(work)

    refused = run(work, inputs=("--trajectories", b))

    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert str((a / "traj").resolve()) in message and str((b / "traj").resolve()) in message
    assert "--results" in message
    assert results(work) == before
    assert not (b / "traj" / "louvre_hours" / "scores").exists()


def test_an_answers_folder_whose_agent_shares_another_folders_agent_is_refused(
    work: Path,
) -> None:
    other = work / "other-answers"
    shutil.copytree(work / "answers" / "alpha", other / "alpha")
    assert run(work, inputs=("--answers", work / "answers")).exit_code == 0

    refused = run(work, inputs=("--answers", other))

    assert refused.exit_code == 2
    assert str((work / "answers" / "alpha").resolve()) in " ".join(refused.stderr.split())


def test_the_same_run_reached_by_another_path_is_the_same_input(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    assert run(work, inputs=("--trajectories", WEBEVAL)).exit_code == 0
    (work / "link").symlink_to(work / "webeval")

    again = run(work, "--json", inputs=("--trajectories", work / "link" / "fara-run"))

    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["evaluated"] == 0


def test_a_library_run_into_a_results_folder_holding_another_inputs_results_is_refused(
    work: Path,
) -> None:
    other = work / "other" / "fara-run"  # another webeval run with the same run id
    shutil.copytree(work / WEBEVAL, other)
    assert run(work, inputs=("--trajectories", other)).exit_code == 0
    before = files(work / "results")

    with pytest.raises(ResultsOfAnotherInput) as refused:
        run_trajectories(work, make_backend())

    message = str(refused.value)
    assert str((other / "traj").resolve()) in message
    assert str((work / WEBEVAL / "traj").resolve()) in message
    assert "--results" in message and "RunOptions.results_dir" in message
    assert files(work / "results") == before
    assert score_files(work / WEBEVAL / "traj") == []


@contextmanager
def another_run_ending_meanwhile(
    monkeypatch: pytest.MonkeyPatch, results: Path, written: Path
) -> Iterator[None]:
    """While a run waits for the results lock, another run (its results in `written`) writes
    `results` and ends: the results lock, taken, finds them there."""
    real = results_lock.results_lock

    @contextmanager
    def lock(*args: Any, **kwargs: Any) -> Iterator[Path | None]:
        shutil.copytree(written, results, dirs_exist_ok=True)
        with real(*args, **kwargs) as held:
            yield held

    monkeypatch.setattr(results_lock, "results_lock", lock)
    yield


@pytest.mark.parametrize("kind", ["trajectories", "answers"])
def test_a_run_whose_agents_folder_another_input_wrote_while_it_waited_is_refused(
    work: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Checked under the lock: by the scheduler (trajectories B lacks score files, so has work
    to do) and by the fresh path (answers B are A's, bytes for bytes, so fresh)."""
    if kind == "trajectories":
        a, b = model_runs(work)
    else:
        a, b = work / "answers", work / "other-answers"
        shutil.copytree(work / "answers" / "alpha", b / "alpha")
    flag = f"--{kind}"
    assert run(work, "--results", str(work / "results_a"), inputs=(flag, a)).exit_code == 0
    written = work / "results_a"
    (written / results_lock.LOCK_FILE).unlink()

    with another_run_ending_meanwhile(monkeypatch, work / "results", written):
        refused = run(work, inputs=(flag, b))

    assert refused.exit_code == 2, refused.stderr
    assert "holds results of another input" in " ".join(refused.stderr.split())
    assert results(work) == {
        p.relative_to(written).as_posix(): json.loads(p.read_text())
        for p in sorted(written.glob("*/*/*.json"))
    }
    if kind == "trajectories":
        assert score_files(b / "traj") == []


def task_folders(work: Path, *tasks: str) -> None:
    """`tasks/<id>` folders holding the fixture agent alpha's answers as their samples, each
    with a samples/ folder whose `<id>` links to `../answers`."""
    for task in tasks:
        (work / "tasks" / task).mkdir(parents=True)
        (work / "tasks" / task / "task.yaml").write_text(f"task_id: {task}\n")
        shutil.copytree(work / "answers" / "alpha" / task, work / "tasks" / task / "answers")
        (work / "tasks" / task / "samples").mkdir()
        (work / "tasks" / task / "samples" / task).symlink_to(Path("..") / "answers")


@pytest.mark.parametrize("folder", ["", "samples"])
def test_the_samples_of_each_task_are_one_agent_fed_task_by_task(work: Path, folder: str) -> None:
    """`--answers tasks/<id>` (or its samples/ folder) judges that task's samples as agent
    `samples`: another task's samples, judged earlier from their own folder, are neither a
    conflict nor gone — they stay counted, unchecked."""
    task_folders(work, "louvre_hours", "python_match")
    assert run(work, inputs=("--answers", work / "tasks" / "louvre_hours" / folder)).exit_code == 0

    second = run(work, inputs=("--answers", work / "tasks" / "python_match" / folder))

    assert second.exit_code == 0, second.stderr
    summary = json.loads((work / "results" / "samples" / "summary.json").read_text())
    assert summary["unchecked_tasks"] == ["louvre_hours"]
    assert summary["not_counted"] == [] and summary["removed_tasks"] == []
    assert summary["counts"]["complete"] == 4


def test_a_tasks_samples_reached_through_its_samples_folder_are_the_same_input(
    work: Path,
) -> None:
    """`tasks/<id>` and `tasks/<id>/samples` (whose `<id>` links to `../answers`) are one
    input: the same answer files."""
    task_folders(work, "louvre_hours")
    assert run(work, inputs=("--answers", work / "tasks" / "louvre_hours")).exit_code == 0

    again = run(work, "--json", inputs=("--answers", work / "tasks" / "louvre_hours" / "samples"))

    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["evaluated"] == 0


def test_a_tasks_samples_over_another_inputs_results_for_that_task_are_refused(
    work: Path,
) -> None:
    """An answers folder whose agent folder is named `samples` wrote RESULTS/samples/<id>:
    the task's own samples may not overwrite them (nor count them in their summary)."""
    task_folders(work, "louvre_hours")
    other = work / "other-answers" / "samples"
    shutil.copytree(work / "answers" / "alpha" / "louvre_hours", other / "louvre_hours")
    assert run(work, inputs=("--answers", other.parent)).exit_code == 0
    before = results(work)

    refused = run(work, inputs=("--answers", work / "tasks" / "louvre_hours"))

    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert str((other / "louvre_hours").resolve()) in message
    assert str((work / "tasks" / "louvre_hours" / "answers").resolve()) in message
    assert "--results" in message
    assert results(work) == before


def relative_input_paths(work: Path, rewrite: Callable[[Path], str]) -> None:
    """Rewrite every stored result's `input_path` as `rewrite` gives it, relative, as results
    written before input paths were recorded absolute hold them."""
    for path in (work / "results").glob("*/*/*.json"):
        record = json.loads(path.read_text())
        record["input_path"] = rewrite(Path(record["input_path"]))
        path.write_text(json.dumps(record))


def test_results_recording_a_relative_input_path_of_this_input_are_not_refused(
    work: Path,
) -> None:
    a, _ = model_runs(work)
    assert run(work, inputs=("--trajectories", a)).exit_code == 0
    relative_input_paths(work, lambda p: str(Path("..", *p.parts[-6:])))

    rerun = run(work, inputs=("--trajectories", a))

    assert rerun.exit_code == 0, rerun.stderr


def test_results_recording_a_relative_input_path_of_another_input_are_refused(
    work: Path,
) -> None:
    a, b = model_runs(work)
    assert run(work, inputs=("--trajectories", a)).exit_code == 0
    relative_input_paths(work, lambda p: str(Path("modelA", *p.parts[-4:])))

    refused = run(work, inputs=("--trajectories", b))

    assert refused.exit_code == 2


@pytest.mark.parametrize("padding", [0, 20_000, 200_000], ids=["small", "medium", "large"])
def test_the_input_of_a_result_is_its_top_level_one_whatever_its_size(
    work: Path, padding: int
) -> None:
    a, _ = model_runs(work)
    assert run(work, inputs=("--trajectories", a)).exit_code == 0
    path = next((work / "results").glob("*/louvre_hours/*.json"))
    record = json.loads(path.read_text())
    decoy = {"input_path": "/elsewhere/traj/louvre_hours", "task_id": "decoy"}
    record["notes"] = ["x" * padding]
    record["eval_breakdown"] = [{"info": decoy}, *record["eval_breakdown"]]
    path.write_text(json.dumps(record, indent=2) + "\n")

    roots = recorded_roots(work / "results", path.parent.parent.name)

    assert set(roots) == {input_root(record["input_path"], "louvre_hours")}
