"""A stand-in for `generator.lint` while it is being written: ruff format + ruff check (F, E9)."""

from __future__ import annotations

import json
import subprocess

from pydantic import BaseModel, Field
from ruff.__main__ import find_ruff_bin


class Finding(BaseModel):
    """One problem at one line."""

    rule: str
    message: str
    line: int
    snippet: str = ""


class LintReport(BaseModel):
    """The formatted source and its findings."""

    source: str
    findings: list[Finding] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there is no finding."""
        return not self.findings

    def render(self, *, guidance: bool = False) -> str:
        """One line per finding."""
        return "\n".join(f"{f.line}: {f.rule} {f.message}" for f in self.findings)


def _ruff(*args: str, source: str) -> subprocess.CompletedProcess[str]:
    command = [find_ruff_bin(), *args, "--isolated", "--no-cache", "-"]
    return subprocess.run(command, input=source, capture_output=True, text=True, check=False)


def lint_source(source: str, filename: str) -> LintReport:
    """Format with ruff, then report pyflakes and syntax findings."""
    formatted = _ruff("format", "--stdin-filename", filename, source=source)
    text = formatted.stdout if formatted.returncode == 0 else source
    checked = _ruff(
        "check",
        "--select",
        "F,E9",
        "--output-format",
        "json",
        "--stdin-filename",
        filename,
        source=text,
    )
    lines = text.splitlines()
    findings = [
        Finding(
            rule=item.get("code") or "invalid-syntax",
            message=item["message"],
            line=item["location"]["row"],
            snippet=lines[item["location"]["row"] - 1]
            if item["location"]["row"] <= len(lines)
            else "",
        )
        for item in json.loads(checked.stdout or "[]")
    ]
    if "async def evaluate(" not in text:
        findings.append(Finding(rule="JG-entry", message="no `async def evaluate(ev)`", line=1))
    return LintReport(source=text, findings=findings)
