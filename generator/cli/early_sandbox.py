"""Starting the fork server before the command line is even parsed, for `judgegen run`.

The sandboxed runner's first evaluation waits for the fork server to import the toolkit
(~0.3 s), so the executable launches it first thing, from a cheap look at the arguments,
while click and the command load. Only a guess: `run` adopts the launch only if its parsed
flags say the same (`run._warm_sandbox`), and whatever is not adopted is killed when the
command ends. The guess errs towards not launching: a rerun that may find every result fresh
never starts it (the fresh stamp answers without a sandbox). Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NOT_SANDBOXED = frozenset({"--no-sandbox", "--ray", "--help", "-h"})


class EarlySandbox:
    """A fork server launched before the flags were parsed, until `run` takes it."""

    def __init__(self, launch: Any = None) -> None:
        self._launch = launch

    @classmethod
    def start(cls, argv: Sequence[str]) -> EarlySandbox:
        """Launch now when `argv` looks like a sandboxed `run` with nothing that can be fresh."""
        if not _looks_sandboxed_and_unfresh(list(argv)):
            return cls()
        return cls(launch_now())

    def take(self) -> Any:
        """The launch, now owned by the caller (None when there is none)."""
        launch, self._launch = self._launch, None
        return launch

    def discard(self) -> None:
        """Kill the launch if nobody took it."""
        launch = self.take()
        if launch is not None:
            launch.kill()


def launch_now() -> Any:
    """Start the sandbox's fork server now, so it warms up during the rest of start-up — the
    one way `run` launches it, early or not (None when it cannot start: the first evaluation
    then says why)."""
    from toolkit.sandbox.launch import launch_sandbox

    try:
        return launch_sandbox()
    except OSError:
        return None


def nothing_can_be_fresh(judges: Path, results: Path, overwrite: bool) -> bool:
    """The rule for launching early: there are judges to run and no result can be reused
    (`--overwrite`, or nothing in the results folder yet). `run` checks it again with its
    parsed flags before adopting an early launch."""
    return judges.is_dir() and (overwrite or not has_results(results))


def has_results(results_dir: Path) -> bool:
    """Whether the results folder holds anything (a fresh rerun is then possible)."""
    try:
        with os.scandir(results_dir) as entries:
            return any(True for _ in entries)
    except OSError:
        return False


def option_names(argv: Sequence[str]) -> set[str]:
    """The options in `argv`, without their `=value` (`--ray=host:port` is `--ray`)."""
    return {arg.split("=", 1)[0] for arg in argv}


def _looks_sandboxed_and_unfresh(argv: list[str]) -> bool:
    if not argv or argv[0] != "run" or NOT_SANDBOXED & option_names(argv):
        return False
    judges = Path(_value(argv, "--judges") or "generated_judges")
    results = Path(_value(argv, "--results") or "results")
    return nothing_can_be_fresh(judges, results, "--overwrite" in argv)


def _value(argv: list[str], flag: str) -> str | None:
    """The value given to `flag` (`--flag V` or `--flag=V`; the last one wins, as in click)."""
    found = None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            found = argv[index + 1]
        elif arg.startswith(flag + "="):
            found = arg[len(flag) + 1 :]
    return found
