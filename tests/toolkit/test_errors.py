"""Which recorded errors are infrastructure failures: those are retried or stop a command,
never shown to the generator as the judge's bug to repair; and every error survives pickling."""

from __future__ import annotations

import pickle
import sys

import pytest

import toolkit.scale.errors  # defines ClusterError, an InfraError too
from toolkit.errors import (
    CACHE_ACCESS_FIX,
    BudgetExceeded,
    CacheError,
    CodeChanged,
    InfraError,
    LedgerError,
    LLMError,
    PageStoreError,
    ReplayMiss,
    ResultsError,
    SpecError,
    is_infra_failure,
)


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


PICKLED = {
    "InfraError": lambda: InfraError("a node failed", kind="tool", usage={"input_tokens": 3}),
    "LLMError": lambda: LLMError("rate limited", kind="rate_limit", attempts=3, body="{}"),
    "ReplayMiss": lambda: ReplayMiss("no recording"),
    "CacheError": lambda: CacheError("c.sqlite", "disk I/O error", CACHE_ACCESS_FIX),
    "PageStoreError": lambda: PageStoreError("pages/pages.sqlite", "malformed"),
    "LedgerError": lambda: LedgerError("/dev/full", "No space left on device"),
    "ResultsError": lambda: ResultsError("results/a/t/answer_1.json", "No space left on device"),
    "BudgetExceeded": lambda: BudgetExceeded("the budget is spent"),
    "CodeChanged": lambda: CodeChanged("toolkit/tree.py changed during the run; rerun"),
    "ClusterError": lambda: toolkit.scale.errors.ClusterError("the gateway is gone"),
    "GatewayLost": lambda: toolkit.scale.errors.GatewayLost("the gateway was lost (died)"),
}


def test_every_infra_error_type_has_a_pickling_case() -> None:
    # judgegen's own named types only: a test may define a subclass of its own at any time,
    # and the Ray forwarding makes one per error name a gateway relays (no module holds it)
    ours = {
        cls.__name__
        for cls in _subclasses(InfraError)
        if cls.__module__.startswith("toolkit.")
        and getattr(sys.modules[cls.__module__], cls.__name__, None) is cls
    }
    assert ours == set(PICKLED)


@pytest.mark.parametrize("name", sorted(PICKLED))
def test_an_infra_error_survives_pickling_with_its_message_and_attributes(name: str) -> None:
    error = PICKLED[name]()
    if isinstance(error, CacheError):
        error.usage = {"input_tokens": 7}
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_a_spec_error_survives_pickling() -> None:
    error = SpecError("task.yaml", "rubric", "is empty", "add a rubric")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and vars(copy) == vars(error)
