"""Which recorded errors are infrastructure failures: those are retried or stop a command,
never shown to the generator as the judge's bug to repair."""

from __future__ import annotations

import pytest

import toolkit.scale.errors  # noqa: F401  (defines ClusterError, an InfraError too)
from toolkit.errors import InfraError, is_infra_failure


def _subclasses(cls: type) -> list[type]:
    return [cls] + [sub for child in cls.__subclasses__() for sub in _subclasses(child)]


@pytest.mark.parametrize("cls", _subclasses(InfraError), ids=lambda cls: cls.__name__)
def test_every_infra_error_type_is_an_infrastructure_failure_whatever_its_kind(cls: type) -> None:
    assert is_infra_failure({"type": cls.__name__, "kind": "something_new"})


def test_an_infrastructure_kind_relayed_under_another_type_is_one_too() -> None:
    assert is_infra_failure({"type": "RuntimeError", "kind": "page_store"})


def test_the_judges_own_exception_is_not_an_infrastructure_failure() -> None:
    assert not is_infra_failure({"type": "KeyError", "kind": "judge_exception"})
    assert not is_infra_failure({"type": "ValueError", "kind": "exception"})
