"""The lint stage: ruff format, curated ruff check, then judgegen's rules in one libcst pass."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper

from generator.stages.lint.context import LintContext
from generator.stages.lint.models import Finding, LintReport
from generator.stages.lint.ruffcheck import SYNTAX_RULE, check_source, format_source
from generator.stages.lint.rules import ALL_RULES
from toolkit.errors import SpecError


def run_rules(source: str, rules: Collection[str] | None = None) -> list[Finding]:
    """Judgegen's rules (all, or the ids in `rules`) over `source`; a parse error is JG000."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [
            Finding(
                rule=SYNTAX_RULE,
                origin="judgegen",
                message=f"Syntax error: {exc.message}",
                guidance="The module must parse as Python 3.11.",
                line=max(exc.raw_line, 1),
                column=max(exc.raw_column, 0) + 1,
                end_line=max(exc.raw_line, 1),
                snippet=exc.context or "",
            )
        ]
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = LintContext(wrapper, source)
    visitors = [rule(ctx) for rule in ALL_RULES if rules is None or rule.id in rules]
    wrapper.visit_batched(visitors, before_visit=ctx.before_visit, after_leave=ctx.after_leave)
    return ctx.findings


def _ordered(findings: Iterable[Finding]) -> list[Finding]:
    unique: dict[tuple[str, int, int, str], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.rule, finding.line, finding.column, finding.message), finding)
    return sorted(unique.values(), key=lambda f: (f.line, f.column, f.rule, f.message))


def lint_source(
    source: str,
    filename: str = "<judge>",
    *,
    rules: Collection[str] | None = None,
    ruff: bool = True,
) -> LintReport:
    """Format `source` with ruff and report every finding; lines refer to the formatted text.

    `rules` restricts judgegen's rules to those ids; `ruff=False` skips ruff entirely (format
    and check), for callers that only want the JG rules. Raises InfraError if ruff cannot run.
    """
    formatted = format_source(source) if ruff else source
    if formatted is None:
        syntax = [f for f in check_source(source) if f.rule == SYNTAX_RULE]
        return LintReport(path=filename, source=source, reformatted=False, findings=syntax)
    findings = check_source(formatted) if ruff else []
    if not any(f.rule == SYNTAX_RULE for f in findings):
        findings.extend(run_rules(formatted, rules))
    return LintReport(
        path=filename,
        source=formatted,
        reformatted=formatted != source,
        findings=_ordered(findings),
    )


def lint_file(path: str | Path) -> LintReport:
    """`lint_source` on a file's text (UTF-8); an undecodable file is a SpecError."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            str(path), "encoding", f"not UTF-8 ({exc.reason})", "save as UTF-8"
        ) from exc
    return lint_source(source, str(path))


def lint_files(paths: Iterable[str | Path]) -> list[LintReport]:
    """`lint_file` on each path, in order."""
    return [lint_file(path) for path in paths]
