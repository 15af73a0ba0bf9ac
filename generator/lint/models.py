"""What the lint stage hands on: findings, per-file reports and catalog entries.

These cross boundaries (the repair prompt, review sidecars, `judgegen check --json`), so each is
a versioned pydantic model. Lines and columns are 1-based and refer to the formatted source.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

LINT_VERSION: Literal[1] = 1


class Finding(BaseModel):
    """One problem in a judge script, located and explained for the model that will repair it."""

    version: Literal[1] = LINT_VERSION
    rule: str = Field(description="Rule id: `JG0xx` for judgegen rules, a ruff code otherwise.")
    origin: Literal["judgegen", "ruff"] = Field(description="Which checker reported it.")
    message: str = Field(description="What is wrong at this place, in one or two sentences.")
    guidance: str | None = Field(
        default=None, description="How to fix this kind of mistake (the rule's catalog text)."
    )
    line: int = Field(ge=1, description="First line of the offending code.")
    column: int = Field(ge=1, description="Column of the offending code on `line`.")
    end_line: int = Field(ge=1, description="Last line of the offending code.")
    snippet: str = Field(description="The offending source line(s), at most five.")


class LintReport(BaseModel):
    """The lint stage's result for one judge: the formatted source and what is wrong with it."""

    version: Literal[1] = LINT_VERSION
    path: str = Field(description="Where the source came from (a file path or a label).")
    source: str = Field(description="The source after `ruff format` (unchanged if unparsable).")
    reformatted: bool = Field(description="True when `ruff format` changed the source.")
    findings: list[Finding] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when there is no finding at all."""
        return not self.findings

    def render(self, *, guidance: bool = False) -> str:
        """One `path:line:col: RULE message` line per finding.

        With `guidance` (for the repair prompt): each finding's source lines too, then how to
        fix each rule that fired, once per rule.
        """
        lines: list[str] = []
        fixes: dict[str, str] = {}
        for finding in self.findings:
            lines.append(
                f"{self.path}:{finding.line}:{finding.column}: {finding.rule} {finding.message}"
            )
            if guidance:
                lines.extend(f"    | {text}" for text in finding.snippet.splitlines())
                if finding.guidance:
                    fixes.setdefault(finding.rule, finding.guidance)
        if fixes:
            lines.append("")
            lines.append("How to fix:")
            lines.extend(f"- {rule}: {text}" for rule, text in sorted(fixes.items()))
        return "\n".join(lines)


class RuleDoc(BaseModel):
    """One entry of the mistakes catalog shown to the model that drafts judges."""

    version: Literal[1] = LINT_VERSION
    id: str
    name: str = Field(description="Short kebab-case name, stable like the id.")
    title: str = Field(description="The mistake, in a few words.")
    message: str = Field(description="What goes wrong and how to fix it.")
    bad: str = Field(description="A minimal snippet that makes the rule fire.")
    good: str = Field(description="The same snippet, fixed.")
