"""The lint stage for judge scripts: ruff (format + curated check) and judgegen's own rules.

`lint_source`/`lint_file` give a `LintReport` (formatted source, findings, `ok`); `catalog()`
and `render_catalog_markdown()` give the same rules as a mistakes catalog for the drafting
prompt, so what the model is told to avoid is exactly what lint reports.
"""

from generator.stages.lint.catalog import catalog, render_catalog_markdown
from generator.stages.lint.engine import lint_file, lint_files, lint_source, run_rules
from generator.stages.lint.models import LINT_VERSION, Finding, LintReport, RuleDoc
from generator.stages.lint.rule import Rule
from generator.stages.lint.rules import ALL_RULES

__all__ = [
    "ALL_RULES",
    "LINT_VERSION",
    "Finding",
    "LintReport",
    "Rule",
    "RuleDoc",
    "catalog",
    "lint_file",
    "lint_files",
    "lint_source",
    "render_catalog_markdown",
    "run_rules",
]
