"""A cited page longer than the judging backend's page limit is judged on its beginning only:
the result, the run's warning and its --json record say which, so a claim supported further
on that counts as unsupported is never a silent verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.runner.helpers import lengthen_page, run_args, self_reading_judge
from toolkit.backends import LLMBackend

LONG = "https://www.louvre.fr/en/visit/hours-admission"  # cited by alpha's louvre_hours/answer_1
POLICY = "scripted:tests.fixtures.runner.llm_policy:policy"
LIMIT = LLMBackend.__init__.__kwdefaults__["max_page_chars"]


def _lengthen(work: Path, url: str) -> None:
    lengthen_page(work / "pages", url, LIMIT)


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandbox"])
def test_a_page_longer_than_the_limit_is_named_in_the_result_the_warning_and_the_record(
    work: Path, sandbox: bool
) -> None:
    _lengthen(work, LONG)
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(work, "--include-unreviewed", "--json", "--cache-mode", "off", *mode)
    args = [a for a in args if a not in ("--backend", "tests.fixtures.runner.scripted:factory")]
    done = CliRunner().invoke(main, [*args, "--provider", POLICY], catch_exceptions=False)
    assert done.exit_code in (0, 1), done.stderr
    record = json.loads(done.stdout)
    assert record["clipped_pages"]["alpha/louvre_hours/answer_1"] == [LONG]
    assert all(urls == [LONG] for urls in record["clipped_pages"].values())
    result = json.loads((work / "results/alpha/louvre_hours/answer_1.json").read_text())
    assert result["clipped_pages"] == [LONG]
    assert "longer than the judging backend's page limit" in done.stderr
    python = json.loads((work / "results/alpha/python_match/answer_1.json").read_text())
    assert python["clipped_pages"] == []  # its pages are short


def test_pages_within_the_limit_make_no_warning(work: Path) -> None:
    args = run_args(work, "--include-unreviewed", "--json", "--cache-mode", "off", "--no-sandbox")
    args = [a for a in args if a not in ("--backend", "tests.fixtures.runner.scripted:factory")]
    done = CliRunner().invoke(main, [*args, "--provider", POLICY], catch_exceptions=False)
    assert json.loads(done.stdout)["clipped_pages"] == {}
    assert "page limit" not in done.stderr


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandbox"])
def test_a_long_page_the_judge_reads_itself_is_not_called_clipped(
    work: Path, sandbox: bool
) -> None:
    """Only what is sent to the model is clipped: a judge that searches the whole page text
    itself saw all of it."""
    _lengthen(work, LONG)
    (work / "judges" / "louvre_hours.py").write_text(self_reading_judge(work))
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(work, "--include-unreviewed", "--json", "--cache-mode", "off", *mode)
    args = [a for a in args if a not in ("--backend", "tests.fixtures.runner.scripted:factory")]
    done = CliRunner().invoke(main, [*args, "--provider", POLICY], catch_exceptions=False)
    assert done.exit_code in (0, 1), done.stderr
    result = json.loads((work / "results/alpha/louvre_hours/answer_1.json").read_text())
    assert result["status"] == "complete", result["errors"]
    assert LONG in result["fingerprint"]["pages"]["read"]  # the judge did read it
    assert result["clipped_pages"] == []
    assert json.loads(done.stdout)["clipped_pages"] == {}
    assert "page limit" not in done.stderr
