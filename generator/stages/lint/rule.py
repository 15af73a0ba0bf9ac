"""The rule framework: one class per mistake, each a batchable libcst visitor.

A rule carries its catalog entry (`id`, `name`, `title`, `message`, `bad`, `good`) as class
attributes and reports through the shared `LintContext`. All rules of a file run in one
traversal (`MetadataWrapper.visit_batched`); whole-function checks run in `leave_FunctionDef`
or `leave_Module`, when the context's facts for that scope are complete.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import libcst as cst

from generator.stages.lint.context import LintContext, ScopeFacts
from generator.stages.lint.models import RuleDoc


class Rule(cst.BatchableCSTVisitor):
    """Base of judgegen's own rules; subclasses set the catalog fields and visit methods."""

    id: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str]
    message: ClassVar[str]
    bad: ClassVar[str]
    good: ClassVar[str]

    def __init__(self, ctx: LintContext) -> None:
        super().__init__()
        self.ctx = ctx

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        """The visit/leave methods the rule classes define (not libcst's hundreds of stubs)."""
        names: set[str] = set()
        for cls in type(self).__mro__:
            if cls is Rule:
                break
            names.update(n for n in vars(cls) if n.startswith(("visit_", "leave_")))
        return {name: getattr(self, name) for name in sorted(names)}

    def report(self, node: cst.CSTNode, detail: str, related: cst.CSTNode | None = None) -> None:
        """Report `detail` at `node` with this rule's message as guidance.

        `{line}` in `detail` is replaced by the line of `related`.
        """
        self.ctx.report(self.id, node, detail, guidance=self.message, related=related)

    @classmethod
    def doc(cls) -> RuleDoc:
        """This rule's catalog entry."""
        return RuleDoc(
            id=cls.id,
            name=cls.name,
            title=cls.title,
            message=cls.message,
            bad=cls.bad.strip("\n") + "\n",
            good=cls.good.strip("\n") + "\n",
        )


class ScopeRule(Rule):
    """A rule that checks each function, and the module, once that scope's facts are complete."""

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._settle(self.ctx.scopes[original_node])

    def leave_Module(self, original_node: cst.Module) -> None:
        self._settle(self.ctx.scopes[original_node])

    def _settle(self, facts: ScopeFacts) -> None:
        """Check one finished scope."""
        raise NotImplementedError
