"""One self-contained HTML page for a results folder or a single result (no network).

The page shows per-agent metrics, a per-task table, and for every answer a collapsible
rubric tree colored by status, with each verdict's reasoning, errors and extracted info. A
result file the metrics leave out (stale, not counted by the run that wrote the summary, or
a copy of another file's result) is marked so in the table and over its tree, with the reason.
Everything is inline (CSS, a few lines of JS for expand/collapse), so it opens anywhere.
The markup is `generator/review/templates/report.html.j2`; text is HTML-escaped by Jinja2.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from toolkit.runner.metrics import score_text

STATUS_COLORS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "partial": "#bf8700",
    "skipped": "#6e7781",
    "error": "#8250df",
    "initialized": "#afb8c1",
}


@dataclass(frozen=True)
class LeftOut:
    """Why the page's metrics leave a result out, shown with it: `label` names the kind
    (`stale`: it no longer stands for its inputs; `not counted`: the run that wrote the
    agent's summary left it out, or its file is no result of its own path, a copy), `reason`
    says what."""

    label: str
    reason: str


def _order(result: Mapping[str, Any]) -> tuple[str, str, str]:
    """Where a result comes on the page: by agent, task and answer."""
    return (
        str(result.get("agent_name", "")),
        str(result.get("task_id", "")),
        str(result.get("answer_name", "")),
    )


@functools.cache
def _environment() -> Environment:
    """The report templates' environment (autoescaping HTML; built once)."""
    environment = Environment(
        loader=PackageLoader("generator.review", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["pretty_json"] = functools.partial(
        json.dumps, indent=2, ensure_ascii=False, default=str
    )
    environment.filters["score"] = functools.partial(score_text, digits=3)
    return environment


def _reasons(result: dict[str, Any]) -> dict[str, list[str]]:
    """Each node's verdict reasoning (with the page that supported it), by node id."""
    by_node: dict[str, list[str]] = {}
    for record in result.get("verifications") or []:
        node_id = record.get("node_id")
        if node_id:
            text = record.get("reasoning") or ""
            source = record.get("supported_by")
            by_node.setdefault(node_id, []).append(f"{text} (source: {source})" if source else text)
    return by_node


def render_report(
    results: list[dict[str, Any]],
    metrics: dict[str, dict[str, Any]] | None = None,
    *,
    title: str = "judgegen report",
    left_out: Sequence[LeftOut | None] | None = None,
) -> str:
    """The whole page for `results` (result dicts) and optional per-agent metric values;
    `left_out`: one entry per result, in the order of `results`, saying why those metrics
    leave it out (None: they count it). By position, not by (agent, task, answer): a copy
    of a result file holds the same names as the result it copies, and only it is left out."""
    marks = list(left_out) if left_out is not None else [None] * len(results)
    if len(marks) != len(results):
        raise ValueError(f"left_out has {len(marks)} entries for {len(results)} results")
    ordered = sorted(zip(results, marks, strict=True), key=lambda pair: _order(pair[0]))
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            metrics=metrics or {},
            results=ordered,
            reasons_of=_reasons,
            colors=STATUS_COLORS,
        )
    )
