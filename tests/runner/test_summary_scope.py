"""An agent's summary counts only results that still stand for an answer and a judge of the
run that wrote it; whatever else lies in its folder is listed, never counted unseen."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import (
    DictPages,
    options,
    run_answers,
    run_args,
    run_trajectories,
)
from tests.fixtures.runner.scripted import broke_factory, make_backend
from toolkit.runner.approval import approve
from toolkit.runner.executors import InProcessExecutor
from toolkit.runner.inputs import discover_answers, discover_trajectories
from toolkit.runner.scheduler import run_evaluations
from toolkit.sandbox.protocol import EvalJob, EvalOutcome


def run(work: Path, *extra: str, unreviewed: bool = True):
    flags = ["--include-unreviewed"] if unreviewed else []
    args = run_args(work, *flags, "--no-sandbox", "--json", *extra)
    return CliRunner().invoke(main, args, catch_exceptions=False)


def summary(work: Path, agent: str = "alpha") -> dict:
    return json.loads((work / "results" / agent / "summary.json").read_text())


def left_out(work: Path, agent: str = "alpha") -> dict[str, str]:
    return {
        f"{r['task_id']}/{r['answer_name']}": r["reason"]
        for r in summary(work, agent)["not_counted"]
    }


def test_results_of_removed_answers_leave_the_metrics_and_are_named(work: Path) -> None:
    assert run(work).exit_code == 0
    assert summary(work)["runs"] == ["answer_1", "answer_2"]
    for answer in (work / "answers" / "alpha").glob("*/answer_2.md"):
        answer.unlink()

    again = run(work)

    assert again.exit_code == 0, again.stderr
    after = summary(work)
    assert after["runs"] == ["answer_1"] and after["counts"]["complete"] == 3
    gone = {f"{task}/answer_2" for task in ("le_guin_novels", "louvre_hours", "python_match")}
    assert set(left_out(work)) == gone
    assert all("its answer is gone" in reason for reason in left_out(work).values())
    assert "3 result file(s)" in again.stderr and "left out of its metrics" in again.stderr
    assert json.loads(again.stdout)["summaries"]["alpha"]["not_counted"]
    assert summary(work, "beta")["not_counted"] == []


def test_results_a_held_back_judge_computed_earlier_are_not_counted(work: Path) -> None:
    """Without --include-unreviewed the unapproved judges are held back: what they computed
    in an earlier run (perhaps from other code) must not stand in the metrics."""
    assert run(work).exit_code == 0

    held = run(work, unreviewed=False)

    assert held.exit_code == 1
    after = summary(work)
    assert after["counts"] == {"complete": 0, "incomplete": 0, "excluded": 0}
    assert len(left_out(work)) == 6
    assert all(reason.startswith("its judge did not run now") for reason in left_out(work).values())


def test_results_a_stopped_run_left_outdated_are_not_counted_and_are_named(work: Path) -> None:
    """A budget stop leaves the edited judge's older results on disk: they no longer stand
    for its answers, so the summary must not count them as this run's."""
    run_answers(work, make_backend())
    judge = work / "judges" / "python_match.py"
    judge.write_text(judge.read_text() + "\n# edited\n")

    stopped = run_answers(work, broke_factory(), jobs=1)  # the same backend, now out of budget

    assert stopped.stopped and "budget" in stopped.stopped and stopped.not_started > 0
    rewritten = {
        (r.agent_name, r.answer_name) for r in stopped.results if r.task_id == "python_match"
    }
    older = {
        (agent, path.stem)
        for agent in ("alpha", "beta")
        for path in (work / "answers" / agent / "python_match").glob("*.md")
    } - rewritten
    assert len(older) == stopped.not_started
    listed = {
        (agent, r.task_id, r.answer_name): r.reason
        for agent, summary_ in stopped.summaries.items()
        for r in summary_.not_counted
    }
    assert set(listed) == {(agent, "python_match", answer) for agent, answer in older}
    assert all(reason.startswith("outdated: its judge") for reason in listed.values())
    for agent, summary_ in stopped.summaries.items():
        task = summary_.per_task.get("python_match")
        counted = set(task.scores) | set(task.incomplete) if task else set()
        assert counted == {answer for a, answer in rewritten if a == agent}
        # an outdated result's answer exists: left out, never scored 0 as a missing answer
        assert all(m.task_id != "python_match" for m in summary_.missing)
    assert left_out(work) == {
        f"{task}/{answer}": reason for (a, task, answer), reason in listed.items() if a == "alpha"
    }


def test_a_stopped_run_names_what_changed_for_each_outdated_result_as_report_does(
    work: Path,
) -> None:
    """The summary lists an outdated result under the reason `judgegen report` gives it
    (one wording), adding that the run stopped before redoing it: a reader learns what
    changed, not only that something did."""
    run_answers(work, make_backend())
    judge = work / "judges" / "python_match.py"
    judge.write_text(judge.read_text() + "\n# edited\n")
    shown = CliRunner().invoke(
        main,
        ["report", str(work / "results" / "alpha"), "--json", "--judges", str(work / "judges")],
    )
    said = {s["answer_name"]: s["reason"] for s in json.loads(shown.stdout)["freshness"]["stale"]}

    stopped = run_answers(work, broke_factory(), jobs=1)

    assert stopped.stopped and "budget" in stopped.stopped
    listed = {r.answer_name: r.reason for r in stopped.summaries["alpha"].not_counted}
    assert listed, "the budget stop left some of alpha's python_match results outdated"
    for answer, reason in listed.items():
        assert said[answer] == "outdated: its judge changed since it was computed; run again"
        assert reason == (
            "outdated: its judge changed since it was computed, and the run stopped before "
            "redoing it; run again"
        )


def test_a_stopped_runs_output_names_what_changed_for_each_outdated_result(work: Path) -> None:
    """The run's stderr lists each result it left out under the summary's reason, naming the
    change (here the backend) rather than a generic 'inputs changed'."""
    assert run(work).exit_code == 0

    broke = "tests.fixtures.runner.scripted:broke_factory"
    args = run_args(
        work, "--include-unreviewed", "--no-sandbox", "--json", "--jobs", "1", backend=broke
    )
    stopped = CliRunner().invoke(main, args, catch_exceptions=False)

    assert stopped.exit_code == 3, stopped.output
    listed = left_out(work)
    assert listed
    for where, reason in listed.items():
        assert reason.startswith("outdated: the judging backend changed since it was computed")
        assert f"  {where}: {reason}" in stopped.stderr
    recorded = json.loads(stopped.stdout)["summaries"]["alpha"]["not_counted"]
    assert {f"{r['task_id']}/{r['answer_name']}": r["reason"] for r in recorded} == listed


def test_a_stopped_run_counts_the_older_results_that_still_stand(work: Path) -> None:
    """Only outdated results leave the metrics: one --overwrite did not reach is still the
    result of its answer and judge, and counts."""
    run_answers(work, make_backend())

    stopped = run_answers(work, broke_factory(), jobs=1, overwrite=True)

    assert stopped.not_started > 0
    assert all(s.not_counted == [] for s in stopped.summaries.values())
    counts = [s.counts for s in stopped.summaries.values()]
    assert sum(c.incomplete for c in counts) == 1  # the evaluation the budget stopped
    assert sum(c.complete for c in counts) == 10  # the others, as they were


def test_tasks_outside_a_task_run_are_counted_and_named_as_unchecked(work: Path) -> None:
    assert run(work).exit_code == 0

    one = run(work, "--task", "louvre_hours")

    assert one.exit_code == 0
    assert summary(work)["counts"]["complete"] == 6
    assert summary(work)["unchecked_tasks"] == ["le_guin_novels", "python_match"]
    assert "did not check (le_guin_novels, python_match)" in one.stderr
    assert summary(work)["not_counted"] == []


def test_an_unreadable_result_file_is_named_not_silently_dropped(work: Path) -> None:
    assert run(work).exit_code == 0
    (work / "results" / "alpha" / "python_match" / "answer_2.json").write_text("{truncated")

    one = run(work, "--task", "louvre_hours")

    assert one.exit_code == 0
    assert summary(work)["counts"]["complete"] == 5
    reason = left_out(work)["python_match/answer_2"]
    assert reason.startswith("the result file cannot be read")


def test_a_run_interrupted_after_rewriting_results_leaves_no_summary_of_the_old_ones(
    work: Path,
) -> None:
    """Ctrl-C (or a kill) ends a run before it writes its summaries: the summary.json of the
    run before would still show the scores of results it has since rewritten, with no word.
    None is better: the next run, or `judgegen report`, writes the metrics."""
    run_answers(work, make_backend())
    judge = work / "judges" / "louvre_hours.py"
    judge.write_text(judge.read_text().replace("9:00-21:00", "10:00-18:00"))
    inner = InProcessExecutor(make_backend(), pages=DictPages())
    started = 0

    class InterruptedSecond:
        async def evaluate(self, job: EvalJob) -> EvalOutcome:
            nonlocal started
            started += 1
            if started == 2:
                raise asyncio.CancelledError  # as Ctrl-C cancels the run
            return await inner.evaluate(job)

    inputs = [i for i in discover_answers(work / "answers") if i.agent_name == "alpha"]
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(
            run_evaluations(
                inputs,
                backend=make_backend(),
                options=options(work, jobs=1),
                executor=InterruptedSecond(),
                pages=DictPages(),
            )
        )

    assert started == 2  # one result of the edited judge written, then the interruption
    assert not (work / "results" / "alpha" / "summary.json").exists()
    assert (work / "results" / "beta" / "summary.json").exists()  # nothing of it rewritten


def test_judges_the_agent_has_no_answer_for_are_named_not_silently_left_out(work: Path) -> None:
    """An agent's tasks are those it answered: one that skipped a task altogether is scored on
    the others, so the summary must say which judged tasks it did not answer."""
    shutil.rmtree(work / "answers" / "alpha" / "python_match")

    result = run(work)

    assert result.exit_code == 0, result.stderr
    assert summary(work)["unanswered_judges"] == ["eiffel_height", "python_match"]
    assert summary(work, "beta")["unanswered_judges"] == ["eiffel_height"]
    assert json.loads(result.stdout)["summaries"]["alpha"]["unanswered_judges"]
    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha")])
    assert "Judges without an answer of this agent (not in its metrics): 2" in shown.stdout
    assert "    eiffel_height\n    python_match" in shown.stdout


def test_a_task_run_names_no_judge_as_unanswered(work: Path) -> None:
    assert run(work, "--task", "louvre_hours").exit_code == 0
    assert summary(work)["unanswered_judges"] == []


def copy_with_score(result: Path, name: str, score: float) -> Path:
    """A copy of `result` beside it, as a backup or a file manager's copy would be, holding
    another score (say an earlier judge's)."""
    data = json.loads(result.read_text())
    data["final_score"] = score
    copy = result.with_name(name)
    copy.write_text(json.dumps(data, indent=2))
    return copy


def test_a_copy_of_a_result_file_at_another_path_is_named_not_counted(work: Path) -> None:
    """The copy names the pair it was copied from: counted, it would stand in for that pair's
    result, the last one read winning, and add a result the agent does not have."""
    assert run(work).exit_code == 0
    before = summary(work)
    result = work / "results" / "alpha" / "louvre_hours" / "answer_1.json"
    copy_with_score(result, "answer_1 (copy).json", 0.0)

    again = run(work)

    after = summary(work)
    assert after["per_task"]["louvre_hours"] == before["per_task"]["louvre_hours"]
    assert after["partial_completion"] == before["partial_completion"]
    assert after["counts"] == before["counts"]
    reason = left_out(work)["louvre_hours/answer_1 (copy)"]
    assert "holds the result of louvre_hours/answer_1" in reason
    assert "left out of its metrics" in again.stderr


def test_report_names_a_result_file_it_cannot_read_as_the_run_does(work: Path) -> None:
    """A result file damaged after the run is neither counted nor silently dropped: its task
    would leave the metrics unseen, raising them."""
    assert run(work).exit_code == 0
    for answer in ("answer_1", "answer_2"):
        (work / "results" / "alpha" / "python_match" / f"{answer}.json").write_text("{trunc")

    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha"), "--json"])

    recomputed = json.loads(shown.stdout)
    listed = {f"{r['task_id']}/{r['answer_name']}": r["reason"] for r in recomputed["not_counted"]}
    assert set(listed) == {"python_match/answer_1", "python_match/answer_2"}
    assert all(reason.startswith("the result file cannot be read") for reason in listed.values())
    # their answers exist (the run judged them): left out, not scored 0 as missing answers
    assert recomputed["missing"] == []
    assert {(r["task_id"], r["answer_name"]) for r in recomputed["not_evaluated"]} == {
        ("python_match", "answer_1"),
        ("python_match", "answer_2"),
    }


def test_report_names_a_copy_of_a_result_file_not_counts_it(work: Path) -> None:
    assert run(work).exit_code == 0
    result = work / "results" / "alpha" / "louvre_hours" / "answer_1.json"
    copy_with_score(result, "answer_1.old.json", 0.0)

    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha"), "--json"])

    recomputed = json.loads(shown.stdout)
    assert recomputed["per_task"]["louvre_hours"]["scores"]["answer_1"] == 1.0
    assert recomputed["counts"] == summary(work)["counts"]
    (listed,) = recomputed["not_counted"]
    assert (listed["task_id"], listed["answer_name"]) == ("louvre_hours", "answer_1.old")


def test_report_leaves_out_what_the_last_run_left_out(work: Path) -> None:
    assert run(work).exit_code == 0
    for answer in (work / "answers" / "alpha").glob("*/answer_2.md"):
        answer.unlink()
    assert run(work).exit_code == 0

    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha"), "--json"])

    assert shown.exit_code == 0, shown.output
    recomputed = json.loads(shown.stdout)
    assert recomputed["runs"] == ["answer_1"]
    assert recomputed["not_counted"] == summary(work)["not_counted"]


def test_report_leaves_out_the_pairs_the_last_run_did_not_evaluate(work: Path) -> None:
    """A stopped run leaves an edited judge's older results outdated: their answers exist, so
    the run leaves those pairs out. `report` must not score them 0 as missing answers."""
    run_answers(work, make_backend())
    judge = work / "judges" / "python_match.py"
    judge.write_text(judge.read_text() + "\n# edited\n")
    assert run_answers(work, broke_factory(), jobs=1).stopped
    assert summary(work, "beta")["not_evaluated"]

    for agent in ("alpha", "beta"):
        shown = CliRunner().invoke(main, ["report", str(work / "results" / agent), "--json"])

        recomputed = json.loads(shown.stdout)
        for key in ("partial_completion", "success_rate", "missing", "not_evaluated"):
            assert recomputed[key] == summary(work, agent)[key], (agent, key)


def test_the_html_report_counts_the_pairs_the_last_run_did_not_evaluate(work: Path) -> None:
    """Its metrics leave those pairs out, as `report` does: the page must say how many, or its
    Partial Completion reads as covering every answer."""
    stopped = run_answers(work, broke_factory(), jobs=1)
    assert stopped.stopped
    left_out = len(summary(work, "beta")["not_evaluated"])
    assert left_out > 0

    out = work / "report.html"
    shown = CliRunner().invoke(main, ["report", str(work / "results"), "--html", str(out)])

    assert out.exists(), shown.output
    page = out.read_text()
    assert f'<td>beta</td><td>not_evaluated</td><td class="num">{left_out}</td>' in page


def test_the_html_report_marks_the_results_the_last_run_left_out_with_its_reason(
    work: Path,
) -> None:
    """Their trees are on the page while its metrics leave them out, as the last run did: each
    says so, with the reason the summary gives."""
    assert run(work).exit_code == 0
    for answer in (work / "answers" / "alpha").glob("*/answer_2.md"):
        answer.unlink()
    assert run(work).exit_code == 0
    out = work / "report.html"
    args = ["report", str(work / "results"), "--html", str(out), "--judges", str(work / "judges")]

    shown = CliRunner().invoke(main, [*args, "--pages", str(work / "pages")])

    assert shown.exit_code == 0, shown.output
    page = out.read_text()
    assert page.count('data-left-out="not counted"') == len(left_out(work)) == 3
    banner = "<b>not counted</b>, left out of the metrics: its answer is gone: restore the answer"
    assert page.count(banner) == 3
    assert '<td>alpha</td><td>complete</td><td class="num">3</td>' in page


def test_a_stopped_run_names_every_answer_it_left_without_a_result(work: Path) -> None:
    """A budget stop before most evaluations started: the summary must say which answers it
    left out, not read as the summary of the few it judged."""
    stopped = run_answers(work, broke_factory(), jobs=1)
    assert stopped.stopped and stopped.not_started > 0

    for agent in ("alpha", "beta"):
        after = summary(work, agent)
        with_result = {(r.task_id, r.answer_name) for r in stopped.results if r.agent_name == agent}
        answers = {
            (path.parent.name, path.stem) for path in (work / "answers" / agent).glob("*/*.md")
        }
        listed = {(m["task_id"], m["answer_name"]) for m in after["not_evaluated"]}
        assert listed == answers - with_result, agent


def test_a_task_run_without_the_flag_warns_of_the_unreviewed_results_it_counts(
    work: Path,
) -> None:
    """Results of tasks outside --task are counted as they are, even those an unapproved judge
    computed in an earlier --include-unreviewed run: the table must say so."""
    assert run(work).exit_code == 0
    approve(
        "python_match", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews"
    )
    args = run_args(work, "--no-sandbox", "--task", "python_match")

    one = CliRunner().invoke(main, args, catch_exceptions=False)

    assert one.exit_code == 0, one.stderr
    assert (summary(work)["include_unreviewed"], summary(work)["unreviewed_results"]) == (False, 4)
    assert "WARNING: 4 results come from unreviewed judges" in one.stdout


def test_a_removed_task_folder_leaves_its_results_uncounted_and_its_pairs_scored_0(
    work: Path,
) -> None:
    """Without --task the run covers every task: a task whose answers are all gone is a task
    the agent has no answer for, scored 0 in each run as Mind2Web 2 does — not its old scores
    counted unchecked."""
    assert run(work).exit_code == 0
    shutil.rmtree(work / "answers" / "alpha" / "louvre_hours")

    again = run(work)

    assert again.exit_code == 0, again.stderr
    after = summary(work)
    assert after["unchecked_tasks"] == [] and after["removed_tasks"] == ["louvre_hours"]
    assert after["counts"]["complete"] == 4
    gone = {"louvre_hours/answer_1", "louvre_hours/answer_2"}
    assert set(left_out(work)) == gone
    assert all("its answer is gone" in reason for reason in left_out(work).values())
    missing = {f"{m['task_id']}/{m['answer_name']}": m["reason"] for m in after["missing"]}
    assert set(missing) == gone and all(r.endswith("scored 0") for r in missing.values())
    assert after["per_task"]["louvre_hours"]["missing"] == ["answer_1", "answer_2"]


def test_report_scores_a_removed_task_as_the_run_did(work: Path) -> None:
    assert run(work).exit_code == 0
    shutil.rmtree(work / "answers" / "alpha" / "louvre_hours")
    assert run(work).exit_code == 0

    shown = CliRunner().invoke(main, ["report", str(work / "results" / "alpha"), "--json"])

    assert shown.exit_code == 0, shown.output
    recomputed = json.loads(shown.stdout)
    for key in ("removed_tasks", "missing", "partial_completion", "not_counted"):
        assert recomputed[key] == summary(work)[key], key


def test_a_removed_trajectory_is_not_counted_and_scores_0_as_missing(work: Path) -> None:
    run_trajectories(work, make_backend())
    assert summary(work, "fara-run")["partial_completion"]["mean"] == 0.5  # 0, 0.5, 1
    shutil.rmtree(work / "webeval" / "fara-run" / "traj" / "louvre_hours")

    again = run_trajectories(work, make_backend())

    after = summary(work, "fara-run")
    assert again.exit_code == 0
    assert after["partial_completion"]["mean"] == pytest.approx(0.5 / 3)  # 0, 0.5, missing
    assert after["success_rate"]["mean"] == 0.0
    assert left_out(work, "fara-run") == {
        "louvre_hours/final_answer": (
            "its answer is gone: restore the answer, or delete this result file"
        )
    }
    assert [m["task_id"] for m in after["missing"]] == ["louvre_hours"]


def test_a_trajectory_no_longer_among_the_inputs_loses_its_score_file(work: Path) -> None:
    run_trajectories(work, make_backend())
    traj = work / "webeval" / "fara-run" / "traj"
    score = traj / "louvre_hours" / "scores" / "judgegen_louvre_hours.json"
    assert score.exists()
    inputs = [i for i in discover_trajectories(traj.parent) if i.task_id != "louvre_hours"]

    asyncio.run(
        run_evaluations(
            inputs,
            backend=make_backend(),
            options=options(work),
            isolation="in_process",
            pages=DictPages(),
        )
    )

    assert not score.exists()
    assert "louvre_hours/final_answer" in left_out(work, "fara-run")


def test_a_library_run_scoped_to_some_tasks_counts_the_others_unchecked(work: Path) -> None:
    run_trajectories(work, make_backend())
    traj = work / "webeval" / "fara-run" / "traj"
    inputs = discover_trajectories(traj.parent, tasks={"python_match"})

    asyncio.run(
        run_evaluations(
            inputs,
            backend=make_backend(),
            options=options(work, tasks=frozenset({"python_match"})),
            isolation="in_process",
            pages=DictPages(),
        )
    )

    after = summary(work, "fara-run")
    assert after["unchecked_tasks"] == ["eiffel_height", "le_guin_novels", "louvre_hours"]
    assert after["not_counted"] == [] and after["partial_completion"]["mean"] == 0.5
    assert (traj / "louvre_hours" / "scores" / "judgegen_louvre_hours.json").exists()
