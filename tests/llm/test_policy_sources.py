"""A scripted policy's sources are its module and the user's modules it imports, found statically
and resolved as import would resolve them; the standard library, installed packages and
judgegen itself are not the user's."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generator.cli.fresh_stamp import CODE_PACKAGES
from toolkit.llm.answer_source import answer_digest, answer_sources
from toolkit.llm.policy_sources import TOOL_PACKAGES, policy_sources

Project = Callable[[dict[str, str]], Path]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """Writes a user's project (relative path -> source) as the working directory, importable
    from it as `scripted:` policies are; its modules are forgotten after the test."""
    root = tmp_path / "project"
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.chdir(tmp_path)

    def write(files: dict[str, str]) -> Path:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root.resolve()

    yield write
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def sources(module_name: str, root: Path) -> list[str]:
    """The policy's sources, relative to the project."""
    return [path.relative_to(root).as_posix() for path in policy_sources(module_name)]


def test_a_helper_module_imported_by_name_is_a_source(project: Project) -> None:
    root = project({"pol73a.py": "import helpers73a\n", "helpers73a.py": "ANSWERS = {}\n"})
    assert sources("pol73a", root) == ["helpers73a.py", "pol73a.py"]


def test_modules_imported_from_a_package_are_sources_with_the_packages_holding_them(
    project: Project,
) -> None:
    root = project(
        {
            "pols73b/__init__.py": "",
            "pols73b/judge.py": "from pols73b.tables import ANSWERS\nfrom pols73b import data\n",
            "pols73b/tables.py": "ANSWERS = {}\n",
            "pols73b/data.py": "",
            "pols73b/unused.py": "",
        }
    )
    assert sources("pols73b.judge", root) == [
        "pols73b/__init__.py",
        "pols73b/data.py",
        "pols73b/judge.py",
        "pols73b/tables.py",
    ]


def test_listed_without_importing_a_policy_s_sources_are_the_same_and_its_package_is_not_run(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLS73N_RAN", "no")  # its package sets it to "1" when run
    root = project(
        {
            "pols73n/__init__.py": "import os\nos.environ['POLS73N_RAN'] = '1'\n",
            "pols73n/judge.py": "from pols73n.tables import ANSWERS\n",
            "pols73n/tables.py": "ANSWERS = {}\n",
        }
    )
    quietly = policy_sources("pols73n.judge", importing=False)
    assert "pols73n" not in sys.modules and os.environ["POLS73N_RAN"] == "no"
    assert quietly == policy_sources("pols73n.judge")
    assert [path.relative_to(root).as_posix() for path in quietly] == [
        "pols73n/__init__.py",
        "pols73n/judge.py",
        "pols73n/tables.py",
    ]


def test_relative_imports_are_resolved_against_the_importing_module_s_package(
    project: Project,
) -> None:
    root = project(
        {
            "pols73c/__init__.py": "from .judge import policy\n",
            "pols73c/judge.py": "from . import data\nfrom .deep.rows import policy\n",
            "pols73c/data.py": "",
            "pols73c/deep/__init__.py": "",
            "pols73c/deep/rows.py": "from ..data import *\n\n\ndef policy(request):\n"
            "    from ...above_the_top import x\n",
        }
    )
    assert sources("pols73c.deep.rows", root) == [
        "pols73c/__init__.py",
        "pols73c/data.py",
        "pols73c/deep/__init__.py",
        "pols73c/deep/rows.py",
        "pols73c/judge.py",
    ]


def test_imports_are_followed_through_the_user_s_modules_transitively(project: Project) -> None:
    root = project(
        {
            "pol73d.py": "def policy(request):\n    import first73d\n",
            "first73d.py": "try:\n    import second73d\nexcept ImportError:\n    pass\n",
            "second73d.py": "import first73d\n",
        }
    )
    assert sources("pol73d", root) == ["first73d.py", "pol73d.py", "second73d.py"]


def test_a_module_of_a_namespace_package_not_yet_imported_is_a_source(project: Project) -> None:
    """Folders without `__init__.py` are namespace packages; nothing has imported them yet when
    the policy imports its module only where it is used."""
    root = project(
        {
            "pol93a.py": "def policy(request):\n    from space93a.inner.tables import ANSWERS\n",
            "space93a/inner/tables.py": "ANSWERS = {}\n",
        }
    )
    assert sources("pol93a", root) == ["pol93a.py", "space93a/inner/tables.py"]


def test_standard_library_installed_and_judgegen_modules_are_not_sources(
    project: Project,
) -> None:
    root = project(
        {
            "pol73e.py": "import json, os.path\nimport click\nfrom toolkit.llm import LLMRequest\n"
            "from collections import abc\nimport no_such_module_73e\n"
        }
    )
    assert sources("pol73e", root) == ["pol73e.py"]


def test_a_package_installed_in_a_virtualenv_inside_the_project_is_not_a_source(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ".venv/lib/python3/site-packages"
    root = project({"pol73f.py": "import installed73f\n", f"{site}/installed73f/__init__.py": ""})
    monkeypatch.syspath_prepend(str(root / site))
    assert sources("pol73f", root) == ["pol73f.py"]


def test_a_policy_installed_in_site_packages_has_its_own_package_for_sources(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = project(
        {
            "site-packages/pols73g/__init__.py": "",
            "site-packages/pols73g/judge.py": "from . import tables\nimport other73g\n",
            "site-packages/pols73g/tables.py": "",
            "site-packages/other73g.py": "",
        }
    )
    monkeypatch.syspath_prepend(str(site / "site-packages"))
    assert sources("pols73g.judge", site / "site-packages") == [
        "pols73g/__init__.py",
        "pols73g/judge.py",
        "pols73g/tables.py",
    ]


def test_the_digest_covers_a_helper_module_s_bytes(project: Project) -> None:
    root = project({"pol73h.py": "from helpers73h import ANSWERS\n", "helpers73h.py": "A = 1\n"})
    found = answer_sources("scripted:pol73h:policy")
    before = answer_digest(found)
    (root / "helpers73h.py").write_text("A = 2\n")
    assert answer_digest(found) != before
    assert answer_sources("scripted:pol73h:policy") == found


def test_judgegen_s_own_packages_are_the_ones_the_fresh_stamp_keys_as_code() -> None:
    assert set(TOOL_PACKAGES) == set(CODE_PACKAGES)
