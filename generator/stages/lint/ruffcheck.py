"""Running ruff on generated judge source: format, then a curated `ruff check`.

Ruff runs with `--isolated` (no project config leaks in), `--no-cache`, and source on stdin,
so the result depends only on the source text and this module. The selection is curated for
generated code: rules that catch real bugs, not style (ruff format already fixes layout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from generator.stages.lint.models import Finding
from toolkit.errors import InfraError

# Why each group: F = pyflakes (undefined names, unused imports/variables, redefinitions);
# E9 = source that cannot be read; B0xx = bugbear's correctness subset (mutable defaults,
# loop-variable closures, useless expressions, return in finally...); ASYNC1 = misuse of
# async constructs (the blocking-call ASYNC2 rules are covered by JG012 with judge-specific
# advice); PLE = pylint errors (await outside async, bad format strings...); RUF006 = a
# dangling asyncio task. Not selected: style families (ruff format handles layout) and
# F541 (an f-string without placeholders is harmless in generated prose).
RUFF_SELECT = (
    "F",
    "E9",
    "B002",
    "B006",
    "B008",
    "B012",
    "B015",
    "B016",
    "B018",
    "B020",
    "B023",
    "B025",
    "B033",
    "B035",
    "ASYNC1",
    "PLE",
    "RUF006",
)
RUFF_IGNORE = ("F541",)
RUFF_OPTIONS = ("--isolated", "--no-cache", "--line-length", "100", "--target-version", "py311")
STDIN_NAME = "judge.py"
TIMEOUT_SECONDS = 60
SYNTAX_RULE = "JG000"
MAX_SNIPPET_LINES = 5


def ruff_command() -> list[str]:
    """The ruff executable: the one shipped with the `ruff` package, else `python -m ruff`."""
    try:
        from ruff import find_ruff_bin

        return [os.fsdecode(find_ruff_bin())]
    except (ImportError, FileNotFoundError):
        return [sys.executable, "-m", "ruff"]


def _run(args: list[str], source: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [*ruff_command(), *args],
            input=source,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfraError(f"ruff could not run: {exc}", kind="lint") from exc


def format_source(source: str) -> str | None:
    """`ruff format` of `source`, or None when ruff cannot parse it (see `check_source`)."""
    result = _run(["format", *RUFF_OPTIONS, "--stdin-filename", STDIN_NAME, "-"], source)
    if result.returncode == 0:
        return result.stdout
    if not any(f.rule == SYNTAX_RULE for f in check_source(source)):
        raise InfraError(f"ruff format failed: {result.stderr.strip()[:500]}", kind="lint")
    return None


def check_source(source: str) -> list[Finding]:
    """Findings of the curated `ruff check` selection on `source`; syntax errors as JG000."""
    args = [
        "check",
        *RUFF_OPTIONS,
        "--output-format",
        "json",
        "--select",
        ",".join(RUFF_SELECT),
        "--ignore",
        ",".join(RUFF_IGNORE),
        "--stdin-filename",
        STDIN_NAME,
        "-",
    ]
    result = _run(args, source)
    if result.returncode not in (0, 1):
        raise InfraError(f"ruff check failed: {result.stderr.strip()[:500]}", kind="lint")
    try:
        items = json.loads(result.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise InfraError(f"ruff check printed invalid JSON: {exc}", kind="lint") from exc
    lines = source.splitlines()
    return [_finding(item, lines) for item in items]


def _finding(item: dict[str, Any], lines: list[str]) -> Finding:
    start = item.get("location") or {}
    end = item.get("end_location") or start
    line = max(int(start.get("row") or 1), 1)
    end_line = max(int(end.get("row") or line), line)
    code = item.get("code") or SYNTAX_RULE
    syntax = code == "invalid-syntax" or item.get("name") == "invalid-syntax"
    fix = item.get("fix") or {}
    shown = lines[line - 1 : min(end_line, line + MAX_SNIPPET_LINES - 1)]
    return Finding(
        rule=SYNTAX_RULE if syntax else code,
        origin="ruff",
        message=("Syntax error: " if syntax else "") + str(item.get("message", "")),
        guidance=fix.get("message")
        or ("The module must parse as Python 3.11." if syntax else None),
        line=line,
        column=max(int(start.get("column") or 1), 1),
        end_line=end_line,
        snippet="\n".join(shown),
    )
