"""Every example command in the docs and in `--help` runs as written in a fresh clone.

The clone is a copy of the tracked files (symlinks kept) committed into a new repository, so
git-reading commands work; commands run there offline through the `judgegen` console script
with the clone first on the path. Documented console blocks must print exactly what the
docs show (stdout; commit ids normalized) and exit as documented (`$ echo $?`, else 0).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from generator.cli import COMMANDS, main

ROOT = Path(__file__).parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The state the help examples assume: the example and fixture page stores, scored samples.
SETUP = [
    "judgegen cache-pages --import-m2w2 examples/pages --store pages",
    "python -m tests.fixtures.review.scripted review-pages",
    "judgegen run --answers tasks/rust_2024_edition/samples --pages pages"
    " --provider replay:recordings/rust_2024_edition",
]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "docs",
    "GIT_AUTHOR_EMAIL": "docs@judgegen.invalid",
    "GIT_COMMITTER_NAME": "docs",
    "GIT_COMMITTER_EMAIL": "docs@judgegen.invalid",
}


def fresh_clone(dest: Path) -> Path:
    """The tracked files of this checkout in a new one-commit repository at `dest`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source, target = ROOT / name, dest / name
        if not source.is_symlink() and not source.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "clone"]):
        subprocess.run(["git", *args], cwd=dest, env=_env(dest), check=True)
    return dest


def _env(clone: Path) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUDGEGEN_", "GIT_")) and not k.endswith("_API_KEY")
    }
    # no warm server left behind by a documented `judgegen run` (tests/conftest.py)
    return {**keep, **GIT_IDENTITY, "PYTHONPATH": str(clone), "JUDGEGEN_SERVER": "off"}


def shell(clone: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=clone,
        env=_env(clone),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def console_steps(markdown: str) -> list[tuple[str, str]]:
    """(command, expected stdout) for every `$ ` line of every ```console block."""
    steps: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", markdown, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], ""))
            elif steps:
                command, expected = steps[-1]
                steps[-1] = (command, expected + line + "\n")
    return steps


def _normalized(text: str) -> str:
    return re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text).rstrip()


def help_examples() -> list[tuple[str, str]]:
    """(command path, example) for every `judgegen …` line under a help text's Example(s)."""
    found: list[tuple[str, str]] = []
    runner = CliRunner()
    for name in COMMANDS:
        paths = [[name]]
        command = main.get_command(click.Context(main), name)
        if isinstance(command, click.Group):
            paths += [[name, sub] for sub in command.list_commands(click.Context(command))]
        for path in paths:
            text = runner.invoke(main, [*path, "--help"]).output
            for section in re.findall(r"Examples?:(.*?)(?:\n\s*\n|\Z)", text, flags=re.S):
                for line in section.splitlines():
                    if line.strip().startswith("judgegen "):
                        found.append((" ".join(path), line.strip()))
    return found


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_clone(tmp_path_factory.mktemp("clone"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_documented_console_sessions_run_as_shown(
    doc: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    clone = fresh_clone(tmp_path_factory.mktemp("doc"))
    last = 0
    for command, expected in console_steps(doc.read_text("utf-8")):
        if command == "echo $?":
            assert expected.strip() == str(last), f"{doc.name}: exit code of the step before"
            continue
        done = shell(clone, command)
        last = done.returncode
        assert done.returncode in (0, 1), f"{doc.name}: `{command}`\n{done.stderr}"
        assert _normalized(done.stdout) == _normalized(expected), f"{doc.name}: `{command}`"


def test_every_command_help_shows_an_example() -> None:
    commands = {path.split()[0] for path, _ in help_examples()}
    assert commands == set(COMMANDS)


def test_help_examples_run_as_written_in_a_fresh_clone(clone: Path) -> None:
    for step in SETUP:
        done = shell(clone, step)
        assert done.returncode == 0, f"setup `{step}`: {done.stderr}"
    failures = []
    for path, example in help_examples():
        done = shell(clone, example)
        if done.returncode not in (0, 1):
            failures.append(f"judgegen {path}: `{example}` exited {done.returncode}: {done.stderr}")
    assert failures == []
