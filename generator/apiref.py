"""The toolkit API reference for the drafting LLM, rendered from the toolkit's own code.

Signatures come from `inspect.signature` (annotations kept as written) and prose from the
docstrings, so the reference never drifts from the toolkit. The output is byte-identical for
the same code: no object addresses, no absolute paths, members in a fixed order.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any, get_args

from generator.lint.rules.contract import ALLOWED_MODULES, FORBIDDEN_TOOLKIT
from toolkit import checks, tree
from toolkit.evaluator import Evaluator
from toolkit.tree import AggregationStrategy, NodeStatus, VerificationNode

# The Evaluator methods a judge uses, in the order a judge meets them.
EVALUATOR_METHODS: tuple[str, ...] = (
    "add_parallel",
    "add_sequential",
    "add_leaf",
    "add_custom_node",
    "extract",
    "verify",
    "batch_verify",
    "add_ground_truth",
    "add_custom_info",
    "find_node",
    "score",
    "get_summary",
)

# Module-level names a judge defines, read by the runner (`toolkit.runner.loader`).
JUDGE_CONSTANTS: tuple[tuple[str, str], ...] = (
    ("TASK_ID", "str, required: the task id, equal to the judge's file name without `.py`."),
    ("TASK_DESCRIPTION", "str, required: the exact text the agent was given."),
    ("GROUND_TRUTH", "dict, optional: reference facts; recorded in the summary's info list."),
    (
        "ROOT_STRATEGY",
        '"parallel" (default) or "sequential": how the root combines its children.',
    ),
)

_CONTRACT_EXAMPLE = '''\
from pydantic import BaseModel

from toolkit import Evaluator, checks

TASK_ID = "example_task"
TASK_DESCRIPTION = """...the exact text the agent was given..."""
GROUND_TRUTH = {"release_date": "2023-12-07"}


class Release(BaseModel):
    name: str | None = None
    date: str | None = None
    url: str | None = None


async def evaluate(ev: Evaluator) -> None:
    release = await ev.extract(
        prompt="Extract the release name, its date and the URL cited for it.",
        template_class=Release,
        extraction_name="release",
    )
    node = ev.add_parallel(id="release", desc="The release is identified and sourced")
    ev.add_custom_node(
        result=bool(release.name and release.url),
        id="release_given",
        desc="The answer names a release and cites a URL for it",
        parent=node,
    )
    ev.add_custom_node(
        result=checks.same_date(release.date, GROUND_TRUTH["release_date"]),
        id="release_date_correct",
        desc="The release date is 7 December 2023",
        parent=node,
    )
    leaf = ev.add_leaf(id="release_sourced", desc="A cited page supports it", parent=node)
    await ev.verify(
        claim=f"{release.name} was released on {release.date}.", node=leaf, sources=release.url
    )'''


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def _default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list, frozenset, set, dict)) and not value:
        return repr(value)
    return f"<{type(value).__name__}>"


def _parameter(param: inspect.Parameter) -> str:
    prefix: dict[object, str] = {
        inspect.Parameter.VAR_POSITIONAL: "*",
        inspect.Parameter.VAR_KEYWORD: "**",
    }
    text = prefix.get(param.kind, "") + param.name
    has_annotation = param.annotation is not inspect.Parameter.empty
    if has_annotation:
        text += f": {_annotation(param.annotation)}"
    if param.default is not inspect.Parameter.empty:
        text += f" = {_default(param.default)}" if has_annotation else f"={_default(param.default)}"
    return text


def _parameters(signature: inspect.Signature, drop_self: bool) -> list[str]:
    """Parameters as source text, with `/` and `*` markers where the signature has them."""
    params = list(signature.parameters.values())
    if drop_self and params and params[0].name == "self":
        params = params[1:]
    out: list[str] = []
    star_written = False
    for index, param in enumerate(params):
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            star_written = True
        if param.kind is inspect.Parameter.KEYWORD_ONLY and not star_written:
            out.append("*")
            star_written = True
        out.append(_parameter(param))
        following = params[index + 1] if index + 1 < len(params) else None
        is_last_positional = param.kind is inspect.Parameter.POSITIONAL_ONLY and (
            following is None or following.kind is not inspect.Parameter.POSITIONAL_ONLY
        )
        if is_last_positional:
            out.append("/")
    return out


def render_signature(function: Callable[..., Any], *, drop_self: bool = False) -> str:
    """`def name(params) -> ret` (or `async def`), one parameter a line when over 100 chars."""
    signature = inspect.signature(function, eval_str=False)
    keyword = "async def" if inspect.iscoroutinefunction(function) else "def"
    params = _parameters(signature, drop_self)
    returns = ""
    if signature.return_annotation is not inspect.Signature.empty:
        returns = f" -> {_annotation(signature.return_annotation)}"
    one_line = f"{keyword} {function.__name__}({', '.join(params)}){returns}"
    if len(one_line) <= 100:
        return one_line
    body = "".join(f"    {param},\n" for param in params)
    return f"{keyword} {function.__name__}(\n{body}){returns}"


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__) if obj.__doc__ else "(no docstring)"


def _function_section(title: str, function: Callable[..., Any], *, drop_self: bool) -> str:
    signature = render_signature(function, drop_self=drop_self)
    return f"### `{title}`\n\n```python\n{signature}\n```\n\n{_doc(function)}\n"


def _contract_section() -> str:
    constants = "\n".join(f"- `{name}`: {meaning}" for name, meaning in JUDGE_CONSTANTS)
    allowed = ", ".join(f"`{name}`" for name in sorted(ALLOWED_MODULES))
    forbidden = ", ".join(f"`{name}`" for name in FORBIDDEN_TOOLKIT)
    return (
        "## The judge contract\n\n"
        "A judge is one Python module, `generated_judges/<task_id>.py`. It defines these "
        "module-level constants:\n\n"
        f"{constants}\n\n"
        "and one entry point, `async def evaluate(ev: Evaluator) -> None`. The runner builds "
        "the `Evaluator` (answer, task description, judging backend, cited pages) with its "
        "root node already created, calls `evaluate(ev)`, then scores the tree; the judge "
        "never constructs clients, caches or loggers, never reads the clock or the network, "
        "and returns nothing.\n\n"
        f"Imports: only these modules (and their submodules) are allowed: {allowed}. From "
        "`toolkit` use `Evaluator`, `checks`, `VerificationNode` and `AggregationStrategy`; "
        f"{forbidden} are the runner's, never the judge's.\n\n"
        f"```python\n{_CONTRACT_EXAMPLE}\n```\n"
    )


# Mistakes the signatures alone do not prevent; each one has produced a wrong judge.
TRAPS: tuple[str, ...] = (
    "`verify(claim, node)` with no `sources` is a plain check: the verifier sees the claim "
    "(and the answer), never a page. A leaf whose description speaks of a cited or official "
    "page must pass that page's URL(s) as `sources=`.",
    "`extract(..., source=url)` reads one page (singular `source`); `verify(..., sources=urls)` "
    "takes one URL or a list (plural `sources`). Any other keyword is a TypeError.",
    "`add_custom_node` is critical by default: a failed custom check scores its parent 0. "
    "Pass `critical=False` for a partial-credit check.",
    "Under a sequential parent, the first child scoring below 1 zeroes every later sibling, "
    "custom nodes included; put existence gates first and partial-credit checks where a "
    "failure should not cancel them.",
    "The verifier sees the claim, the task description, the answer and (with sources) the "
    "page text. It does not see your variables: write the expected value into the claim, and "
    "gate on the extracted value first so a missing field never reaches a claim as 'None'.",
)


def _traps_section() -> str:
    items = "\n".join(f"- {trap}" for trap in TRAPS)
    return f"## Traps\n\n{items}\n"


def _evaluator_section() -> str:
    parts = [f"## `Evaluator` (the `ev` argument)\n\n{_doc(Evaluator)}\n"]
    for name in EVALUATOR_METHODS:
        method = inspect.getattr_static(Evaluator, name)
        parts.append(_function_section(f"ev.{name}", method, drop_self=True))
    return "\n".join(parts)


def _node_section() -> str:
    annotations = inspect.get_annotations(VerificationNode)
    lines = []
    for name, field in VerificationNode.model_fields.items():
        text = f"- `{name}: {_annotation(annotations.get(name, field.annotation))}`"
        if field.is_required():
            text += " (required)"
        elif field.default_factory is not None:
            text += f" = `{field.default_factory.__name__}()`"
        else:
            text += f" = `{_default(field.default)}`"
        if field.description:
            text += f": {field.description}"
        lines.append(text)
    statuses = ", ".join(f"`{status}`" for status in get_args(NodeStatus))
    return (
        f"## `VerificationNode` (what the `add_*` methods return)\n\n{_doc(VerificationNode)}\n\n"
        "Fields:\n\n" + "\n".join(lines) + f"\n\n`NodeStatus` is one of {statuses}.\n"
    )


def _strategy_section() -> str:
    members = "\n".join(
        f"- `AggregationStrategy.{member.name}` = `{member.value!r}`"
        for member in AggregationStrategy
    )
    return (
        f"## `AggregationStrategy`\n\n{_doc(AggregationStrategy)}\n\n{members}\n\n"
        f"### How the tree is scored\n\n{_doc(tree)}\n"
    )


def _checks_section() -> str:
    parts = [f"## `toolkit.checks` (deterministic checks)\n\n{_doc(checks)}\n"]
    for name in public_check_names():
        parts.append(_function_section(f"checks.{name}", getattr(checks, name), drop_self=False))
    return "\n".join(parts)


def public_check_names() -> list[str]:
    """The public functions of `toolkit.checks` (its `__all__`), in definition order."""
    exported = set(getattr(checks, "__all__", ()))
    return [
        name
        for name, value in vars(checks).items()
        if name in exported and inspect.isfunction(value)
    ]


def evaluator_methods() -> dict[str, Callable[..., Any]]:
    """The Evaluator methods a judge calls, by name (the functions `judgegen docs` renders)."""
    return {name: inspect.getattr_static(Evaluator, name) for name in EVALUATOR_METHODS}


def check_functions() -> dict[str, Callable[..., Any]]:
    """The public `toolkit.checks` functions, by name (the functions `judgegen docs` renders)."""
    return {name: getattr(checks, name) for name in public_check_names()}


def render_api_reference() -> str:
    """The whole reference as Markdown: contract, Evaluator, node fields, strategies, checks."""
    sections = [
        "# judgegen toolkit API reference\n\n"
        "Everything a judge may use. Signatures and descriptions are taken from the toolkit's "
        "code.\n",
        _contract_section(),
        _traps_section(),
        _evaluator_section(),
        _node_section(),
        _strategy_section(),
        _checks_section(),
    ]
    return "\n".join(sections)
