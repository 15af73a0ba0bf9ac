"""Ray is optional: commands without `--ray` never import it, and `--ray` without it installed
is a usage error naming the install command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.test_run_imports import in_process_run, loaded_modules
from tests.scale.workspace import REPO, make_workspace, run_args

WITHOUT_RAY = """
import sys
sys.modules["ray"] = None  # what `import ray` finds when the extra is not installed
from generator.cli import main
main(sys.argv[1:], prog_name="judgegen")
"""


def without_ray(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_run_without_ray_flag_never_imports_ray(tmp_path: Path) -> None:
    modules = loaded_modules(*in_process_run(tmp_path), cwd=tmp_path)
    assert "toolkit.runner.scheduler" in modules
    assert not [m for m in modules if m == "ray" or m.startswith(("ray.", "toolkit.scale"))]


def test_cache_pages_without_ray_flag_never_imports_ray(tmp_path: Path) -> None:
    args = ("cache-pages", "--import-m2w2", str(REPO / "examples/pages"), "--store", "pages")
    modules = loaded_modules(*args, cwd=tmp_path)
    assert "generator.cli.cache_pages" in modules
    assert not [m for m in modules if m == "ray" or m.startswith(("ray.", "toolkit.scale"))]


@pytest.mark.parametrize("command", ["run", "cache-pages"])
def test_ray_flag_without_ray_installed_is_a_usage_error_naming_the_extra(
    tmp_path: Path, command: str
) -> None:
    work = make_workspace(tmp_path)
    if command == "run":
        args = run_args(work, "results", "--ray", "127.0.0.1:6379")
    else:
        args = ["cache-pages", "--answers", "answers", "--store", "new", "--ray", "127.0.0.1:6379"]
    done = without_ray(work, *args)
    assert done.returncode == 2, done.stderr
    assert "pip install 'judgegen[ray]'" in done.stderr
    assert not (work / "results").exists() and not (work / "new").exists()


def test_an_address_where_no_cluster_answers_is_an_infrastructure_failure(tmp_path: Path) -> None:
    """Said at once (Ray itself would wait minutes), with how to start a cluster; exit 3."""
    pytest.importorskip("ray")
    from tests.scale.local_cluster import free_port
    from tests.scale.workspace import judgegen

    work = make_workspace(tmp_path)
    address = f"127.0.0.1:{free_port()}"
    done = judgegen(work, *run_args(work, "results", "--ray", address))
    assert done.returncode == 3
    assert (
        f"no Ray cluster answers at {address}" in done.stderr and "ray start --head" in done.stderr
    )
