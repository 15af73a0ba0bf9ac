"""`judgegen import`: port a Mind2Web 2 judge by rewriting its `mind2web2` imports alone.

A libcst codemod rewrites every `from mind2web2... import ...` and `import mind2web2...` to
the toolkit module that `toolkit.compat.mapping.MODULES` names for it. Invariant: every other
byte of the judge stays as it was, and nothing is guessed: an import of a module or name the
table does not cover is left untouched and reported with its file and line, and so is a use
like `tool_googlemap.Missing` of a name bound to an imported module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    ImportAssignment,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)
from pydantic import BaseModel, Field

from toolkit.compat.mapping import MODULES, ROOT_PACKAGE, exported_names, is_mind2web2
from toolkit.errors import SpecError
from toolkit.util.files import write_atomic

REPORT_VERSION = 1
ENTRY_POINTS = ("evaluate_answer", "evaluate")

JudgeStatus = Literal["written", "unchanged", "out_of_date", "up_to_date", "not_written"]


class ImportRewrite(BaseModel):
    """One import statement (or one alias of it) that was rewritten."""

    line: int = Field(description="1-based line of the import in the source judge.")
    module: str = Field(description="The mind2web2 module as the judge imports it.")
    target: str = Field(description="The toolkit module it now imports instead.")
    names: list[str] = Field(
        default_factory=list, description="Names imported from it (`*` for a star import)."
    )
    alias: str | None = Field(
        default=None, description="For `import` statements: the name the module is bound to."
    )


class ImportProblem(BaseModel):
    """Something the codemod could not map; the statement was left unchanged."""

    line: int = Field(description="1-based line in the source judge.")
    module: str = Field(description="The module the statement imports from.")
    name: str | None = Field(default=None, description="The unknown name, if one is.")
    message: str = Field(description="What is wrong and how to resolve it.")


class ImportedJudge(BaseModel):
    """The outcome of importing one judge file."""

    version: int = REPORT_VERSION
    source: str = Field(description="Path of the Mind2Web 2 judge that was read.")
    output: str = Field(description="Path of the rewritten judge (written only when mapped).")
    status: JudgeStatus = Field(
        description="written/unchanged (wrote or already identical), out_of_date/up_to_date "
        "(--check), not_written (problems)."
    )
    rewrites: list[ImportRewrite] = Field(default_factory=list)
    problems: list[ImportProblem] = Field(default_factory=list)


class ImportReport(BaseModel):
    """Everything one `judgegen import` run did; `ok` is False when anything needs a person."""

    version: int = REPORT_VERSION
    check: bool = Field(default=False, description="True when nothing was written (--check).")
    judges: list[ImportedJudge] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problems, and (with --check) every output already up to date."""
        return all(j.status in ("written", "unchanged", "up_to_date") for j in self.judges)


@dataclass
class RewriteResult:
    """The rewritten source of one judge and what the codemod did to it."""

    code: bytes
    rewrites: list[ImportRewrite] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)


def _dotted(name: str) -> cst.Attribute | cst.Name:
    """A `Name`/`Attribute` expression for a dotted module path."""
    expression = cst.parse_expression(name)
    if not isinstance(expression, (cst.Attribute, cst.Name)):
        raise ValueError(f"not a dotted module path: {name!r}")
    return expression


def _unknown_module(line: int, module: str) -> ImportProblem:
    return ImportProblem(
        line=line,
        module=module,
        message=f"module '{module}' has no judgegen equivalent; rewrite this import by hand "
        "or add the module to toolkit.compat.mapping.MODULES",
    )


@dataclass(frozen=True)
class _ModuleBinding:
    """A name an import binds to a mind2web2 module (`import mind2web2.x as y`, ...)."""

    statement: cst.CSTNode
    name: str
    module: str


def _attribute_chain(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> list[str]:
    """The attributes read off `name`: `gm.GoogleMapsTool().x` gives ["GoogleMapsTool"]."""
    chain: list[str] = []
    node: cst.CSTNode = name
    parent = parents.get(node)
    while isinstance(parent, cst.Attribute) and parent.value is node:
        chain.append(parent.attr.value)
        node, parent = parent, parents.get(parent)
    return chain


def _unknown_attribute(module: str, chain: list[str]) -> tuple[str, str] | None:
    """(module, name) for the first attribute of `chain` that mind2web2 `module` lacks."""
    for attribute in chain:
        submodule = f"{module}.{attribute}"
        if submodule in MODULES:
            module = submodule
            continue
        return None if attribute in exported_names(module) else (module, attribute)
    return None


def _uses(binding: _ModuleBinding, scopes: Mapping[cst.CSTNode, Any]) -> Iterator[cst.Name]:
    """Every read of the name `binding` made, resolved by scope (shadowing respected)."""
    scope = scopes.get(binding.statement)
    if scope is None:
        return
    for assignment in scope.assignments[binding.name]:
        if isinstance(assignment, ImportAssignment) and assignment.node is binding.statement:
            yield from (a.node for a in assignment.references if isinstance(a.node, cst.Name))


def _attribute_problems(
    wrapper: MetadataWrapper, bindings: Sequence[_ModuleBinding]
) -> list[ImportProblem]:
    """Uses like `tool_googlemap.Missing` of names bound to mind2web2 modules, unresolvable."""
    if not bindings:
        return []
    scopes = wrapper.resolve(ScopeProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    positions = wrapper.resolve(PositionProvider)
    problems: list[ImportProblem] = []
    for binding in bindings:
        for use in _uses(binding, scopes):
            missing = _unknown_attribute(binding.module, _attribute_chain(use, parents))
            if missing is None:
                continue
            module, name = missing
            problems.append(
                ImportProblem(
                    line=positions[use].start.line,
                    module=module,
                    name=name,
                    message=f"'{module}' has no name '{name}' under judgegen; "
                    "this use would fail when the judge runs",
                )
            )
    return problems


class _ImportRewriter(cst.CSTTransformer):
    """Rewrites mind2web2 imports in place and records rewrites and problems."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.rewrites: list[ImportRewrite] = []
        self.problems: list[ImportProblem] = []
        self.bindings: list[_ModuleBinding] = []

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        if updated_node.relative or updated_node.module is None:
            return updated_node
        module = get_full_name_for_node(updated_node.module) or ""
        if not is_mind2web2(module):
            return updated_node
        line = self._line(original_node)
        target = MODULES.get(module)
        if target is None:
            self.problems.append(_unknown_module(line, module))
            return updated_node
        if isinstance(updated_node.names, cst.ImportStar):
            names = ["*"]
        else:
            names = [get_full_name_for_node(alias.name) or "" for alias in updated_node.names]
            known = exported_names(module)
            missing = [name for name in names if name not in known]
            if missing:
                self.problems.extend(
                    ImportProblem(
                        line=line,
                        module=module,
                        name=name,
                        message=f"'{module}' has no name '{name}' under judgegen "
                        f"(it provides: {', '.join(sorted(known))}); the import was left as is",
                    )
                    for name in missing
                )
                return updated_node
        self.rewrites.append(ImportRewrite(line=line, module=module, target=target, names=names))
        if not isinstance(updated_node.names, cst.ImportStar):
            for alias in updated_node.names:
                submodule = f"{module}.{get_full_name_for_node(alias.name)}"
                if submodule in MODULES:
                    self._bind(original_node, alias, submodule)
        return updated_node.with_changes(module=_dotted(target))

    def _bind(self, statement: cst.CSTNode, alias: cst.ImportAlias, module: str) -> None:
        bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
        self.bindings.append(_ModuleBinding(statement, bound, module))

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        line = self._line(original_node)
        aliases = [self._rewrite_alias(original_node, alias, line) for alias in updated_node.names]
        if all(new is old for new, old in zip(aliases, updated_node.names, strict=True)):
            return updated_node
        return updated_node.with_changes(names=aliases)

    def _rewrite_alias(
        self, statement: cst.Import, alias: cst.ImportAlias, line: int
    ) -> cst.ImportAlias:
        module = get_full_name_for_node(alias.name) or ""
        if not is_mind2web2(module):
            return alias
        target = MODULES.get(module)
        if target is None:
            self.problems.append(_unknown_module(line, module))
            return alias
        if alias.asname is not None:
            bound = alias.evaluated_alias
            self.rewrites.append(
                ImportRewrite(line=line, module=module, target=target, alias=bound)
            )
            self._bind(statement, alias, module)
            return alias.with_changes(name=_dotted(target))
        # `import mind2web2.x` binds `mind2web2`; the compat root mirrors its submodules.
        root = MODULES[ROOT_PACKAGE]
        self.rewrites.append(
            ImportRewrite(line=line, module=module, target=root, alias=ROOT_PACKAGE)
        )
        self._bind(statement, alias, ROOT_PACKAGE)
        return alias.with_changes(
            name=_dotted(root), asname=cst.AsName(name=cst.Name(ROOT_PACKAGE))
        )


def _entry_point_problem(module: cst.Module) -> ImportProblem | None:
    defined = {
        statement.name.value for statement in module.body if isinstance(statement, cst.FunctionDef)
    }
    if defined.intersection(ENTRY_POINTS):
        return None
    return ImportProblem(
        line=1,
        module="<judge>",
        message="the judge defines no `async def evaluate_answer(client, answer, agent_name, "
        "answer_name, cache, semaphore, logger, model)` (nor a native `evaluate(ev)`)",
    )


def rewrite_source(source: bytes | str, filename: str = "<judge>") -> RewriteResult:
    """Rewrite the mind2web2 imports of one judge's source; raises SpecError if not Python."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SpecError(
            filename, "source", f"not valid Python ({exc.message} at line {exc.raw_line})", "fix it"
        ) from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    rewriter = _ImportRewriter()
    rewritten = wrapper.visit(rewriter)
    problems = list(rewriter.problems) + _attribute_problems(wrapper, rewriter.bindings)
    entry = _entry_point_problem(module)
    if entry is not None:
        problems.insert(0, entry)
    problems.sort(key=lambda p: p.line)
    code = rewritten.bytes if isinstance(source, bytes) else rewritten.code.encode("utf-8")
    return RewriteResult(code=code, rewrites=rewriter.rewrites, problems=problems)


def judge_files(paths: Sequence[Path]) -> list[Path]:
    """The judge files named by `paths` (a directory means its `*.py` files), in order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.py") if p.name != "__init__.py"))
        elif path.is_file():
            files.append(path)
        else:
            raise SpecError(str(path), "path", "no such file or directory", "check the path")
    stems: dict[str, Path] = {}
    for file in files:
        if file.stem in stems:
            raise SpecError(
                str(file),
                "path",
                f"has the same name as {stems[file.stem]} (both would be {file.stem}.py)",
                "import them into different --out directories",
            )
        stems[file.stem] = file
    return files


def import_judge(source: Path, out_dir: Path, *, check: bool = False) -> ImportedJudge:
    """Import one judge into `out_dir/<name>.py` (or, with `check`, only compare with it)."""
    result = rewrite_source(source.read_bytes(), str(source))
    output = out_dir / source.name
    current = output.read_bytes() if output.is_file() else None
    if result.problems:
        status: JudgeStatus = "not_written"
    elif check:
        status = "up_to_date" if current == result.code else "out_of_date"
    elif current == result.code:
        status = "unchanged"
    else:
        write_atomic(output, result.code)
        status = "written"
    return ImportedJudge(
        source=str(source),
        output=str(output),
        status=status,
        rewrites=result.rewrites,
        problems=result.problems,
    )


def import_judges(paths: Sequence[Path], out_dir: Path, *, check: bool = False) -> ImportReport:
    """Import every judge named by `paths`; see `import_judge`."""
    judges = [import_judge(file, out_dir, check=check) for file in judge_files(paths)]
    return ImportReport(check=check, judges=judges)


def format_report(report: ImportReport) -> str:
    """The report as compiler-style lines: `file:line: what`, then one status line per judge."""
    lines: list[str] = []
    for judge in report.judges:
        entries: list[tuple[int, str]] = []
        for rewrite in judge.rewrites:
            if rewrite.alias is None:
                text = f"{rewrite.module} -> {rewrite.target} ({', '.join(rewrite.names)})"
            else:
                text = f"import {rewrite.module} -> import {rewrite.target} as {rewrite.alias}"
            entries.append((rewrite.line, text))
        entries.extend((problem.line, f"error: {problem.message}") for problem in judge.problems)
        lines.extend(f"{judge.source}:{line}: {text}" for line, text in sorted(entries))
        lines.append(f"{judge.source} -> {judge.output}: {judge.status.replace('_', ' ')}")
    return "\n".join(lines)
