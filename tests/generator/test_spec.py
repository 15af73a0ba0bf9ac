"""Task specs: what loads, what is rejected (naming file, field and fix), and `judgegen new`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.stages.spec import load_spec, parse_spec, scaffold_text, spec_sha256
from toolkit.errors import SpecError

VALID = """\
version: 1
id: demo_task
description: Find the thing.
rubric_guidance: The answer names the thing (critical).
ground_truth: {thing: x}
"""


def make_task(root: Path, text: str = VALID, answers: dict[str, str] | None = None) -> Path:
    task = root / "tasks" / "demo_task"
    (task / "answers").mkdir(parents=True)
    (task / "task.yaml").write_text(text)
    for name, body in (answers if answers is not None else {"good": "It is x."}).items():
        (task / "answers" / f"{name}.md").write_text(body)
    return task


def test_valid_spec_loads_with_sorted_answers_and_labels(tmp_path: Path) -> None:
    task = make_task(tmp_path, answers={"wrong": "y", "good": "x"})
    (task / "labels").mkdir()
    (task / "labels" / "good.json").write_text("{}")
    loaded = load_spec("demo_task", tmp_path / "tasks")
    assert loaded.task_id == "demo_task"
    assert [a.name for a in loaded.answers] == ["good", "wrong"]
    assert loaded.spec.ground_truth == {"thing": "x"}
    assert [Path(p).name for p in loaded.label_files] == ["good.json"]


def test_unknown_field_is_rejected_with_file_field_and_fix(tmp_path: Path) -> None:
    make_task(tmp_path, VALID + "rubric: oops\n")
    with pytest.raises(SpecError) as info:
        load_spec("demo_task", tmp_path / "tasks")
    assert info.value.field == "rubric"
    assert info.value.file.endswith("task.yaml")
    assert "remove 'rubric'" in info.value.fix and "notes" in info.value.fix


def test_missing_required_field_names_it(tmp_path: Path) -> None:
    make_task(
        tmp_path, VALID.replace("rubric_guidance: The answer names the thing (critical).\n", "")
    )
    with pytest.raises(SpecError) as info:
        load_spec("demo_task", tmp_path / "tasks")
    assert info.value.field == "rubric_guidance"
    assert "add 'rubric_guidance:'" in info.value.fix


def test_id_must_match_the_folder(tmp_path: Path) -> None:
    make_task(tmp_path, VALID.replace("id: demo_task", "id: other_task"))
    with pytest.raises(SpecError, match="differs from the folder name"):
        load_spec("demo_task", tmp_path / "tasks")


def test_id_must_be_a_module_name() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(VALID.replace("id: demo_task", "id: Demo-Task"), "task.yaml")
    assert info.value.field == "id"


def test_a_task_without_sample_answers_is_rejected(tmp_path: Path) -> None:
    make_task(tmp_path, answers={})
    with pytest.raises(SpecError) as info:
        load_spec("demo_task", tmp_path / "tasks")
    assert info.value.field == "answers/"


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("id: [unclosed\n", "task.yaml")
    assert info.value.field.startswith("line ")


def test_missing_spec_file_suggests_judgegen_new(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="judgegen new nothing_here"):
        load_spec("nothing_here", tmp_path)


def test_hash_ignores_comments_and_formatting() -> None:
    plain = parse_spec(VALID, "a.yaml")
    commented = parse_spec("# a comment\n" + VALID.replace("{thing: x}", "\n  thing: x"), "b.yaml")
    assert spec_sha256(plain) == spec_sha256(commented)
    assert spec_sha256(plain) != spec_sha256(parse_spec(VALID + "notes: n\n", "c.yaml"))


def test_scaffold_explains_every_field_and_rejects_todos() -> None:
    text = scaffold_text("my_task")
    for field in (
        "version",
        "id",
        "description",
        "rubric_guidance",
        "ground_truth",
        "notes",
        "time_varying",
    ):
        assert f"\n{field}:" in text
    with pytest.raises(SpecError, match="TODO"):
        parse_spec(text, "task.yaml")


def test_filled_scaffold_loads() -> None:
    text = scaffold_text("my_task").replace("TODO: ", "")
    assert parse_spec(text, "task.yaml").id == "my_task"


def test_new_command_creates_spec_and_answers_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["new", "my_task", "--tasks-dir", str(tmp_path)])
    assert result.exit_code == 0
    assert result.stdout.strip() == str(tmp_path / "my_task" / "task.yaml")
    assert (tmp_path / "my_task" / "answers").is_dir()


def test_new_command_refuses_to_overwrite(tmp_path: Path) -> None:
    CliRunner().invoke(main, ["new", "my_task", "--tasks-dir", str(tmp_path)])
    result = CliRunner().invoke(main, ["new", "my_task", "--tasks-dir", str(tmp_path)])
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_markdown_spec_body_is_the_rubric_guidance(tmp_path: Path) -> None:
    task = make_task(tmp_path, VALID)
    (task / "task.yaml").unlink()
    front = VALID.replace("rubric_guidance: The answer names the thing (critical).\n", "")
    (task / "task.md").write_text(f"---\n{front}---\n\n- The answer names the thing (critical).\n")
    loaded = load_spec("demo_task", tmp_path / "tasks")
    assert loaded.spec.rubric_guidance == "- The answer names the thing (critical).\n"


def test_markdown_spec_without_closing_marker_is_rejected() -> None:
    with pytest.raises(SpecError, match="no closing '---'"):
        parse_spec("---\nid: demo_task\n", "task.md", markdown=True)
