"""End to end: lint error → repair with a runtime error → repair that passes → reflection adds a node."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.pipeline import PipelineOptions, generate
from generator.provenance import Provenance
from generator.review import ReviewRecord, render_markdown
from generator.spec import load_spec
from prompts import prompts_sha256
from tests.generator.conftest import GIT_ENV, git
from tests.generator.scripted_generation import FixturePolicy
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "river_lengths"
EXPECTED = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "expected"
MODEL = "claude-sonnet-4-5"


def _expected(name: str) -> str:
    judge = (
        (EXPECTED / "river_lengths.py").read_text().replace("{prompts_sha256}", prompts_sha256())
    )
    judge_sha = "sha256:" + hashlib.sha256(judge.encode()).hexdigest()
    text = (EXPECTED / name).read_text().replace("{prompts_sha256}", prompts_sha256())
    return text.replace("{judge_sha256}", judge_sha)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One scripted generation in a fresh repository with a dirty work tree, shared by the tests."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in GIT_ENV.items():
            patch.setenv(key, value)
        repo = tmp_path_factory.mktemp("e2e") / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("hello\n")
        git(repo, "add", "README.md")
        git(repo, "commit", "-q", "-m", "initial")
        task_dir = repo / "tasks" / "river_lengths"
        shutil.copytree(FIXTURE, task_dir, ignore=shutil.ignore_patterns("replies"))
        (repo / "README.md").write_text("dirty\n")
        provider = ScriptedProvider(FixturePolicy(FIXTURE))
        client = LLMClient(provider, model=MODEL)
        options = PipelineOptions(model=MODEL, extract_model="o4-mini", repo=repo)
        result = asyncio.run(generate(load_spec(task_dir), client, None, options))
        yield repo, result, client, provider


def test_published_judge_is_exactly_the_reflected_revision(generated) -> None:
    repo, _, _, _ = generated
    assert (repo / "generated_judges" / "river_lengths.py").read_text() == _expected(
        "river_lengths.py"
    )


def test_review_sidecar_is_exactly_as_expected(generated) -> None:
    repo, _, _, _ = generated
    actual = json.loads((repo / "reviews" / "river_lengths.json").read_text())
    assert actual == json.loads(_expected("river_lengths.json"))


def test_review_markdown_is_rendered_from_the_sidecar(generated) -> None:
    repo, _, _, _ = generated
    record = ReviewRecord.model_validate_json((repo / "reviews" / "river_lengths.json").read_text())
    assert (repo / "reviews" / "river_lengths.md").read_text() == render_markdown(record)
    assert (repo / "reviews" / "river_lengths.md").read_text() == _expected("river_lengths.md")


def test_stage_history_follows_the_scripted_story(generated) -> None:
    _, result, _, _ = generated
    story = [(s.stage, s.round, s.status) for s in result.record.stages]
    assert story == [
        ("spec", 0, "ok"),
        ("context", 0, "ok"),
        ("draft", 0, "ok"),
        ("lint", 0, "failed"),
        ("debug", 0, "failed"),  # the draft still runs: lint and debug go into one repair
        ("repair", 1, "ok"),
        ("lint", 1, "ok"),
        ("debug", 1, "failed"),
        ("repair", 2, "ok"),
        ("lint", 2, "ok"),
        ("debug", 2, "ok"),
        ("acceptance", 0, "skipped"),  # the answers cite pages, and no page store is given
        ("mutation", 0, "skipped"),
        ("lint", 1, "ok"),
        ("debug", 1, "ok"),
        ("acceptance", 0, "skipped"),
        ("reflect", 1, "kept"),
        ("reflect", 2, "unchanged"),
        ("mutation", 0, "skipped"),
        ("publish", 0, "ok"),
    ]
    debug_failure = result.record.stages[7]
    assert any("IndexError" in d and "in 4/12 runs" in d for d in debug_failure.details)


def test_reflection_adds_the_missing_citation_node(generated) -> None:
    _, result, _, _ = generated
    ids = [n["id"] for n in _walk(result.record.skeleton_tree)]
    assert "river_1_cited" in ids and "river_2_cited" in ids
    first = result.record.reflections[0]
    assert first.outcome == "kept"
    assert [c.split(":")[0] for c in first.changes] == [
        "+ river_1_cited",
        "+ river_2_cited",
        "code",
    ]
    assert [f.item for f in first.findings if f.status == "problem"] == ["completeness"]


def test_usage_ledger_counts_each_call(generated) -> None:
    _, result, client, provider = generated
    purposes = [request.metadata.purpose for request in provider.calls]
    assert purposes.count("draft") == 1 and purposes.count("repair") == 2
    assert purposes.count("reflect") == 2
    assert purposes.count("extract") == 3  # one per sample answer, shared by every debug run
    assert client.summary().calls == len(provider.calls) == 8
    by_purpose = {row.purpose: row.calls for row in result.record.usage}
    assert by_purpose == {"draft": 1, "repair": 2, "reflect": 2, "extract": 3}


def test_commit_holds_the_three_files_with_provenance_trailers(generated) -> None:
    repo, result, _, _ = generated
    commit = result.publish.commit
    assert commit is not None and commit.created_branch
    assert git(repo, "rev-parse", "judge/river_lengths") == commit.commit
    files = git(repo, "ls-tree", "-r", "--name-only", commit.commit).splitlines()
    assert files == [
        "README.md",
        "generated_judges/river_lengths.py",
        "reviews/river_lengths.json",
        "reviews/river_lengths.md",
    ]
    assert git(repo, "show", f"{commit.commit}:README.md") == "hello"
    message = git(repo, "log", "-1", "--format=%B", commit.commit)
    assert message == _expected("commit_message.txt").strip()
    provenance = Provenance.from_header(
        (repo / "generated_judges" / "river_lengths.py").read_text()
    )
    assert provenance is not None and provenance.model == MODEL


def test_user_checkout_is_untouched(generated) -> None:
    repo, _, _, _ = generated
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(repo, "log", "--format=%s") == "initial"
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert (repo / "README.md").read_text() == "dirty\n"


def _walk(tree: dict):
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.get("children", [])))


def test_repair_prompts_carry_the_findings_trace_and_offending_lines(generated) -> None:
    _, _, _, provider = generated
    repairs = [
        r.messages[0].content[0].text for r in provider.calls if r.metadata.purpose == "repair"
    ]
    assert "JG003" in repairs[0] and "import os" in repairs[0]
    assert "IndexError: list index out of range" in repairs[1]
    assert 'File "river_lengths.py", line' in repairs[1]
    assert "river = rivers[position - 1]" in repairs[1].split("Offending lines:")[1]


def test_every_call_shares_the_same_cached_prefix(generated) -> None:
    _, _, _, provider = generated
    prefixes = {r.system[0].text for r in provider.calls if r.metadata.purpose != "extract"}
    assert len(prefixes) == 1
    assert all(r.system[0].cache for r in provider.calls)
