"""The README's offline walkthroughs run as written, and its settings table is complete."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from toolkit.llm.settings import ENV_VARS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
WALKTHROUGH = README.split("### Trying it without keys", 1)[1].split("\n### ", 1)[0]
BLOCKS = re.findall(r"```sh\n(.*?)```", WALKTHROUGH, flags=re.S)


def clone(tmp_path: Path) -> Path:
    """What a clone holds that the walkthroughs read, committed in a git repository."""
    for folder in ("tasks", "recordings", "generated_judges", "reviews", "examples", "tests"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "clone"], cwd=tmp_path, check=True)
    return tmp_path


def run_block(block: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUDGEGEN_CACHE_PATH": str(cwd / "cache.db")}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_there_are_two_walkthroughs_mutate_then_regenerate() -> None:
    assert len(BLOCKS) == 2
    assert "judgegen mutate" in BLOCKS[0] and "judgegen regenerate" in BLOCKS[1]


def test_mutate_walkthrough_runs_offline_as_written(tmp_path: Path) -> None:
    result = run_block(BLOCKS[0], clone(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "killed   drop_cited_url" in result.stdout
    assert "kill rate 0.60 (3 of 5 mutations lowered the score)" in result.stdout
    assert "rewrites keeping the meaning: 1 of 1 kept the score" in result.stdout


def test_regenerate_walkthrough_runs_offline_as_written(tmp_path: Path) -> None:
    repo = clone(tmp_path)
    result = run_block(BLOCKS[1], repo)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "release_date_correct: critical: False -> True" in result.stdout
    assert "~ def evaluate" in result.stdout
    assert (repo / "reviews" / "rust_2024_edition.approval.stale.json").is_file()


def test_every_judgegen_variable_is_documented() -> None:
    for name in [*ENV_VARS, "JUDGEGEN_CONFIG", "JUDGEGEN_CHROMIUM"]:
        assert f"`{name}`" in WALKTHROUGH, name


def test_missing_anthropic_key_is_a_clear_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.chdir(clone(tmp_path))
    args = ["generate", "rust_2024_edition", "--provider", "anthropic", "--no-commit"]
    result = CliRunner().invoke(main, [*args, "--cache-mode", "off", "--no-acceptance"])
    assert result.exit_code == 3
    assert "set ANTHROPIC_API_KEY" in result.stderr


def test_a_policy_that_raises_is_an_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = clone(tmp_path)
    (repo / "broken_policy.py").write_text(
        "def policy(request):\n    raise RuntimeError('the policy broke')\n"
    )
    monkeypatch.chdir(repo)
    monkeypatch.syspath_prepend(str(repo))
    args = ["generate", "rust_2024_edition", "--provider", "scripted:broken_policy:policy"]
    result = CliRunner().invoke(
        main, [*args, "--no-commit", "--cache-mode", "off", "--no-acceptance"]
    )
    assert result.exit_code == 3, result.stderr
    assert "the policy broke" in result.stderr
