"""When the fork server builds what it defers until idle (template schemas, the suffix list):
never in the way of the parent's first spawns, eventually even in a run that keeps it busy,
and each warm-up one that actually runs."""

from __future__ import annotations

import importlib

import pytest

from toolkit.sandbox.worker import _IDLE_WARMUPS, _warm_due


def test_a_server_waiting_for_its_first_spawn_does_not_warm_up_however_quiet() -> None:
    assert not _warm_due(False, quiet=True, late=False)


def test_a_server_warms_up_once_it_has_spawned_jobs_and_gone_quiet() -> None:
    assert _warm_due(True, quiet=True, late=False)
    assert not _warm_due(True, quiet=False, late=False)


def test_a_server_warms_up_at_its_deadline_whether_busy_or_never_asked() -> None:
    assert _warm_due(True, quiet=False, late=True)
    assert _warm_due(False, quiet=True, late=True)


@pytest.mark.parametrize("target", _IDLE_WARMUPS)
def test_every_idle_warm_up_names_a_function_that_runs(target: str) -> None:
    # `_warm` swallows a warm-up's errors (it only costs the jobs time), so a misspelt or
    # broken target would silently warm nothing: each must import and run cleanly here.
    module, _, name = target.partition(":")
    getattr(importlib.import_module(module), name)()
