"""Metrics over results: Mind2Web 2's definitions (a missing pair scores 0 and is listed), with
incomplete/excluded left out and listed."""

from __future__ import annotations

import statistics

import pytest

from toolkit.runner.fingerprint import Fingerprint
from toolkit.runner.metrics import Listed, SkippedJudge, compute_summary, format_table, run_order
from toolkit.runner.results import EarlierAttempts, EvaluationResult, ResultHead, UsageTotals
from toolkit.tree import VerificationNode

FP = Fingerprint(templates_sha256="p", toolkit_version="0", backend="b", answer_sha256="a")


def res(task: str, answer: str, score: float | None, status: str = "complete") -> ResultHead:
    """The head of a result, as a run keeps it."""
    return ResultHead.of(full(task, answer, score, status))


def full(task: str, answer: str, score: float | None, status: str = "complete") -> EvaluationResult:
    return EvaluationResult(
        task_id=task,
        agent_name="agent",
        answer_name=answer,
        status=status,
        final_score=score if status == "complete" else None,
        reason="aborted" if status == "excluded" else None,
        errors=[{"type": "LLMError", "message": "529"}] if status == "incomplete" else [],
        judge_model="m",
        fingerprint=FP,
    )


def test_partial_completion_and_success_rate_are_means_over_runs_with_population_std() -> None:
    results = [
        res("a", "answer_1", 1.0),
        res("b", "answer_1", 0.5),
        res("a", "answer_2", 0.25),
        res("b", "answer_2", 1.0),
        res("a", "answer_3", 0.0),
        res("b", "answer_3", 0.0),
    ]
    summary = compute_summary("agent", results)
    pc = [0.75, 0.625, 0.0]
    sr = [0.5, 0.5, 0.0]
    assert summary.runs == ["answer_1", "answer_2", "answer_3"]
    assert summary.partial_completion.mean == pytest.approx(statistics.fmean(pc))
    assert summary.partial_completion.std == pytest.approx(statistics.pstdev(pc))
    assert summary.success_rate.mean == pytest.approx(statistics.fmean(sr))
    assert summary.success_rate.std == pytest.approx(statistics.pstdev(sr))
    assert summary.pass_at_k.k == 3 and summary.pass_at_k.value == 1.0


def test_pass_at_k_counts_a_task_once_when_any_run_scores_one() -> None:
    results = [res("a", "answer_1", 0.9), res("a", "answer_2", 1.0), res("b", "answer_1", 0.9)]
    assert compute_summary("agent", results).pass_at_k.value == pytest.approx(0.5)


def test_incomplete_and_excluded_results_are_left_out_and_listed() -> None:
    results = [
        res("a", "answer_1", 1.0),
        res("b", "answer_1", None, "incomplete"),
        res("c", "answer_1", None, "excluded"),
    ]
    summary = compute_summary("agent", results)
    assert summary.partial_completion.mean == 1.0 and summary.num_tasks == 1
    assert summary.counts.model_dump() == {"complete": 1, "incomplete": 1, "excluded": 1}
    assert [(i.task_id, i.reason) for i in summary.incomplete] == [("b", "LLMError: 529")]
    assert [(e.task_id, e.reason) for e in summary.excluded] == [("c", "aborted")]


def pairs(listed: list[Listed]) -> list[tuple[str, str]]:
    return [(item.task_id, item.answer_name) for item in listed]


def test_a_missing_pair_scores_zero_in_its_run_and_is_listed() -> None:
    """The audit's case: leaving a task's answer_2 out must not lift answer_2 to 1.0."""
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    summary = compute_summary("agent", results)
    assert summary.partial_completion.per_run == {"answer_1": 0.5, "answer_2": 0.5}
    assert (summary.partial_completion.mean, summary.partial_completion.std) == (0.5, 0.0)
    assert summary.success_rate.per_run == {"answer_1": 0.5, "answer_2": 0.5}
    assert pairs(summary.missing) == [("b", "answer_2")]
    assert summary.per_task["b"].missing == ["answer_2"]


def test_a_missing_pair_is_not_a_success_for_pass_at_k() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    summary = compute_summary("agent", results)
    assert summary.pass_at_k.k == 2 and summary.pass_at_k.value == 0.5


def test_an_incomplete_pair_is_left_out_of_its_run_not_scored_zero() -> None:
    results = [
        res("a", "answer_1", 1.0),
        res("a", "answer_2", 1.0),
        res("b", "answer_1", 0.0),
        res("b", "answer_2", None, "incomplete"),
    ]
    summary = compute_summary("agent", results)
    assert summary.partial_completion.per_run == {"answer_1": 0.5, "answer_2": 1.0}
    assert summary.missing == [] and pairs(summary.incomplete) == [("b", "answer_2")]


def test_an_excluded_pair_is_left_out_of_its_run_not_scored_zero() -> None:
    results = [
        res("a", "answer_1", 1.0),
        res("a", "answer_2", 1.0),
        res("b", "answer_1", 0.0),
        res("b", "answer_2", None, "excluded"),
    ]
    summary = compute_summary("agent", results)
    assert summary.partial_completion.per_run == {"answer_1": 0.5, "answer_2": 1.0}
    assert summary.missing == [] and pairs(summary.excluded) == [("b", "answer_2")]


def test_a_run_with_only_incomplete_results_still_scores_its_missing_pairs_zero() -> None:
    """An incomplete result makes its answer name a run: the tasks with nothing in it are
    missing there, as they would be beside a complete result."""
    results = [
        res("a", "answer_1", 1.0),
        res("b", "answer_1", 1.0),
        res("a", "answer_2", None, "incomplete"),
    ]
    summary = compute_summary("agent", results)
    assert summary.runs == ["answer_1", "answer_2"]
    assert summary.partial_completion.per_run == {"answer_1": 1.0, "answer_2": 0.0}
    assert pairs(summary.missing) == [("b", "answer_2")]


def test_a_result_not_counted_creates_no_run() -> None:
    outdated = Listed(task_id="a", answer_name="answer_2", reason="outdated")
    summary = compute_summary("agent", [res("a", "answer_1", 1.0)], not_counted=[outdated])
    assert summary.runs == ["answer_1"] and summary.missing == []
    assert summary.partial_completion.per_run == {"answer_1": 1.0}


def test_a_result_not_counted_creates_no_task() -> None:
    gone = Listed(task_id="b", answer_name="answer_1", reason="its answer is gone")
    summary = compute_summary("agent", [res("a", "answer_1", 1.0)], not_counted=[gone])
    assert list(summary.per_task) == ["a"] and summary.missing == []
    assert summary.partial_completion.mean == 1.0 and summary.pass_at_k.value == 1.0


def test_a_result_not_counted_does_not_fill_its_pair_which_is_missing_and_says_why() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 1.0)]
    outdated = Listed(task_id="b", answer_name="answer_2", reason="outdated: run again")
    summary = compute_summary("agent", results, not_counted=[outdated])
    assert summary.partial_completion.per_run == {"answer_1": 1.0, "answer_2": 0.5}
    assert [(m.task_id, m.answer_name, m.reason) for m in summary.missing] == [
        ("b", "answer_2", "its result is not counted (outdated: run again): scored 0")
    ]


def test_table_marks_and_lists_missing_pairs() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    table = format_table(compute_summary("agent", results))
    assert "0 excluded, 1 missing)" in table
    assert "Partial Completion  0.5000 ± 0.0000" in table
    row = next(line for line in table.splitlines() if line.startswith("  b "))
    assert row.split()[1:3] == ["0.00", "missing"]
    assert "Missing (no answer; scored 0, as in Mind2Web 2): 1" in table
    assert "b/answer_2: no result: scored 0" in table


def nested_partial_root(levels: int, width: int) -> VerificationNode:
    """A root `levels` deep where each level has `width - 1` passed leaves and one child going
    deeper, the deepest a failed leaf: it scores 1 - width**-levels, below 1."""
    node = VerificationNode(id="deepest", desc="failed", score=0.0, status="failed")
    for level in range(levels):
        parent = VerificationNode(id=f"level_{level}", desc="level")
        for i in range(width - 1):
            parent.add_node(VerificationNode(id=f"ok_{level}_{i}", desc="ok", score=1.0))
        parent.add_node(node)
        node = parent
    return node


def test_a_partial_root_within_1e_9_of_one_is_not_a_success() -> None:
    """Success is a root score of exactly 1, the root the tree marks passed: a partial root
    just below 1 is no success for Success Rate or Pass@k, however close to 1 it is."""
    root = nested_partial_root(levels=10, width=10)
    score = root.compute_score(mutate=True)
    assert root.status == "partial" and 1.0 - 1e-9 < score < 1.0

    summary = compute_summary("agent", [res("a", "answer_1", score)])

    assert summary.success_rate.mean == 0.0
    assert summary.pass_at_k.value == 0.0
    assert summary.per_task["a"].passed is False


def test_a_full_pass_of_a_deep_tree_is_exactly_one_and_a_success() -> None:
    root = nested_partial_root(levels=10, width=10)
    for leaf in root.leaves():
        leaf.score = 1.0
    score = root.compute_score(mutate=True)

    summary = compute_summary("agent", [res("a", "answer_1", score)])

    assert score == 1.0 and root.status == "passed"
    assert summary.success_rate.mean == 1.0 and summary.pass_at_k.value == 1.0


def test_table_never_prints_a_score_below_one_as_one() -> None:
    """0.996 (one failed check of 250) is no success: printed as 1.00 it would read as one."""
    table = format_table(compute_summary("agent", [res("a", "answer_1", 0.996)]))

    (row,) = [line.split() for line in table.splitlines() if line.startswith("  a ")]
    assert row == ["a", "0.99", "0.99", "0.99"]
    assert "Success Rate        0.0000" in table


def test_per_task_best_and_average_cover_complete_runs() -> None:
    results = [
        res("a", "answer_1", 0.5),
        res("a", "answer_2", 1.0),
        res("a", "answer_3", None, "incomplete"),
    ]
    task = compute_summary("agent", results).per_task["a"]
    assert (task.best, task.average, task.passed) == (1.0, 0.75, True)
    assert task.incomplete == ["answer_3"]


def test_single_run_has_zero_std() -> None:
    summary = compute_summary("agent", [res("a", "answer_1", 0.5)])
    assert summary.partial_completion.std == 0.0 and summary.pass_at_k.k == 1


def test_no_complete_results_give_empty_metrics() -> None:
    summary = compute_summary("agent", [res("a", "answer_1", None, "incomplete")])
    assert summary.partial_completion.mean is None and summary.pass_at_k.value is None
    assert "Partial Completion  - ± -" in format_table(summary)


def test_runs_are_ordered_naturally() -> None:
    assert sorted(["answer_10", "answer_2", "answer_1"], key=run_order) == [
        "answer_1",
        "answer_2",
        "answer_10",
    ]


def test_the_summary_is_the_same_whatever_order_its_results_come_in() -> None:
    """A run's report holds its results as evaluations finish; names the natural order ties
    (`answer_01`, `answer_1`) must still be ordered one way, or summary.json changes from
    one identical run to the next."""
    results = [
        res("a", "answer_1", 1.0),
        res("a", "answer_01", 0.0),
        res("b", "answer_01", 0.5),
        res("b", "answer_1", None, "incomplete"),
    ]
    first = compute_summary("agent", results, answered={"a": {"answer_1", "answer_01"}})
    again = compute_summary("agent", results[::-1], answered={"a": {"answer_01", "answer_1"}})
    assert first.runs == ["answer_01", "answer_1"]
    assert first.model_dump_json() == again.model_dump_json()


def test_table_shows_scores_and_what_was_left_out() -> None:
    results = [res("a", "answer_1", 1.0), res("b", "answer_1", None, "incomplete")]
    table = format_table(compute_summary("agent", results))
    assert "Pass@1              1.0000" in table
    assert "incomplete" in table and "b/answer_1: LLMError: 529" in table


def test_table_says_how_many_llm_calls_counted_have_no_known_cost() -> None:
    head = full("a", "answer_1", None, "incomplete")
    head.usage = UsageTotals(llm_calls=3, cost_usd=0.25, unknown_cost_calls=2)
    table = format_table(compute_summary("agent", [ResultHead.of(head)]))
    assert "3 LLM calls (0 cached), 0 tokens, $0.2500 + 2 calls of unknown cost" in table


def test_table_says_which_attempts_its_cost_figures_cover() -> None:
    redone = full("a", "answer_1", 1.0)
    redone.usage = UsageTotals(llm_calls=3, cost_usd=0.5)
    redone.earlier_attempts = EarlierAttempts(attempts=2, usage=UsageTotals(cost_usd=0.25))
    summary = compute_summary("agent", [ResultHead.of(redone), res("b", "answer_1", 1.0)])
    assert summary.usage.cost_usd == 0.5 and summary.usage_all_attempts.cost_usd == 0.75
    lines = format_table(summary).splitlines()
    assert "  Usage (each result's last attempt): 0 backend calls, 3 LLM calls" in "\n".join(lines)
    (earlier,) = [line for line in lines if "Earlier" in line]
    assert earlier.startswith("  Earlier incomplete attempts these results redid: 2, ")
    assert earlier.endswith("$0.2500; all attempts $0.7500")


def answered_by(task: str, answer: str, **models: list[str]) -> ResultHead:
    """A complete result whose calls asking for each key were answered by its models."""
    head = full(task, answer, 1.0)
    head.usage = UsageTotals(answered_by={k.replace("_", "-"): v for k, v in models.items()})
    return ResultHead.of(head)


def test_the_summary_counts_the_results_each_answering_model_answered() -> None:
    results = [
        answered_by("a", "answer_1", o4_mini=["o4-mini-1"]),
        answered_by("b", "answer_1", o4_mini=["o4-mini-1", "o4-mini-2"], gpt_4=["gpt-4-0613"]),
        answered_by("c", "answer_1", o4_mini=["o4-mini-2"]),
        res("d", "answer_1", 1.0),  # recorded none (written before judgegen recorded it)
    ]
    summary = compute_summary("agent", results)
    assert summary.answered_by == {
        "gpt-4": {"gpt-4-0613": 1},
        "o4-mini": {"o4-mini-1": 2, "o4-mini-2": 2},
    }
    assert summary.mixed_snapshots == {"o4-mini": {"o4-mini-1": 2, "o4-mini-2": 2}}
    assert summary.model_dump(mode="json")["mixed_snapshots"] == summary.mixed_snapshots


def test_one_snapshot_per_model_asked_for_is_not_mixed() -> None:
    results = [answered_by(t, "answer_1", o4_mini=["o4-mini-1"]) for t in ("a", "b")]
    summary = compute_summary("agent", results)
    assert summary.mixed_snapshots == {}
    assert "WARNING" not in format_table(summary)


def test_table_warns_when_one_model_asked_for_was_answered_by_two() -> None:
    results = [
        answered_by("a", "answer_1", o4_mini=["o4-mini-1"]),
        answered_by("b", "answer_1", o4_mini=["o4-mini-2"]),
    ]
    table = format_table(compute_summary("agent", results))
    assert "WARNING: results asking for o4-mini were answered by 2 models" in table
    assert "o4-mini-1 (1), o4-mini-2 (1)" in table


def test_table_warns_when_the_results_were_judged_by_two_models() -> None:
    """Say a `--task` run with another --model: the other tasks' results count as they are,
    so the metrics mix two judges, as Mind2Web 2's report warns."""
    other = full("b", "answer_1", 0.5).model_copy(update={"judge_model": "n"})
    summary = compute_summary("agent", [res("a", "answer_1", 1.0), ResultHead.of(other)])
    assert summary.judge_models == {"m": 1, "n": 1}
    assert "WARNING: the complete results were judged by 2 models: m (1), n (1)" in format_table(
        summary
    )


def test_table_warns_of_unreviewed_results_counted_without_the_flag() -> None:
    summary = compute_summary("agent", [res("a", "answer_1", 1.0)], include_unreviewed=False)
    summary.unreviewed_results = 1
    table = format_table(summary)
    assert "WARNING: 1 results come from unreviewed judges (judged earlier with" in table


def test_table_of_an_include_unreviewed_run_warns_without_pointing_at_earlier_runs() -> None:
    summary = compute_summary("agent", [res("a", "answer_1", 1.0)], include_unreviewed=True)
    summary.unreviewed_results = 1
    assert format_table(summary).splitlines()[-1] == (
        "  WARNING: 1 results come from unreviewed judges"
    )


def test_table_of_reviewed_results_has_no_unreviewed_warning() -> None:
    assert "unreviewed" not in format_table(compute_summary("agent", [res("a", "answer_1", 1.0)]))


def test_a_pair_whose_answer_exists_without_a_counted_result_is_left_out_not_scored_0() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    answered = {"a": {"answer_1", "answer_2"}, "b": {"answer_1", "answer_2"}}
    summary = compute_summary("agent", results, answered=answered)
    assert summary.missing == []
    assert [(m.task_id, m.answer_name) for m in summary.not_evaluated] == [("b", "answer_2")]
    assert summary.partial_completion.per_run == {"answer_1": 0.5, "answer_2": 1.0}
    assert "Not evaluated (the answer exists; left out): 1" in format_table(summary)


def test_the_tables_first_line_counts_the_pairs_left_out_unevaluated() -> None:
    """Beside complete, incomplete, excluded and missing: a stopped run's metrics cover only
    part of the answers, which the line the eye reads first must say."""
    results = [res("a", "answer_1", 1.0), res("b", "answer_1", 0.0)]
    answered = {"a": {"answer_1", "answer_2"}, "b": {"answer_1", "answer_2"}}
    summary = compute_summary("agent", results, answered=answered)
    first = format_table(summary).splitlines()[0]
    assert first.endswith("(2 complete, 0 incomplete, 0 excluded, 2 not evaluated)")


def test_a_pair_the_agent_has_no_answer_for_is_scored_0_when_its_answers_are_known() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    answered = {"a": {"answer_1", "answer_2"}, "b": {"answer_1"}}
    summary = compute_summary("agent", results, answered=answered)
    assert [(m.task_id, m.answer_name) for m in summary.missing] == [("b", "answer_2")]
    assert summary.not_evaluated == []
    assert (summary.partial_completion.mean, summary.partial_completion.std) == (0.5, 0.0)


def test_a_pair_of_a_task_this_run_did_not_check_is_left_out() -> None:
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 1.0), res("b", "answer_1", 0.0)]
    summary = compute_summary("agent", results, answered={"a": {"answer_1", "answer_2"}})
    assert summary.missing == []
    (left_out,) = summary.not_evaluated
    assert (left_out.task_id, left_out.answer_name) == ("b", "answer_2")
    assert "not checked by this run" in left_out.reason


def test_a_removed_task_scores_0_in_every_run_and_fails_pass_at_k() -> None:
    """A task whose answers were all removed (its result files are not counted) is still a
    task of the agent: as in Mind2Web 2, a task without an answer scores 0."""
    results = [res("a", "answer_1", 1.0), res("a", "answer_2", 0.0)]
    gone = [Listed(task_id="b", answer_name=r, reason="its answer is gone") for r in ("answer_1",)]
    summary = compute_summary(
        "agent",
        results,
        not_counted=gone,
        removed_tasks=["b"],
        answered={"a": {"answer_1", "answer_2"}},
    )
    assert summary.removed_tasks == ["b"] and summary.not_evaluated == []
    assert summary.per_task["b"].missing == ["answer_1", "answer_2"]
    assert summary.partial_completion.per_run == {"answer_1": 0.5, "answer_2": 0.0}
    assert summary.pass_at_k.value == 0.5
    assert "its result is not counted (its answer is gone): scored 0" in format_table(summary)


def test_an_answer_of_a_task_or_run_without_any_counted_result_is_listed_as_not_evaluated() -> None:
    """A stopped run that never judged task c, nor any answer_3, adds no task or run, but
    the summary still says those answers exist and were left out."""
    results = [res("a", "answer_1", 1.0), res("b", "answer_1", 0.0)]
    answered = {"a": {"answer_1", "answer_3"}, "b": {"answer_1"}, "c": {"answer_1"}}
    summary = compute_summary("agent", results, answered=answered)
    listed = [(m.task_id, m.answer_name) for m in summary.not_evaluated]
    assert listed == [("a", "answer_3"), ("c", "answer_1")]
    assert all(m.reason.endswith("the run stopped first): left out") for m in summary.not_evaluated)
    assert (summary.runs, sorted(summary.per_task)) == (["answer_1"], ["a", "b"])
    assert summary.partial_completion.per_run == {"answer_1": 0.5}


def test_answers_of_a_held_back_judge_are_not_listed_as_not_evaluated() -> None:
    """Their task's judge did not run: it is listed under skipped judges, not as a stop."""
    held = SkippedJudge(task_id="c", reason="not approved")
    summary = compute_summary(
        "agent",
        [res("a", "answer_1", 1.0)],
        skipped_judges=[held],
        answered={"a": {"answer_1"}, "c": {"answer_1"}},
    )
    assert summary.not_evaluated == []
