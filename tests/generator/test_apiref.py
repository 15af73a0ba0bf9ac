"""generator.stages.apiref: the reference is complete, deterministic, and follows the toolkit's code."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.stages import apiref
from generator.stages.apiref import (
    EVALUATOR_METHODS,
    JUDGE_CONSTANTS,
    public_check_names,
    render_api_reference,
    render_signature,
)
from toolkit import checks
from toolkit.backends import ScriptedBackend
from toolkit.evaluator import Evaluator
from toolkit.runner import loader
from toolkit.tree import AggregationStrategy, VerificationNode

REPO = Path(__file__).resolve().parents[2]


def _example_code(reference: str) -> str:
    match = re.search(r"## The judge contract.*?```python\n(.*?)```", reference, re.S)
    assert match is not None
    return match.group(1)


def test_two_renders_are_identical() -> None:
    assert render_api_reference() == render_api_reference()


def test_render_in_a_fresh_interpreter_is_byte_identical() -> None:
    code = "import sys; from generator.stages.apiref import render_api_reference as r; "
    code += "sys.stdout.buffer.write(r().encode('utf-8'))"
    fresh = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    ).stdout
    assert fresh == render_api_reference().encode("utf-8")


def test_reference_has_no_addresses_or_absolute_paths() -> None:
    reference = render_api_reference()
    assert not re.search(r"0x[0-9a-f]{6,}", reference)
    assert str(REPO) not in reference
    assert "site-packages" not in reference


@pytest.mark.parametrize("name", EVALUATOR_METHODS)
def test_every_evaluator_method_is_listed_with_its_signature(name: str) -> None:
    reference = render_api_reference()
    method = getattr(Evaluator, name)
    assert f"### `ev.{name}`" in reference
    assert render_signature(method, drop_self=True) in reference
    assert inspect.cleandoc(method.__doc__) in reference


def test_async_methods_are_rendered_as_async() -> None:
    reference = render_api_reference()
    assert "async def extract(" in reference
    assert "async def verify(" in reference
    assert "async def batch_verify(" in reference
    assert "async def add_leaf(" not in reference


def test_method_signatures_drop_self_and_keep_annotations_as_written() -> None:
    rendered = render_signature(Evaluator.find_node, drop_self=True)
    assert rendered == "def find_node(node_id: str) -> VerificationNode | None"


def test_keyword_only_marker_is_rendered() -> None:
    assert "    *,\n    extra_prerequisites:" in render_signature(Evaluator.verify, drop_self=True)


def test_enum_defaults_render_without_object_repr() -> None:
    def sample(strategy: AggregationStrategy = AggregationStrategy.SEQUENTIAL) -> None:
        """Sample."""

    assert "strategy: AggregationStrategy = AggregationStrategy.SEQUENTIAL" in (
        render_signature(sample)
    )


def test_positional_only_and_var_args_are_rendered() -> None:
    def sample(a: int, /, *args: str, b: int = 1, **kwargs: object) -> None:
        """Sample."""

    rendered = render_signature(sample)
    assert rendered == "def sample(a: int, /, *args: str, b: int = 1, **kwargs: object) -> None"


def test_object_defaults_render_as_their_type_name_only() -> None:
    marker = object()

    def sample(x: object = marker) -> None:
        """Sample."""

    assert render_signature(sample) == "def sample(x: object = <object>) -> None"


@pytest.mark.parametrize("name", public_check_names())
def test_every_public_check_is_listed_with_signature_and_full_docstring(name: str) -> None:
    reference = render_api_reference()
    function = getattr(checks, name)
    assert f"### `checks.{name}`" in reference
    assert render_signature(function) in reference
    assert inspect.cleandoc(function.__doc__) in reference


def test_public_check_names_cover_all_exports() -> None:
    assert sorted(public_check_names()) == sorted(checks.__all__)


def test_checks_are_listed_in_definition_order() -> None:
    names = public_check_names()
    assert names.index("parse_date") < names.index("same_date") < names.index("page_contains")


def test_verification_node_fields_are_listed() -> None:
    reference = render_api_reference()
    for name in VerificationNode.model_fields:
        assert f"- `{name}: " in reference
    assert "- `critical: bool` = `False`" in reference
    assert "- `strategy: AggregationStrategy` = `AggregationStrategy.PARALLEL`" in reference
    assert "`passed`, `failed`, `partial`, `skipped`, `initialized`, `error`" in reference


def test_aggregation_strategies_and_scoring_rules_are_listed() -> None:
    reference = render_api_reference()
    for member in AggregationStrategy:
        assert f"`AggregationStrategy.{member.name}` = `'{member.value}'`" in reference
    assert "gate then average" in reference


def test_judge_contract_lists_the_entry_point_and_constants() -> None:
    reference = render_api_reference()
    assert "`async def evaluate(ev: Evaluator) -> None`" in reference
    for name, _ in JUDGE_CONSTANTS:
        assert f"- `{name}`:" in reference


@pytest.mark.parametrize("name", [name for name, _ in JUDGE_CONSTANTS])
def test_every_contract_constant_is_read_by_the_runner(name: str) -> None:
    assert f'"{name}"' in inspect.getsource(loader)


async def test_contract_example_is_a_working_judge() -> None:
    namespace: dict[str, object] = {}
    exec(compile(_example_code(render_api_reference()), "example_judge", "exec"), namespace)
    extraction = {"name": "v1", "date": "Dec 7, 2023", "url": "https://example.com/v1"}
    backend = ScriptedBackend(extract=lambda request: extraction, verify=lambda request: True)
    ev = Evaluator.create(
        task_id=str(namespace["TASK_ID"]),
        task_description=str(namespace["TASK_DESCRIPTION"]),
        answer="v1 shipped on Dec 7, 2023 (https://example.com/v1)",
        backend=backend,
    )
    await namespace["evaluate"](ev)  # type: ignore[operator]
    assert ev.score() == 1.0
    assert ev.find_node("release_date_correct").status == "passed"  # type: ignore[union-attr]


def test_reference_changes_when_a_check_docstring_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = render_api_reference()
    monkeypatch.setattr(checks.same_date, "__doc__", "A rewritten docstring for the test.")
    after = render_api_reference()
    assert after != before
    assert "A rewritten docstring for the test." in after


def test_reference_changes_when_an_evaluator_docstring_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = render_api_reference()
    monkeypatch.setattr(Evaluator.find_node, "__doc__", "Rewritten find_node doc.")
    assert render_api_reference() != before


def test_reference_follows_a_new_public_check(monkeypatch: pytest.MonkeyPatch) -> None:
    def same_colour(a: str | None, b: str | None) -> bool:
        """True when both name the same colour."""
        return a == b

    same_colour.__module__ = checks.__name__
    monkeypatch.setattr(checks, "same_colour", same_colour, raising=False)
    monkeypatch.setattr(checks, "__all__", [*checks.__all__, "same_colour"])
    assert "def same_colour(a: str | None, b: str | None) -> bool" in render_api_reference()


def test_cli_prints_the_reference_to_stdout() -> None:
    result = CliRunner().invoke(main, ["docs"])
    assert result.exit_code == 0
    assert result.stdout == render_api_reference()


def test_cli_writes_the_reference_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "api.md"
    result = CliRunner().invoke(main, ["docs", "--output", str(target)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert target.read_text(encoding="utf-8") == render_api_reference()
    assert "wrote the API reference" in result.stderr


def test_cli_reports_an_unwritable_output_as_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "api.md"
    result = CliRunner().invoke(main, ["docs", "--output", str(target)])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr


def test_module_keeps_no_mutable_state() -> None:
    assert isinstance(apiref.EVALUATOR_METHODS, tuple)
    assert isinstance(apiref.JUDGE_CONSTANTS, tuple)
