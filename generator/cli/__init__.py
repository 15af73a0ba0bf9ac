"""`judgegen`: one module per command in this package, registered lazily by name
(`group.py`); `entry` is the executable.

Exit codes (all commands): 0 success; 1 the command ran and found problems (failed checks,
incomplete evaluations, disagreement below a gate); 2 usage or input error (bad flags,
invalid spec, missing file); 3 infrastructure failure (LLM, budget, browser) stopped the work;
4 (`report`) results a rerun would redo are listed and left out of the metrics; 130 and 143
(`run`) stopped by SIGINT or SIGTERM, what finished kept (`stopping`).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from generator.cli.early_sandbox import EarlySandbox
from generator.cli.warm.client import Client

_GROUP_NAMES = frozenset({"COMMANDS", "LazyGroup", "main"})


def __getattr__(name: str) -> Any:
    """`main` (the click group) and its parts, loaded on first use: the executable starts
    the sandbox before click is imported."""
    if name in _GROUP_NAMES:
        from generator.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry() -> NoReturn:
    """The `judgegen` executable: hand a `run` to a warm server when one answers (`warm`);
    otherwise start the sandbox early for a `run` that will need it, run the command here and
    leave a warm server behind for the next one. Pydantic's plugins stay off unless
    PYDANTIC_DISABLE_PLUGINS says otherwise: looking for them scans every installed
    distribution's entry points when the first model is built (~5 ms of every start-up),
    and judgegen's models are not what a plugin observing an application is for."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = sys.argv[1:]
    client = Client.for_command(argv)
    served = client.serve()
    if served is not None:
        leave(served)
    run_command(argv, EarlySandbox.start(argv), client.leave_server_behind)


def run_command(
    argv: list[str], early: EarlySandbox, after: Callable[[dict[str, Any]], None] | None = None
) -> NoReturn:
    """Run the command in `argv` in this process, then leave without the interpreter's
    teardown of every loaded module (~50 ms after a run: `bench/startup_bench.py`); `after`
    is given the modules the command loaded (what a warm server may import ahead)."""
    code: int | str | None = 0
    try:
        from generator.cli.group import main

        main(args=argv, standalone_mode=True, obj=early)
    except SystemExit as exc:
        code = exc.code
    finally:
        early.discard()
    if after is not None:
        after(sys.modules)
    leave(code)


def leave(code: int | str | None) -> NoReturn:
    """Exit with `code` as `sys.exit` would, skipping only the final teardown: non-daemon
    threads still running are waited for, the exit handlers run and the standard streams
    are flushed. Never by raising `SystemExit`: in a warm server's forked command
    (`warm.server`) nothing above would turn it into this exit, and the command would end
    with 1 (its exit code lost, its threads' work cut off)."""
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        _wait_for_threads()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # what Python's own exit reports when flushing fails
    os._exit(code or 0)


def _wait_for_threads() -> None:
    """What the interpreter's exit does before its exit handlers: run threading's own exit
    hooks (an executor's idle workers leave) and wait for every non-daemon thread."""
    shutdown: Callable[[], None] = getattr(threading, "_shutdown")  # noqa: B009
    shutdown()
