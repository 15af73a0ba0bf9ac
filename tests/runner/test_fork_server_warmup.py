"""When the fork server builds what only some jobs need (the suffix list): never in the way of
the parent's first spawns, and eventually even in a run that keeps it busy."""

from __future__ import annotations

from toolkit.sandbox.worker import _warm_due


def test_a_server_waiting_for_its_first_spawn_does_not_warm_up_however_quiet() -> None:
    assert not _warm_due(False, quiet=True, late=False)


def test_a_server_warms_up_once_it_has_spawned_jobs_and_gone_quiet() -> None:
    assert _warm_due(True, quiet=True, late=False)
    assert not _warm_due(True, quiet=False, late=False)


def test_a_server_warms_up_at_its_deadline_whether_busy_or_never_asked() -> None:
    assert _warm_due(True, quiet=False, late=True)
    assert _warm_due(False, quiet=True, late=True)
