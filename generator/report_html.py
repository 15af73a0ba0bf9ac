"""One self-contained HTML page for a results folder or a single result (no network).

The page shows per-agent metrics, a per-task table, and for every answer a collapsible
rubric tree colored by status, with each verdict's reasoning, errors and extracted info.
Everything is inline (CSS, a few lines of JS for expand/collapse), so it opens anywhere.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

STATUS_COLORS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "partial": "#bf8700",
    "skipped": "#6e7781",
    "error": "#8250df",
    "initialized": "#afb8c1",
}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1f2328}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}
th{background:#f6f8fa}.num{text-align:right;font-variant-numeric:tabular-nums}
details.node{margin-left:18px;border-left:3px solid var(--c);padding-left:8px}
details.node>summary{cursor:pointer;list-style:none}
.badge{display:inline-block;min-width:64px;text-align:center;color:#fff;border-radius:10px;
padding:0 6px;font-size:12px;background:var(--c)}
.mark{font-size:11px;border:1px solid #d0d7de;border-radius:8px;padding:0 5px;margin-left:4px}
.reason{color:#57606a;margin:2px 0 4px 22px;white-space:pre-wrap}
.err{color:#8250df;margin:2px 0 4px 22px;white-space:pre-wrap}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:320px}
.toolbar button{margin-right:6px}
"""

_JS = """
function setAll(open){document.querySelectorAll('details').forEach(d=>d.open=open)}
"""


def _badge(status: str) -> str:
    color = STATUS_COLORS.get(status, "#6e7781")
    return f'<span class="badge" style="--c:{color}">{escape(status)}</span>'


def _reasons(result: dict[str, Any]) -> dict[str, list[str]]:
    by_node: dict[str, list[str]] = {}
    for record in result.get("verifications") or []:
        node_id = record.get("node_id")
        if node_id:
            text = record.get("reasoning") or ""
            source = record.get("supported_by")
            by_node.setdefault(node_id, []).append(f"{text} (source: {source})" if source else text)
    return by_node


def _node_html(node: dict[str, Any], reasons: dict[str, list[str]], depth: int) -> str:
    status = node.get("status", "initialized")
    color = STATUS_COLORS.get(status, "#6e7781")
    marks = ""
    if node.get("critical"):
        marks += '<span class="mark">critical</span>'
    if node.get("children") and node.get("strategy") == "sequential":
        marks += '<span class="mark">sequential</span>'
    head = (
        f"{_badge(status)} <b>{escape(node['id'])}</b> "
        f'<span class="num">{float(node.get("score", 0)):.2f}</span> '
        f"{escape(node.get('desc', ''))}{marks}"
    )
    body = "".join(f'<div class="reason">{escape(r)}</div>' for r in reasons.get(node["id"], []))
    if node.get("error"):
        body += f'<div class="err">error: {escape(node["error"])}</div>'
    body += "".join(_node_html(c, reasons, depth + 1) for c in node.get("children") or [])
    is_open = " open" if depth < 2 or status in ("failed", "error", "partial") else ""
    return (
        f'<details class="node" data-status="{escape(status)}" data-id="{escape(node["id"])}" '
        f'style="--c:{color}"{is_open}><summary>{head}</summary>{body}</details>'
    )


def result_section(result: dict[str, Any]) -> str:
    """One answer: its status, score, errors, the rubric tree and the extracted info."""
    breakdown = (result.get("eval_breakdown") or [{}])[0]
    tree = breakdown.get("verification_tree") or {}
    title = (
        f"{escape(str(result.get('agent_name', '')))} / {escape(str(result.get('task_id', '')))}"
        f" / {escape(str(result.get('answer_name', '')))}"
    )
    status = result.get("status", "complete")
    parts = [
        f'<section class="result" data-task="{escape(str(result.get("task_id", "")))}">',
        f"<h3>{title} — score {float(result.get('final_score') or 0):.3f} {_badge(status)}</h3>",
    ]
    for error in result.get("errors") or []:
        message = error.get("message", error) if isinstance(error, dict) else error
        parts.append(f'<div class="err">{escape(str(message))}</div>')
    if tree:
        parts.append(_node_html(tree, _reasons(result), 0))
    info = breakdown.get("info")
    if info:
        dump = json.dumps(info, indent=2, ensure_ascii=False, default=str)
        parts.append(
            f"<details><summary>extracted information</summary><pre>{escape(dump)}</pre></details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _metrics_table(metrics: dict[str, dict[str, Any]]) -> str:
    if not metrics:
        return ""
    rows = ["<table><tr><th>agent</th><th>metric</th><th>value</th></tr>"]
    for agent, values in sorted(metrics.items()):
        for name, value in values.items():
            shown = f"{value:.3f}" if isinstance(value, float) else escape(str(value))
            rows.append(
                f'<tr><td>{escape(agent)}</td><td>{escape(name)}</td><td class="num">{shown}</td></tr>'
            )
    rows.append("</table>")
    return "<h2>Metrics</h2>" + "".join(rows)


def _task_table(results: list[dict[str, Any]]) -> str:
    rows = [
        "<table><tr><th>agent</th><th>task</th><th>answer</th><th>score</th><th>status</th>"
        "<th>nodes</th></tr>"
    ]
    for r in results:
        stats = r.get("tree_statistics") or {}
        rows.append(
            f"<tr><td>{escape(str(r.get('agent_name', '')))}</td><td>{escape(str(r.get('task_id', '')))}</td>"
            f"<td>{escape(str(r.get('answer_name', '')))}</td>"
            f'<td class="num">{float(r.get("final_score") or 0):.3f}</td>'
            f"<td>{_badge(r.get('status', 'complete'))}</td>"
            f'<td class="num">{stats.get("total_nodes", "")}</td></tr>'
        )
    rows.append("</table>")
    return "<h2>Answers</h2>" + "".join(rows)


def render_report(
    results: list[dict[str, Any]],
    metrics: dict[str, dict[str, Any]] | None = None,
    *,
    title: str = "judgegen report",
) -> str:
    """The whole page for `results` (result dicts) and optional per-agent metric values."""
    ordered = sorted(
        results,
        key=lambda r: (str(r.get("agent_name")), str(r.get("task_id")), str(r.get("answer_name"))),
    )
    body = [
        f"<h1>{escape(title)}</h1>",
        '<div class="toolbar"><button onclick="setAll(true)">expand all</button>'
        '<button onclick="setAll(false)">collapse all</button></div>',
        _metrics_table(metrics or {}),
        _task_table(ordered),
        "<h2>Rubric trees</h2>",
        *(result_section(r) for r in ordered),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style><script>{_JS}</script></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
