"""Context stage: which example judges the model sees, and the generated reference texts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from generator.stages.context import build_context, bundled_examples, choose_examples
from generator.stages.spec import load_spec
from toolkit.runner.approval import approve

ROOT = Path(__file__).resolve().parents[2]
JUDGE = '"""Judge {name}."""\n\nTASK_ID = "{name}"\n'


def judges(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    judges_dir, reviews_dir = tmp_path / "generated_judges", tmp_path / "reviews"
    judges_dir.mkdir()
    reviews_dir.mkdir()
    for name in names:
        (judges_dir / f"{name}.py").write_text(
            "# judgegen-provenance: model=m\n" + JUDGE.format(name=name)
        )
    return judges_dir, reviews_dir


def approve_judge(judges_dir: Path, reviews_dir: Path, name: str) -> None:
    approve(
        name,
        reviewer="Ada",
        judges_dir=judges_dir,
        reviews_dir=reviews_dir,
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_without_reviewed_judges_the_bundled_examples_are_used(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "alpha")
    chosen = choose_examples(judges_dir, reviews_dir, "new_task")
    assert [e.origin for e in chosen] == ["bundled"]
    assert chosen[0].task_id == bundled_examples()[0].task_id


def test_approved_judges_come_first_without_their_header(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "alpha", "beta", "gamma")
    approve_judge(judges_dir, reviews_dir, "beta")
    chosen = choose_examples(judges_dir, reviews_dir, "new_task", limit=2)
    assert [(e.task_id, e.origin) for e in chosen] == [
        ("beta", "reviewed"),
        ("paper_venue", "bundled"),
    ]
    assert not chosen[0].source.startswith("# judgegen-provenance")


def test_a_judge_edited_after_approval_is_not_an_example(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "beta")
    approve_judge(judges_dir, reviews_dir, "beta")
    (judges_dir / "beta.py").write_text("TASK_ID = 'beta'  # edited\n")
    assert [e.origin for e in choose_examples(judges_dir, reviews_dir, "x")] == ["bundled"]


def test_the_task_being_generated_is_never_its_own_example(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "beta")
    approve_judge(judges_dir, reviews_dir, "beta")
    assert all(e.task_id != "beta" for e in choose_examples(judges_dir, reviews_dir, "beta"))


def test_examples_are_bounded_to_three(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "a1", "a2", "a3", "a4")
    for name in ("a1", "a2", "a3", "a4"):
        approve_judge(judges_dir, reviews_dir, name)
    assert len(choose_examples(judges_dir, reviews_dir, "x", limit=9)) == 3


def test_context_carries_the_generated_reference_and_catalog(tmp_path: Path) -> None:
    loaded = load_spec(ROOT / "tasks" / "rust_2024_edition")
    context = build_context(loaded, judges_dir=tmp_path, reviews_dir=tmp_path)
    prefix = context.system_block().text
    assert "add_custom_node" in prefix and "JG004" in prefix
    assert (
        context.system_block()
        == build_context(loaded, judges_dir=tmp_path, reviews_dir=tmp_path).system_block()
    )


def test_bundled_examples_pass_the_lint_stage() -> None:
    from generator.stages.lint import lint_source

    for example in bundled_examples():
        report = lint_source(example.source, f"{example.task_id}.py")
        assert report.ok, report.render()


def test_examples_are_chosen_by_similarity_to_the_spec(tmp_path: Path) -> None:
    judges_dir, reviews_dir = judges(tmp_path, "dates_and_domains", "plain_names")
    (judges_dir / "dates_and_domains.py").write_text(
        "TASK_ID = 'dates_and_domains'\n"
        "ok = checks.url_in_domain(u, 'blog.example.org') and checks.same_date(d, '2024-01-01')\n"
    )
    (judges_dir / "plain_names.py").write_text("TASK_ID = 'plain_names'\nok = name == 'Ada'\n")
    for name in ("dates_and_domains", "plain_names"):
        approve_judge(judges_dir, reviews_dir, name)
    spec = "When was it released? Link the official announcement on blog.example.org."
    chosen = choose_examples(judges_dir, reviews_dir, "new_task", limit=1, spec_text=spec)
    assert [e.task_id for e in chosen] == ["dates_and_domains"]
    unranked = choose_examples(judges_dir, reviews_dir, "new_task", limit=1)
    assert [e.task_id for e in unranked] == ["dates_and_domains"]  # by task id without a spec
