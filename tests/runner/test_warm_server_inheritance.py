"""What a cold command inherits from the process that starts it, a served one gets too: the
signals it was started ignoring (`nohup`), and the interpreter's flags and options."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from generator.cli.warm.client import servers
from tests.runner.test_warm_server import SLOW, Warm, until
from tests.runner.test_warm_server import warm as warm  # the fixture

PROBE = (
    "import json, sys, warnings\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from generator.cli.warm.key import interpreter_options\n"
    "print(json.dumps([interpreter_options(), [str(f) for f in warnings.filters],"
    " list(sys.flags), getattr(sys.stdout, 'write_through', False)]))\n"
)


def _probe(options: list[str]) -> list:
    """What an interpreter started with `options` reports: the options that reproduce it, its
    warning filters, its flags and whether its output is unbuffered."""
    repo = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, *options, "-c", PROBE, repo], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_options_a_server_starts_with_give_it_the_callers_flags_and_warning_filters() -> None:
    for options in (["-X", "dev", "-W", "error", "-O", "-b"], ["-W", "ignore::UserWarning", "-u"]):
        caller = _probe(options)
        server = _probe(caller[0])
        assert server[1:] == caller[1:], options


def test_a_server_is_started_with_the_interpreter_options_of_the_run_that_left_it(
    warm: Warm,
) -> None:
    left = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", *warm.command(*warm.run_args())[1:]],
        cwd=warm.work,
        env=warm.env,
        capture_output=True,
        text=True,
    )
    assert left.returncode == 0, left.stderr
    warm.wait_for_server()
    until(lambda: servers(warm.folder), f"no server was left: {warm.log()}")
    ((_, pid),) = servers(warm.folder)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"-Werror::ResourceWarning" in cmdline


def test_a_signal_the_caller_ignores_is_ignored_by_its_served_command(warm: Warm) -> None:
    """`nohup judgegen run …`: the terminal's SIGHUP does not end a served run either."""
    assert warm(*warm.run_args("--no-sandbox")).returncode == 0
    warm.wait_for_server()
    plain = warm(*warm.run_args("--no-sandbox"))  # served, no signal
    assert plain.returncode == 0, warm.log()
    process = subprocess.Popen(
        warm.command(*warm.run_args("--no-sandbox", "--provider", SLOW)),
        cwd=warm.work,
        env=warm.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    until(lambda: warm.served() == 2, f"the command was not served: {warm.log()}")
    time.sleep(0.5)
    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == plain.returncode == 0, stderr
    assert json.loads(stdout)["evaluated"] == json.loads(plain.stdout)["evaluated"]
