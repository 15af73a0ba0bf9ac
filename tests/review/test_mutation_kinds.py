"""The mutation kinds a report was measured under are part of it: a kill rate over another set
than judgegen applies now (a kind added, removed, or one whose damage changed) reads as stale.

Each kind's output on fixed probe answers is pinned to its version, as the cache key tests pin
every `LLMRequest` field: a kind added, or changed without a version bump, fails here."""

from __future__ import annotations

import hashlib
import json

from generator.review.mutate import (
    MUTATIONS,
    REWRITES,
    MutationKind,
    MutationReport,
    MutationStage,
    kinds_change,
    mutation_kinds,
)

PROBES = (
    """The commit a1b2c3d was made on Dec 7, 2023 by Haotian Liu \
([commit](https://github.com/h/LLaVA/commit/a1b2c3d)). It changed 12 files.

- Haotian Liu: https://github.com/h
- Chunyuan Li: https://github.com/c
""",
    """Released 2023-01-31 with 1,250 fixes (https://x.example/2023-01-31/notes).

| Laureate | Source |
|:---|---|
| Pierre Agostini | https://example.org/agostini |
| Anne L'Huillier | https://example.org/lhuillier |
""",
    """1. Mercury (https://en.wikipedia.org/wiki/Mercury_(planet)?oldid=1180000000)
2. Venus: [Venus](https://en.wikipedia.org/wiki/Venus_(planet)), seen Feb 28th, 2024
""",
    "nothing here",
)
"""Answers on which every kind applies at least once, and one on which most apply nowhere."""

ADDED_PROBES = ("Stabilized on 20 February 2025, a Thursday.",)
"""Probes added after the first pins: a kind's digest covers one only where the kind applies,
so adding a probe re-pins just the kinds it exercises (a day-first date: change_date,
shift_day, reformat_date), and the pins of every other kind stay as they were."""

KINDS = (*MUTATIONS, *REWRITES)

PINNED: dict[tuple[str, int], str] = {
    ("drop_cited_url", 1): "eb1a3bfb4d2160b8",
    ("change_date", 1): "120e8311819248c2",
    ("change_date", 2): "1e58674514f545ec",  # day-first dates ("20 February 2025")
    ("shift_day", 1): "f342d495471f74a9",
    ("shift_day", 2): "8a764475d358b4c2",  # day-first dates; an ordinal keeps its suffix right
    ("change_number", 1): "28adf7e466f2b7f5",
    ("change_number", 2): "afa2eaec7dcba2c5",  # a numbered list's marker ("1.") is no fact
    ("remove_list_item", 1): "5e03cdcf8a598f78",
    ("remove_table_row", 1): "6584d08cbfc697a3",
    ("replace_name", 1): "98f254e41f64dbdf",
    ("swap_sources", 1): "93f94df7c9d2ed55",
    ("reformat_date", 1): "0b99b39338ecc281",
    ("reformat_number", 1): "a3cd6497fc46ab5c",
    ("reformat_number", 2): "a3cd6497fc46ab5c",  # none in an answer with decimal commas
}
"""What each version of each kind does to the probes (`_behaviour`). A new kind gets a row; a
kind whose output changes gets a new version in `MUTATIONS` and a row here (keep the old row:
the versions a recorded report may name)."""


def _behaviour(kind: MutationKind) -> str:
    """A digest of `kind`'s mutation (name, description, text) of each probe, or None, and of
    each added probe it applies to (with the probe)."""
    outputs = [
        None if (m := kind.apply(probe)) is None else [m.name, m.description, m.text]
        for probe in PROBES
    ]
    outputs += [
        [probe, m.name, m.description, m.text]
        for probe in ADDED_PROBES
        if (m := kind.apply(probe)) is not None
    ]
    return hashlib.sha256(json.dumps(outputs).encode()).hexdigest()[:16]


def test_every_kind_s_output_on_the_probes_is_pinned_to_its_version() -> None:
    """Recorded kill rates name each kind's version: a kind that damages answers otherwise
    under the same version would leave them reading as current."""
    unpinned = {
        f"{kind.name} v{kind.version}": _behaviour(kind)
        for kind in KINDS
        if PINNED.get((kind.name, kind.version)) != _behaviour(kind)
    }
    assert not unpinned, (
        f"{unpinned}: a kind added, or one whose output changed under the same version. Give "
        "a changed kind a new version in generator/review/mutate.py MUTATIONS (or REWRITES), "
        "then pin the "
        "digest under that version here (keep the old rows)"
    )


def test_every_kind_applies_to_a_probe() -> None:
    """Otherwise its pinned digest would pin nothing but `None`s."""
    assert all(any(kind.apply(probe) for probe in PROBES) for kind in KINDS)


def test_a_kind_s_mutations_carry_its_name() -> None:
    """A report's rows and its `kinds` name the same things."""
    probes = (*PROBES, *ADDED_PROBES)
    names = {kind.name: {m.name for p in probes if (m := kind.apply(p))} for kind in KINDS}
    assert names == {kind.name: {kind.name} for kind in KINDS}


def test_the_recorded_kinds_are_every_applied_kind_and_rewrite_with_its_version() -> None:
    assert mutation_kinds() == {kind.name: kind.version for kind in KINDS}
    assert len(mutation_kinds()) == len(MUTATIONS) + len(REWRITES)


def test_a_rewrite_added_since_the_recording_is_named() -> None:
    """A report from before rewrites were applied reads as stale, as for a damaging kind."""
    recorded = {kind.name: kind.version for kind in MUTATIONS}
    assert kinds_change(recorded) == "not applied then: reformat_date v1, reformat_number v2"


def test_the_current_kinds_are_no_change() -> None:
    assert kinds_change(mutation_kinds()) is None


def test_a_kind_added_since_the_recording_is_named() -> None:
    recorded = {n: v for n, v in mutation_kinds().items() if n not in {"shift_day", "swap_sources"}}
    assert kinds_change(recorded) == "not applied then: shift_day v2, swap_sources v1"


def test_a_kind_removed_since_the_recording_is_named() -> None:
    recorded = {**mutation_kinds(), "swap_names": 1}
    assert kinds_change(recorded) == "no longer applied: swap_names v1"


def test_a_kind_whose_version_changed_since_the_recording_is_named() -> None:
    recorded = {**mutation_kinds(), "change_date": 1}
    assert kinds_change(recorded) == "changed since: change_date v1 -> v2"


def test_a_report_recorded_before_kinds_were_named_is_stale() -> None:
    change = kinds_change(None)
    assert change is not None and change.startswith("recorded before judgegen named")
    assert "remove_table_row v1" in change


def test_a_report_of_version_2_reads_as_recorded_without_kinds() -> None:
    old = {"version": 2, "task_id": "t", "answer": "good", "original_score": 1.0}
    assert MutationReport.model_validate(old).kinds is None


def test_a_stage_is_stale_when_one_of_its_reports_is() -> None:
    current = MutationReport(task_id="t", answer="good", original_score=1, kinds=mutation_kinds())
    older = current.model_copy(update={"answer": "other", "kinds": None})
    assert MutationStage(reports=[current]).kinds_change() is None
    assert MutationStage(reports=[current, older]).kinds_change() == kinds_change(None)
