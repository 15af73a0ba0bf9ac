"""`judgegen validate`: agreement with human labels, and the CI gate it makes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from generator.cli.rerun import rerun_note
from tests.fixtures.cli_flags import flags_named, flags_of, stop_lines
from tests.fixtures.review.helpers import BACKEND, TASK, invoke, workspace
from tests.fixtures.review.scripted import page_store

RUN = ["--backend", BACKEND, "--pages", "pages", "--no-sandbox"]
K2_PAGE = "https://peaks.example/k2"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workspace(tmp_path))
    return tmp_path


def _label(work: Path, name: str, text: str) -> None:
    (work / "tasks" / TASK / "labels" / name).write_text(text)


def test_validate_reports_node_and_root_agreement_per_labelled_answer(work: Path) -> None:
    result = invoke(["validate", *RUN])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "first_ascents/good.md: nodes 5/5 agree; root 1 (labelled 1) agrees",
        "first_ascents/wrong.md: nodes 5/5 agree",
        "node agreement 1.000 (10/10); root agreement 1.000 (1/1)",
    ]


def test_gate_passes_when_the_judge_agrees_with_the_labels(work: Path) -> None:
    result = invoke(["validate", TASK, "--min-agreement", "0.95", *RUN])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "gate --min-agreement 0.95: passed"


def test_gate_fails_on_a_deliberately_wrong_label(work: Path) -> None:
    _label(work, "wrong.yaml", "nodes:\n  everest_date: pass\n  k2_date: pass\n")
    result = invoke(["validate", TASK, "--min-agreement", "0.9", *RUN])
    assert result.exit_code == 1
    assert "first_ascents/wrong.md: nodes 1/2 agree" in result.stdout
    assert "  disagrees k2_date: labelled pass, judge fail" in result.stdout
    assert "node agreement 0.857 (6/7)" in result.stdout
    assert "gate --min-agreement 0.9: FAILED: node agreement 0.857 < 0.9" in result.stdout


def test_a_wrong_root_label_fails_the_gate_too(work: Path) -> None:
    _label(work, "good.yaml", "root_score: 0.5\n")
    result = invoke(["validate", TASK, "--min-agreement", "0.9", "--json", *RUN])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    good = data["tasks"][0]["answers"][0]
    assert (good["answer"], good["root_expected"], good["root_actual"]) == ("good.md", 0.5, 1.0)
    assert good["root_agrees"] is False
    assert data["root_agreement"] == 0.0
    assert data["passed"] is False
    assert "root agreement 0.000 < 0.9" in data["failures"]


def test_labels_naming_nodes_the_judge_lacks_are_reported_and_fail_the_gate(work: Path) -> None:
    _label(work, "wrong.yaml", "nodes:\n  k2_date: fail\n  k2_summit_photo: pass\n")
    result = invoke(["validate", TASK, "--min-agreement", "0", *RUN])
    assert result.exit_code == 1
    assert "  unknown node id k2_summit_photo: not in the judge's tree" in result.stdout
    assert "1 label(s) name nodes the judge lacks" in result.stdout


def test_tasks_without_labels_are_listed_not_failed(work: Path) -> None:
    shutil.copytree(work / "tasks" / TASK, work / "tasks" / "unlabelled_task")
    spec = work / "tasks" / "unlabelled_task" / "task.yaml"
    spec.write_text(spec.read_text().replace("id: first_ascents", "id: unlabelled_task"))
    shutil.rmtree(work / "tasks" / "unlabelled_task" / "labels")
    result = invoke(["validate", "--min-agreement", "1", *RUN])
    assert result.exit_code == 0, result.stderr
    assert "tasks without labels: unlabelled_task" in result.stdout


def test_json_report_has_totals_and_per_answer_agreement(work: Path) -> None:
    result = invoke(["validate", TASK, "--json", *RUN])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["version"] == 3
    assert (data["nodes_labelled"], data["nodes_agreeing"], data["node_agreement"]) == (10, 10, 1)
    assert [a["answer"] for a in data["tasks"][0]["answers"]] == ["good.md", "wrong.md"]
    assert data["passed"] is None


def test_an_invalid_label_file_is_a_usage_error(work: Path) -> None:
    _label(work, "good.yaml", "nodes:\n  k2_date: maybe\n")
    result = invoke(["validate", TASK, *RUN])
    assert result.exit_code == 2
    assert "good.yaml" in result.stderr


def test_a_label_for_a_missing_answer_is_a_problem(work: Path) -> None:
    _label(work, "gone.yaml", "root_score: 1\n")
    result = invoke(["validate", TASK, *RUN])
    assert result.exit_code == 1
    assert "first_ascents: problem: labels name answer gone.md, which does not exist" in (
        result.stdout
    )


def test_an_llm_outage_is_an_infrastructure_failure_not_a_disagreement(work: Path) -> None:
    outage = "tests.fixtures.review.scripted:outage_backend"
    result = invoke(["validate", TASK, "--backend", outage, "--pages", "pages", "--no-sandbox"])
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "evaluation incomplete" in result.stderr
    assert "scripted outage: 529 overloaded" in result.stderr
    assert rerun_note("validate", None) in result.stderr.splitlines()
    assert flags_named(stop_lines(result.stderr)) <= flags_of("validate")


def test_gate_fails_when_nothing_is_labelled(work: Path) -> None:
    shutil.rmtree(work / "tasks" / TASK / "labels")
    result = invoke(["validate", "--min-agreement", "0.9", *RUN])
    assert result.exit_code == 1, result.stdout
    assert "FAILED: nothing labelled was compared" in result.stdout


def test_a_misspelled_task_id_suggests_the_closest_task(work: Path) -> None:
    result = invoke(["validate", "first_ascent", *RUN])
    assert result.exit_code == 2
    assert f"did you mean `{TASK}`?" in result.stderr


def test_two_label_files_for_one_answer_are_an_input_error_naming_both(work: Path) -> None:
    _label(work, "a_second_reading.yaml", "answer: wrong.md\nnodes:\n  k2_date: pass\n")
    result = invoke(["validate", TASK, "--min-agreement", "0.9", *RUN])
    assert result.exit_code == 2, result.stdout
    assert "a_second_reading.yaml" in result.stderr and "wrong.yaml" in result.stderr
    assert "merge the two label files into one" in result.stderr


def test_a_yml_label_file_is_compared(work: Path) -> None:
    _label(work, "partial.yml", "nodes:\n  k2_cited: pass\n")
    result = invoke(["validate", TASK, "--min-agreement", "0.95", *RUN])
    assert result.exit_code == 1
    assert "first_ascents/partial.md: nodes 0/1 agree" in result.stdout
    assert "  disagrees k2_cited: labelled pass, judge fail" in result.stdout


def test_a_label_file_labels_the_answer_of_its_name_whatever_its_extension(work: Path) -> None:
    answers = work / "tasks" / TASK / "answers"
    (answers / "wrong.md").rename(answers / "wrong.txt")
    result = invoke(["validate", TASK, "--min-agreement", "0.9", *RUN])
    assert result.exit_code == 0, result.stdout
    assert "first_ascents/wrong.txt: nodes 5/5 agree" in result.stdout


def test_labelled_answers_citing_pages_need_a_page_store(work: Path) -> None:
    result = invoke(["validate", TASK, "--backend", BACKEND, "--no-sandbox"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "first_ascents/good.md, first_ascents/wrong.md" in result.stderr
    assert "no page store was given" in result.stderr and "--pages DIR" in result.stderr


def test_a_cited_page_missing_from_the_store_is_named_beside_the_agreement(work: Path) -> None:
    page_store(work / "partial-pages", without={K2_PAGE})
    result = invoke(
        ["validate", TASK, "--backend", BACKEND, "--pages", "partial-pages", "--no-sandbox"]
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("first_ascents/wrong.md: nodes 5/5 agree")
    assert lines[at + 1] == (
        "  judged without 1 cited page(s) missing from the page store (unsupported, never "
        f"read): {K2_PAGE}"
    )
    assert "warning: 1 cited page(s) missing from the page store" in result.stdout


def test_json_report_lists_each_answers_missing_pages(work: Path) -> None:
    page_store(work / "partial-pages", without={K2_PAGE})
    result = invoke(
        [
            "validate",
            TASK,
            "--json",
            "--backend",
            BACKEND,
            "--pages",
            "partial-pages",
            "--no-sandbox",
        ]
    )
    data = json.loads(result.stdout)
    missing = {a["answer"]: a["missing_pages"] for a in data["tasks"][0]["answers"]}
    assert missing == {"good.md": [K2_PAGE], "wrong.md": [K2_PAGE]}


def test_tasks_with_a_markdown_spec_are_validated_too(work: Path) -> None:
    task = work / "tasks" / "ascents_md"
    shutil.copytree(work / "tasks" / TASK, task)
    spec = (task / "task.yaml").read_text().replace("id: first_ascents", "id: ascents_md")
    front, _, guidance = spec.partition("rubric_guidance: |\n")
    guidance, _, rest = guidance.partition("ground_truth:")
    (task / "task.md").write_text(f"---\n{front}ground_truth:{rest}---\n\n{guidance}")
    (task / "task.yaml").unlink()
    judge = (work / "generated_judges" / f"{TASK}.py").read_text()
    (work / "generated_judges" / "ascents_md.py").write_text(judge)
    (task / "labels" / "wrong.yaml").write_text("nodes:\n  k2_date: pass\n")
    result = invoke(["validate", "--min-agreement", "0.95", *RUN])
    assert result.exit_code == 1, result.stdout
    assert "ascents_md/wrong.md: nodes 0/1 agree" in result.stdout


SELF_READING = Path(__file__).parents[1] / "fixtures/review/judges/first_ascents_self_reading.py"


def test_a_page_the_judge_read_itself_and_found_missing_is_named_beside_its_disagreement(
    work: Path,
) -> None:
    """The judge reads K2's page with `ev.pages.get`, so the summary's `missing_sources` is
    empty; the page-read log, which `mutate` and acceptance use, names the page."""
    shutil.copy(SELF_READING, work / "generated_judges" / f"{TASK}.py")
    (work / "tasks" / TASK / "labels" / "wrong.yaml").unlink()
    _label(work, "good.yaml", "nodes:\n  k2_climbers: pass\n")
    page_store(work / "partial-pages", without={K2_PAGE})
    args = ["validate", TASK, "--backend", BACKEND, "--pages", "partial-pages", "--no-sandbox"]
    result = invoke(args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "first_ascents/good.md: nodes 0/1 agree",
        "  disagrees k2_climbers: labelled pass, judge fail",
        "  judged without 1 cited page(s) missing from the page store (unsupported, never "
        f"read): {K2_PAGE}",
    ]
    data = json.loads(invoke([*args, "--json"]).stdout)
    assert data["tasks"][0]["answers"][0]["missing_pages"] == [K2_PAGE]
