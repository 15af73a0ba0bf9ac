"""Where a cached answer came from (`RecordOrigin`), so one a model never gave is never counted
or shown as a model's, nor as a saving.

Every cache entry has one: the cache records it when a provider's answer is stored
(`recorded_by` in `cached_provider.py`: `live` for a provider that calls a model, `scripted`
for a scripted policy's fixtures, and for a replayed recording what its record says, as an
import keeps it), an import adds the file and the time to what the record says (a record that
says nothing is of `unknown` origin: a hand-written one, or one exported before origins were
kept), and entries stored before they were kept read as `before_origins`. `replay` is no longer
recorded: it names the entries an older judgegen stored while replaying recordings, whose own
origin it did not keep. A cache hit carries its entry's origin to the ledger, the `LLM:` line
and the results' usage, which name every answer that was not recorded from a live provider
call (`origin_clauses`); only a hit recorded live counts as saved (`recorded_live`). An origin
is what its record says: judgegen cannot prove that a model gave an answer a file says was
recorded live, only never claim it for one that does not say so.

Pydantic only, so the `LLM:` line can name origins without loading the LLM layer. Its form is
versioned by the record files (`records.RECORD_VERSION`) and the cache file
(`cache.FORMAT_VERSION`) that hold it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Source = Literal["live", "scripted", "replay", "unknown", "before_origins"]

NOT_LIVE: dict[str, str] = {
    "unknown": "of unknown origin (records that do not say how they were recorded, such as "
    "imported hand-written ones: no model is known to have given them)",
    "before_origins": "stored before the cache kept origins (a provider's answers or imported "
    "records, not told apart then)",
    "scripted": "recorded from a scripted policy (fixtures: no model called)",
    "replay": "replayed from recordings by an older judgegen, which did not keep what they "
    "said of their origin (no model is known to have given them)",
}
"""How each origin other than `live` is named wherever cached answers are counted."""


class RecordOrigin(BaseModel):
    """Where a cached answer came from: how it was recorded, and the import that brought it."""

    model_config = ConfigDict(frozen=True)
    source: Source = Field(
        description="live: recorded from a call to `provider`, a model as far as judgegen "
        "knows; scripted: recorded from a scripted policy (fixtures, no model called); "
        "unknown: the record did not say (written by hand, or exported before origins were "
        "kept); before_origins: stored by a cache before it kept origins; replay: stored by "
        "an older judgegen while replaying recordings, their own origin not kept (a replayed "
        "answer now keeps what its record says)."
    )
    provider: str | None = Field(default=None, description="The provider that answered.")
    imported_from: str | None = Field(
        default=None, description="The record file the entry was imported from (`cache import`)."
    )
    imported_at: float | None = Field(default=None, description="Unix time of that import.")

    def imported(self, path: Path, at: float) -> RecordOrigin:
        """This origin, as a record read from `path` brings it into a cache at time `at`."""
        return self.model_copy(update={"imported_from": str(path.resolve()), "imported_at": at})

    @property
    def names_its_model(self) -> bool:
        """Whether the answer's `model` was named by a provider (or a fixture standing for one):
        not for a record of unknown origin, whose `model` is only what its file says, nor for
        an older judgegen's `replay` entry, which did not keep whether its record said more."""
        return self.source not in ("unknown", "replay")

    @property
    def recorded_live(self) -> bool:
        """Whether the answer says it was recorded from a live provider call: the only hits
        counted as saved (a fixture never cost anything, and no saving is claimed for an
        answer that does not say a model was paid for it, `before_origins` included)."""
        return self.source == "live"


UNKNOWN = RecordOrigin(source="unknown")
BEFORE_ORIGINS = RecordOrigin(source="before_origins")


def origin_clauses(counts: Mapping[str, int]) -> str | None:
    """`counts` of cached answers by origin source, named for every source but `live`
    ("2 of unknown origin (...), 1 recorded from a scripted policy (...)"); None if all live."""
    named = [f"{counts[source]} {NOT_LIVE[source]}" for source in NOT_LIVE if counts.get(source)]
    return ", ".join(named) or None
