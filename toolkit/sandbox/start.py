"""How the fork server's interpreter starts: `python -S -m toolkit.sandbox.start --site DIR ...
-- WORKER ARGS`.

The server runs without the `site` module's start-up (`-S`): the host's `.pth` files and
`sitecustomize` — code the sandbox has no reason to run, and on some machines most of a bare
interpreter's start — never execute in it. The site-packages directories the parent uses are
passed instead and appended after the standard library, where `site` would put them, so the
worker imports the same packages, in the same order. `exit` and `quit` exist as they would
with `site`, so a judge that calls them behaves as in process. No garbage is collected while
the server imports (the collector would scan the same long-lived objects again and again):
`ForkServer.serve` freezes them and turns it back on. Standard library only: this runs
before the import path is complete.
"""

from __future__ import annotations

import gc
import os
import site
import sys
import time
from collections.abc import Sequence

STARTED_NS = time.time_ns()
"""When the server began importing its code, near enough (its packages' `__init__`s aside,
within `code_files.CLOCK_SLACK_NS`): a code file changed since may have been read before."""

SITE_FLAG = "--site"
SEPARATOR = "--"


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the site directories, the worker's own arguments) of `argv`."""
    args = list(argv)
    cut = args.index(SEPARATOR) if SEPARATOR in args else len(args)
    ours, rest = args[:cut], args[cut + 1 :]
    directories = [ours[i + 1] for i in range(len(ours) - 1) if ours[i] == SITE_FLAG]
    if len(directories) * 2 != len(ours):
        raise SystemExit(f"usage: python -S -m toolkit.sandbox.start {SITE_FLAG} DIR ... -- ARGS")
    return directories, rest


def main(argv: Sequence[str] | None = None) -> int:
    """Complete the import path, then run the fork server."""
    gc.disable()  # start-up builds what lives as long as the server; `serve` freezes it
    directories, rest = split_args(sys.argv[1:] if argv is None else argv)
    for directory in directories:
        if os.path.isdir(directory) and directory not in sys.path:
            sys.path.append(directory)
    site.setquit()
    from toolkit.sandbox.worker import main as serve

    return serve(rest, importing_since_ns=STARTED_NS)


if __name__ == "__main__":
    sys.exit(main())
