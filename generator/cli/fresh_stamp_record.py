"""The fresh stamp file's shape (`RESULTS/.judgegen-fresh.stamp`), as the slow path writes it.

`generator.cli.fresh_stamp.read_stamp` reads it back without pydantic and checks the same
shape by hand: whatever is not exactly this model, at its `STAMP_VERSION`, is no stamp (a
test keeps the two in step; this module does not import that one, which imports it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class FreshStamp(BaseModel):
    """What `judgegen run` prints when rerun with nothing to redo, and when that holds."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[3] = Field(default=3, description="`fresh_stamp.STAMP_VERSION`.")
    key: str = Field(description="sha256 of the flags, environment, code and input manifest.")
    hashed: list[str] = Field(
        description="Large files known by content in the key: their stat was too recent to trust."
    )
    watched: list[str] = Field(
        default_factory=list,
        description="The recordings or policy module the provider answers from, keyed too.",
    )
    provider: str | None = Field(
        default=None,
        description="The provider spec `watched` was listed for, listed again by a rerun.",
    )
    stdout: str = Field(description="The rerun's stdout, verbatim.")
    stderr: str = Field(description="The rerun's stderr, verbatim (durations are the results').")
    exit_code: Literal[0] = Field(description="Only runs that exit 0 are stamped.")
