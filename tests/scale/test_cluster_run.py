"""`judgegen run --ray` on a real local cluster: same results as locally, one writer, budget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import lengthen_page
from tests.scale.local_cluster import LocalCluster
from tests.scale.workspace import (
    REPO,
    comparable,
    judgegen,
    llm_line,
    make_workspace,
    result_files,
    run_args,
)
from toolkit.backends import LLMBackend

pytestmark = pytest.mark.timeout(300)
LONG = "https://www.louvre.fr/en/visit/hours-admission"
"""Cited by alpha's louvre_hours answer; made longer than the backend's page limit."""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Path:
    """Fixture answers of six agents (33 evaluations), run locally and on the cluster."""
    work = make_workspace(tmp_path_factory.mktemp("synthetic"), agents=6)
    lengthen_page(work / "pages", LONG, LLMBackend.__init__.__kwdefaults__["max_page_chars"])
    local = judgegen(work, *run_args(work, "local"))
    assert local.returncode == 0, local.stderr
    remote = judgegen(work, *run_args(work, "remote", "--ray", cluster.address))
    assert remote.returncode == 0, remote.stderr
    (work / "local.err").write_text(local.stderr)
    (work / "remote.err").write_text(remote.stderr)
    return work


def test_every_answer_gets_exactly_one_result_file_on_the_cluster(synthetic: Path) -> None:
    local, remote = result_files(synthetic / "local"), result_files(synthetic / "remote")
    assert len(local) == 33 and sorted(remote) == sorted(local)
    assert not [p for p in (synthetic / "remote").rglob("*.tmp*")]  # no half-written file


def test_cluster_results_have_the_same_trees_scores_and_usage_as_local_ones(
    synthetic: Path,
) -> None:
    local, remote = result_files(synthetic / "local"), result_files(synthetic / "remote")
    for name, path in local.items():
        assert comparable(remote[name]) == comparable(path), name


def test_a_cited_page_sent_clipped_on_the_cluster_is_named_as_locally(synthetic: Path) -> None:
    name = "alpha/louvre_hours/answer_1.json"
    local, remote = result_files(synthetic / "local"), result_files(synthetic / "remote")
    assert json.loads(remote[name].read_text())["clipped_pages"] == [LONG]
    assert json.loads(local[name].read_text())["clipped_pages"] == [LONG]


def test_the_cluster_run_makes_the_same_llm_calls_as_the_local_run(synthetic: Path) -> None:
    local, remote = (synthetic / "local.err").read_text(), (synthetic / "remote.err").read_text()
    assert llm_line(remote) == llm_line(local)
    assert "Ray: 2 node(s), 0 lost, 0 evaluations retried" in remote


def test_both_nodes_ran_evaluations(synthetic: Path) -> None:
    line = next(x for x in (synthetic / "remote.err").read_text().splitlines() if "per node" in x)
    counts = [int(n) for n in line.rsplit(":", 1)[1].split(",")]
    assert len(counts) == 2 and all(counts) and sum(counts) == 30  # 3 answers are empty


def test_a_local_rerun_reuses_the_cluster_results(synthetic: Path) -> None:
    """Same fingerprints: switching between local and cluster runs redoes nothing."""
    again = judgegen(synthetic, *run_args(synthetic, "remote", "--json"))
    report = json.loads(again.stdout)
    assert again.returncode == 0, again.stderr
    assert (report["evaluated"], report["reused"]) == (0, 33)


def test_the_example_task_scores_the_same_on_the_cluster(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """The README's quickstart run (replayed recordings, reviewed judge) locally and on Ray."""
    pages = judgegen(tmp_path, "cache-pages", "--import-m2w2", str(REPO / "examples/pages"))
    assert pages.returncode == 0, pages.stderr
    args = ["run", "--answers", str(REPO / "tasks/rust_2024_edition/samples"), "--pages", "pages"]
    args += ["--judges", str(REPO / "generated_judges"), "--reviews", str(REPO / "reviews")]
    args += ["--provider", f"replay:{REPO / 'recordings/rust_2024_edition'}"]
    local = judgegen(tmp_path, *args, "--results", "local", "--cache-path", "local.sqlite")
    remote_args = ["--results", "remote", "--cache-path", "remote.sqlite"]
    remote = judgegen(tmp_path, *args, *remote_args, "--ray", cluster.address)
    assert local.returncode == remote.returncode == 0, remote.stderr
    files = result_files(tmp_path / "local")
    assert len(files) == 3 and sorted(result_files(tmp_path / "remote")) == sorted(files)
    for name, path in files.items():
        assert comparable(tmp_path / "remote" / name) == comparable(path), name
    assert llm_line(remote.stderr) == llm_line(local.stderr)


def test_the_budget_holds_across_nodes(tmp_path: Path, cluster: LocalCluster) -> None:
    """One gateway, one budget: the run stops at the cap whichever node asked."""
    work = make_workspace(tmp_path, agents=6)
    cap = 0.04
    budget = ("--budget-usd", str(cap), "--jobs", "2")  # few in flight: most are not started
    done = judgegen(work, *run_args(work, "results", "--ray", cluster.address, *budget))
    assert done.returncode == 3, done.stderr
    assert "stopped: BudgetExceeded" in done.stderr
    ledger = work / ".judgegen" / "llm-ledger.jsonl"
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    paid = [row["cost_usd"] for row in rows if not row.get("error")]
    in_flight_at_most = 8  # --concurrency default: calls already started finish and count
    assert cap <= sum(paid) <= cap + in_flight_at_most * max(paid)
    results = [json.loads(p.read_text()) for p in result_files(work / "results").values()]
    stopped = [r for r in results if any(e.get("kind") == "budget" for e in r["errors"])]
    assert stopped and all(r["status"] == "incomplete" for r in stopped)
    assert len(results) < 33  # evaluations not started are left for the next run


def test_a_bad_backend_spec_is_a_usage_error_before_the_cluster_is_used(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    work = make_workspace(tmp_path)
    args = run_args(work, "results", "--ray", cluster.address)
    done = judgegen(work, *args, "--backend", "no_such_module:factory")
    assert done.returncode == 2 and "no_such_module" in done.stderr
    assert "Ray:" not in done.stderr and not (work / "results").exists()


def test_a_bare_ray_flag_joins_the_cluster_ray_address_names(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """Bare `--ray` is Ray's `auto`: $RAY_ADDRESS, else the cluster started on this machine."""
    work = make_workspace(tmp_path)
    shutil.rmtree(work / "answers" / "beta")
    args = run_args(work, "results", "--ray", "--task", "python_match")
    done = judgegen(work, *args, env={"RAY_ADDRESS": cluster.address})
    assert done.returncode == 0, done.stderr
    assert len(result_files(work / "results")) == 2
