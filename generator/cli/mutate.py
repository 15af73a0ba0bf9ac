"""`judgegen mutate`: damage an answer the judge accepts, one fact at a time, and see it notice.

A mutation is killed when the mutated answer scores lower than the original (which scores 1).
`--write-review` records the outcome in the task's review record, inside its own delimited
section of the Markdown and under its own key of the JSON sidecar, so the generator's parts
of both files stay as they were.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click

from generator.cli.common import (
    backend_options,
    judge_file,
    load_task,
    location_options,
    open_backend,
    open_pages,
    pick_answer,
    run_review,
    sandbox_options,
)
from generator.cli.llm_clients import CommandClients
from generator.cli.llm_options import llm_options
from generator.review.cost import CheckingCost, LLMSpend
from generator.review.mutate import (
    REWRITE_FIX,
    MutationReport,
    MutationRow,
    RewriteRow,
    kinds_line,
    mutate_answer,
    rewrites_note,
    rewrites_summary,
    row_cells,
    unproven_count,
    unproven_note,
)
from generator.review.mutation_testing import SIDECAR_KEY, MutationTesting
from generator.review.runs import JudgedAnswer, ReviewRuns
from generator.stages.spec import LoadedSpec, SampleAnswer
from toolkit.llm.pricing import is_free
from toolkit.llm.settings import LLMSettings
from toolkit.util.files import write_atomic
from toolkit.util.hashing import sha256_file

SECTION_START = "<!-- judgegen:mutation:start -->"
SECTION_END = "<!-- judgegen:mutation:end -->"


class NotAccepted(click.ClickException):
    """The answer to mutate does not score 1, so a lower score would prove nothing."""

    exit_code = 1


async def _accepted(
    runs: ReviewRuns, judge: Path, loaded: LoadedSpec, chosen: SampleAnswer | None
) -> tuple[SampleAnswer, float, JudgedAnswer]:
    """The first candidate scoring 1, its score and its run (whose missing pages a
    mutation's run is compared with)."""
    candidates = [chosen] if chosen else loaded.answers
    scores = []
    for answer in candidates:
        judged = await runs.judged(
            judge, answer.text, task_id=loaded.task_id, answer_name=answer.name
        )
        score = float(judged.summary.get("final_score") or 0.0)
        if score >= 1.0:
            return answer, score, judged
        scores.append(f"{answer.name}={score:g}")
    raise NotAccepted(
        f"no sample answer of {loaded.task_id} scores 1 ({', '.join(scores)}); "
        "mutation testing needs an answer the judge accepts"
    )


async def _mutate(
    loaded: LoadedSpec,
    judge: Path,
    chosen: SampleAnswer | None,
    setup: tuple[Any, CommandClients, Any],
    sandbox: bool,
    timeout_s: float,
) -> MutationReport:
    """The report of mutating the accepted answer (found first: all of it is mutation
    testing, and so is its cost)."""
    backend, clients, pages = setup
    try:
        async with ReviewRuns(backend, pages=pages, sandbox=sandbox, timeout_s=timeout_s) as runs:
            answer, original, judged = await _accepted(runs, judge, loaded, chosen)
            report = await mutate_answer(
                runs,
                judge,
                loaded.task_id,
                answer.name,
                answer.text,
                original,
                original_missing=judged.missing_pages,
                progress=lambda message: click.echo(message, err=True),
            )
            return report
    finally:
        await clients.aclose()


def command_spend(client: Any) -> LLMSpend:
    """What `client` (the command's LLM client; None for a --backend) answered and cost: a
    replay costs $0, with the live price as an estimate."""
    if client is None:
        return LLMSpend(
            note="judged by a --backend: its own LLM calls and cost, if any, are not known"
        )
    summary = client.summary()
    replayed = is_free(getattr(client.provider, "name", ""))
    return LLMSpend(
        calls=summary.calls,
        cost_usd=round(summary.cost_usd, 6),
        estimated_live_usd=round(summary.estimated_usd, 6) if replayed else None,
    )


def render_text(report: MutationReport) -> str:
    """One line per mutation, then one per rewrite keeping the meaning, then the kill rate and
    how many rewrites kept the score (and, when one changed it, what to do about it)."""
    lines = [
        f"{report.task_id}: mutating answer '{report.answer}' (score {report.original_score:g})"
    ]
    rows: list[MutationRow | RewriteRow] = [*report.mutations, *report.rewrites]
    width = max([8, *(len(row.outcome) for row in rows)])
    for row in report.mutations:
        lines += _row_lines(row, width)
    if report.rewrites:
        lines.append("rewrites keeping the meaning (the judge must keep the score):")
    for rewrite in report.rewrites:
        lines += _row_lines(rewrite, width)
    lines.append(_kill_rate_line(report))
    if report.rewrites:
        lines.append(rewrites_summary(report.rewrites))
    if report.rewrites_changed:
        lines.append(f"a rewrite keeping the meaning changed the score: {REWRITE_FIX}")
    return "\n".join(lines) + "\n"


def _row_lines(row: MutationRow | RewriteRow, width: int) -> list[str]:
    score = "error" if row.score is None else f"{row.score:.3f}"
    lines = [f"  {row.outcome:<{width}} {row.name:<18} {score:>6}  {row.description}"]
    indent = " " * (width + 3)
    if row.error:
        lines.append(f"{indent}{row.error}")
    if row.missing_pages:
        pages = ", ".join(row.missing_pages)
        lines.append(f"{indent}cited pages missing from the page store: {pages}")
    return lines


def _rate_line(report: MutationReport) -> str:
    return _kill_rate_line(report) + rewrites_note(report.rewrites)


def _kill_rate_line(report: MutationReport) -> str:
    if report.kill_rate is None:
        if report.errors or report.inconclusive:
            counted = unproven_count(report.errors, report.inconclusive)
            return f"no mutation was judged conclusively ({counted})"
        return "no mutation applies to this answer"
    return (
        f"kill rate {report.kill_rate:.2f} ({report.killed} of {len(report.mutations)} "
        f"mutations lowered the score{unproven_note(report.errors, report.inconclusive)})"
    )


def review_section(
    report: MutationReport, spend: LLMSpend | None = None, total: CheckingCost | None = None
) -> str:
    """The delimited Markdown section `--write-review` puts in reviews/<task_id>.md."""
    lines = [
        SECTION_START,
        "## Mutation testing",
        "",
        f"Answer `{report.answer}` (score {report.original_score:g}), mutated one fact at a time; "
        + _rate_line(report)
        + ".",
        "",
        kinds_line(report.kinds),
        "",
    ]
    if spend is not None:
        lines += [f"LLM cost of this mutation testing: {spend.line()}.", ""]
    if total is not None:
        parts = "; ".join(f"{label} ${s.cost_usd:.4f}" for label, s in total.parts())
        estimate = total.total_estimated_live_usd
        live = f"; estimate if live ${estimate:.4f}" if estimate is not None else ""
        lines += [
            f"Checking cost recorded in the JSON sidecar (checking_cost): "
            f"{total.total_calls} LLM calls, ${total.total_usd:.4f} ({parts}{live}).",
            "",
        ]
    lines += [
        "| mutation | change | score | outcome |",
        "|---|---|---|---|",
    ]
    lines += [f"| {row.name} | {row_cells(row)} |" for row in report.mutations]
    if report.rewrites:
        lines += ["", "Rewrites keeping the meaning (the judge must keep the score):", ""]
        lines += ["| rewrite | change | score | outcome |", "|---|---|---|---|"]
        lines += [f"| {row.name} | {row_cells(row)} |" for row in report.rewrites]
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


def review_mismatch(reviews: Path, task_id: str, judge: Path) -> str | None:
    """Why `--write-review` must not write into REVIEWS/<task_id>.json: it describes other
    judge bytes than `judge` (a kill rate measured on these would then be recorded for those),
    or cannot be read. None when it describes `judge`, or there is none."""
    sidecar = reviews / f"{task_id}.json"
    if not sidecar.is_file():
        return None
    try:
        recorded = json.loads(sidecar.read_text("utf-8")).get("judge_sha256")
    except (OSError, ValueError, AttributeError) as exc:
        return f"{sidecar} cannot be read as a review record ({exc}); fix or remove it"
    measured = sha256_file(judge)
    if recorded and recorded != measured:
        return (
            f"{sidecar} describes judge bytes {recorded[:19]}…, but {judge} is now "
            f"{measured[:19]}…: the kill rate would be recorded for a judge it was not "
            "measured on. Regenerate the judge (its record then describes it), or run without "
            "--write-review"
        )
    return None


def record_in_review(
    reviews: Path, report: MutationReport, judge_sha256: str, spend: LLMSpend | None = None
) -> list[Path]:
    """Replace (or append) the mutation section of the review record; update the sidecar,
    naming the judge bytes the mutations were run on and what the run's LLM calls cost.

    A sidecar with a `checking_cost` (review records from version 2) gets this run as its
    `mutate_command` part, replacing an earlier run's, so its total covers the kill rate
    recorded here; a version 1 record has no such total to complete.
    """
    markdown = reviews / f"{report.task_id}.md"
    sidecar = reviews / f"{report.task_id}.json"
    data = json.loads(sidecar.read_text("utf-8")) if sidecar.is_file() else None
    total = None
    if data is not None and spend is not None and isinstance(data.get("checking_cost"), dict):
        total = CheckingCost.model_validate(data["checking_cost"])
        total.mutate_command = spend
    text = markdown.read_text("utf-8") if markdown.is_file() else ""
    section = review_section(report, spend, total)
    block = re.compile(re.escape(SECTION_START) + r".*?" + re.escape(SECTION_END) + r"\n?", re.S)
    if block.search(text):
        text = block.sub(lambda _: section, text, count=1)
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section
    reviews.mkdir(parents=True, exist_ok=True)
    write_atomic(markdown, text)
    written = [markdown]
    if data is not None:
        recorded = MutationTesting.of(report, judge_sha256, spend)
        unpriced = {"llm"} if spend is None else set()
        data[SIDECAR_KEY] = recorded.model_dump(mode="json", exclude=unpriced)
        if total is not None:
            data["checking_cost"] = total.model_dump(mode="json")
        write_atomic(sidecar, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        written.append(sidecar)
    return written


@click.command()
@click.argument("task")
@click.option("--answer", "answer_name", help="Sample answer to mutate (must score 1).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--write-review",
    is_flag=True,
    help="Record the result in REVIEWS/<task>.md (delimited section) and its .json sidecar, "
    "with the judge's sha256 and the run's LLM cost (added to the record's checking_cost); "
    "refused when the sidecar describes other judge bytes.",
)
@click.option("--reviews", default="reviews", show_default=True, type=click.Path(path_type=Path))
@location_options
@backend_options
@sandbox_options
@llm_options
def mutate(
    task: str,
    answer_name: str | None,
    as_json: bool,
    write_review: bool,
    reviews: Path,
    judges: Path,
    tasks_dir: Path,
    backend_spec: str | None,
    pages: Path | None,
    no_sandbox: bool,
    timeout_s: float,
    llm_settings: LLMSettings,
) -> None:
    """Mutation-test TASK's judge: does it notice when one fact of a good answer is damaged?

    Picks the first sample answer that scores 1 (or --answer, which must), applies every
    mutation (cited URL dropped, date moved by a year or by a day, number changed, list item
    or table row removed, name replaced, sources swapped), runs the judge on each and reports whether the score dropped
    (killed) and the kill rate. A surviving mutation points at a fact the judge never checks.
    A drop while the run missed a cited page the original's run did not is inconclusive;
    it and a mutation the judge failed on (error) count as not killed in the kill rate.
    Then rewrites keeping the meaning (a date written as ISO or with its month name, a
    number without its thousands separators), never in the kill rate: each must keep the
    score (kept); one that changes it (changed) shows a judge comparing how a value is
    written, not what it says.

    \b
    Example:
      judgegen mutate first_ascents --tasks tests/fixtures/review/tasks --judges tests/fixtures/review/judges \
        --backend tests.fixtures.review.scripted:backend --pages review-pages
      judgegen mutate first_ascents --json --tasks tests/fixtures/review/tasks --judges tests/fixtures/review/judges \
        --backend tests.fixtures.review.scripted:backend --pages review-pages

    \b
    Exit codes: 0 ok; 1 no sample answer scores 1, the judge failed on a mutation or a
    rewrite, or a rewrite changed the score; 2 usage or input error (e.g. --answer does not score 1); 3 infrastructure failure.
    """
    loaded = load_task(task, tasks_dir)
    judge = judge_file(judges, loaded.task_id)
    mismatch = review_mismatch(reviews, loaded.task_id, judge) if write_review else None
    if mismatch is not None:
        raise click.UsageError(f"--write-review: {mismatch}")
    measured = sha256_file(judge) if judge.is_file() else ""
    chosen = pick_answer(loaded, answer_name) if answer_name else None
    backend, client = open_backend(backend_spec, llm_settings)
    clients = CommandClients()
    clients.add(client)
    setup = (backend, clients, open_pages(pages))
    mode = llm_settings.cache_mode if client is not None else None
    try:
        report = run_review(
            _mutate(loaded, judge, chosen, setup, not no_sandbox, timeout_s),
            "mutate",
            mode,
            clients,
        )
    except NotAccepted as exc:
        if chosen is not None:
            raise click.UsageError(f"--answer {chosen.name}: {exc.message}") from exc
        raise
    spend = command_spend(client)  # after the close: the rows written then count too
    if write_review:
        for path in record_in_review(reviews, report, measured, spend):
            click.echo(f"updated {path}", err=True)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(report), nl=False)
    failed = report.errors or any(row.outcome == "error" for row in report.rewrites)
    sys.exit(1 if failed or report.rewrites_changed else 0)
