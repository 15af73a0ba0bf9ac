"""The documentation tracks the code: the CLI reference and the README's commands."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from generator.cli import COMMANDS
from generator.cli.reference import render_reference

ROOT = Path(__file__).parents[2]


def test_cli_reference_is_current():
    expected = render_reference()
    actual = (ROOT / "docs" / "cli.md").read_text()
    assert actual == expected, "regenerate: python -m generator.cli.reference > docs/cli.md"


def test_every_registered_command_is_documented_in_the_reference():
    reference = (ROOT / "docs" / "cli.md").read_text()
    for name in COMMANDS:
        assert f"## judgegen {name}\n" in reference, name


def test_readme_mentions_every_command():
    readme = (ROOT / "README.md").read_text()
    for name in COMMANDS:
        assert re.search(rf"judgegen {re.escape(name)}\b", readme), name


def test_readme_quickstart_has_exactly_two_commands_and_the_test_one_is_ci_s():
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quickstart, flags=re.S)
    assert len(commands) == 2
    test_command = commands[1].strip()
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_readme_layout_names_every_package_and_top_level_folder():
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    tracked = {
        path.split("/")[0]
        for path in subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if "/" in path and not path.startswith((".", "tests/"))
    }
    packages = {
        f"{package.name}/"
        for parent in ("toolkit", "generator")
        for package in (ROOT / parent).iterdir()
        if (package / "__init__.py").is_file()
    }
    missing = sorted(name for name in {f"{t}/" for t in tracked} | packages if name not in layout)
    assert missing == [], f"add to the README's Layout section: {missing}"
