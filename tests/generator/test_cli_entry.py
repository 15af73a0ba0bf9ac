"""The `judgegen` executable's exit: the command's code, every byte of output, the exit
handlers, and a normal exit whenever a thread is still working."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def leave_with(body: str) -> subprocess.CompletedProcess[str]:
    """Run `body` in a fresh interpreter, then `leave` as the executable does."""
    code = f"import atexit, sys, threading, time\nfrom generator.cli import leave\n{body}"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_executable_exits_with_the_commands_code_and_prints_everything() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from generator.cli import entry; entry()", "run", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "No such option '--bogus'" in done.stderr


def test_buffered_output_and_exit_handlers_survive_leaving() -> None:
    done = leave_with(
        "atexit.register(lambda: print('handler ran'))\nsys.stdout.write('x' * 100_000)\nleave(3)\n"
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 100_000 + "handler ran\n"


@pytest.mark.parametrize(("code", "expected"), [(None, 0), (0, 0), (4, 4), ("bad input", 1)])
def test_exit_codes_follow_sys_exit(code: object, expected: int) -> None:
    done = leave_with(f"leave({code!r})\n")
    assert done.returncode == expected
    if isinstance(code, str):
        assert done.stderr == "bad input\n"


def test_a_thread_still_working_is_waited_for_as_on_a_normal_exit() -> None:
    done = leave_with(
        "def work():\n"
        "    time.sleep(0.3)\n"
        "    print('thread finished', flush=True)\n"
        "threading.Thread(target=work).start()\n"
        "leave(5)\n"
    )
    assert done.returncode == 5
    assert done.stdout == "thread finished\n"


def plugins_setting(environment: dict[str, str]) -> str:
    """PYDANTIC_DISABLE_PLUGINS as the executable leaves it, printed by an exit handler."""
    code = (
        "import atexit, os\n"
        "atexit.register(lambda: print(repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))))\n"
        "from generator.cli import entry\n"
        "entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )
    assert done.returncode == 2
    return done.stdout.strip()


def test_the_executable_turns_pydantic_plugins_off_unless_told_otherwise() -> None:
    environment = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    assert plugins_setting(environment) == "'__all__'"
    assert plugins_setting({**environment, "PYDANTIC_DISABLE_PLUGINS": ""}) == "''"
