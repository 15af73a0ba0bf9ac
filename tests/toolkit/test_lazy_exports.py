"""Package exports that load on first use: every name resolves, light submodules stay light."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit
import toolkit.llm

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", [toolkit, toolkit.llm], ids=lambda p: p.__name__)
def test_every_exported_name_resolves_and_is_listed(package) -> None:
    for name in package.__all__:
        assert getattr(package, name) is not None
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match=r"'toolkit\.llm' has no attribute 'Nope'"):
        _ = toolkit.llm.Nope


def test_importing_request_models_does_not_load_the_llm_layer() -> None:
    code = "import json, sys, toolkit.backends; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(done.stdout))
    llm_layer = {
        "toolkit.llm.models",
        "toolkit.llm.client",
        "toolkit.llm.cache",
        "toolkit.llm.budget",
    }
    assert llm_layer.isdisjoint(loaded)
