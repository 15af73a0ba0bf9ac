"""Deterministic answer mutations for mutation-testing a judge.

Each mutation is a named function that damages one fact of an answer a careful judge must
notice: a cited URL dropped, a date's year or day changed, a number changed, a list item or
table row removed, a name replaced, two items' sources swapped. A judge "kills" a mutation when the mutated answer scores lower
than the original. Every function returns None when its kind of fact is absent. Cited URLs
are found as the toolkit reads them (`toolkit.urls.citations`) and never rewritten: a changed
address would name a page missing from the store, and the score would drop for that alone.
A judge may still ask for such a page (one building URLs from extracted values): a drop while
its run missed a cited page the original's did not is `inconclusive`, not a kill. A report
names the kinds it applied and their versions (`mutation_kinds`): a kill rate over another set
than the current one is stale (`kinds_change`), never read as the judge's current one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from toolkit.urls import citations, same_page

if TYPE_CHECKING:
    from generator.review.runs import ReviewRuns

# 2: inconclusive rows, missing_pages; kill rate over every mutation; 3: `kinds`
MUTATION_VERSION = 3
MUTATION_STAGE_VERSION = 4  # 2: the stage's LLM calls and cost; 3, 4: reports of version 2, 3

_MONTH_DATE = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+(\d{1,2})(st|nd|rd|th)?,?\s+(\d{4})\b"
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_NUMBER = re.compile(r"(?<![\w./-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/-])")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+.*(?:\n|$)", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|.*(?:\n|$)", re.MULTILINE)
# A Markdown table: a header row, a delimiter row (`|---|:--|`), and the body rows after it.
_TABLE = re.compile(
    r"^[ \t]*\|.*\n[ \t]*\|[ \t:|-]*-[ \t:|-]*(?:\n|$)((?:[ \t]*\|.*(?:\n|$))+)", re.MULTILINE
)
_NAME = re.compile(r"(?<![\w/.#-])([A-Z][a-z]+(?:[ \t]+[A-Z]\.)?[ \t]+[A-Z][a-z]{2,})\b")
_SENTENCE_WORDS = {
    "The",
    "This",
    "That",
    "These",
    "Here",
    "Sources",
    "Source",
    "Answer",
    "In",
    "On",
}
REPLACEMENT_NAME = "Morgan Quillfeather"


class Mutation(BaseModel):
    """One mutated answer: which mutation, what it changed, and the new text."""

    version: int = MUTATION_VERSION
    name: str
    description: str
    text: str


def _masked_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` cites URLs, as the toolkit reads them: no mutation may rewrite a cited
    page's address, or the page would be missing and the score drop for that alone."""
    return [(c.start, c.end) for c in citations(text)]


def _outside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= s or start >= e for s, e in spans)


def drop_cited_url(answer: str) -> Mutation | None:
    """Remove the first cited URL (a markdown link keeps its text, a bare URL disappears)."""
    cited = citations(answer)
    if not cited:
        return None
    first = cited[0]
    text = answer[: first.outer_start] + first.label + answer[first.outer_end :]
    url = answer[first.start : first.end]
    return Mutation(name="drop_cited_url", description=f"dropped {url}", text=text)


def change_date(answer: str) -> Mutation | None:
    """Move the first date (month-name or ISO form) one year later."""
    spans = _masked_spans(answer)
    for pattern in (_MONTH_DATE, _ISO_DATE):
        for match in pattern.finditer(answer):
            if not _outside(spans, *match.span()):
                continue
            old = match.group(0)
            year = match.group(4) if pattern is _MONTH_DATE else match.group(1)
            new = old.replace(year, str(int(year) + 1), 1)
            text = answer[: match.start()] + new + answer[match.end() :]
            return Mutation(name="change_date", description=f"{old} -> {new}", text=text)
    return None


def shift_day(answer: str) -> Mutation | None:
    """Move the first date (month-name or ISO form) one day, within its month and year: a judge
    that compares only the month and year must not miss it."""
    spans = _masked_spans(answer)
    for pattern, day_group in ((_MONTH_DATE, 2), (_ISO_DATE, 3)):
        for match in pattern.finditer(answer):
            if not _outside(spans, *match.span()):
                continue
            start, end = match.span(day_group)
            day = int(answer[start:end])
            new_day = f"{day + 1 if day < 28 else day - 1:0{end - start}d}"
            text = answer[:start] + new_day + answer[end:]
            old = match.group(0)
            new = answer[match.start() : start] + new_day + answer[end : match.end()]
            return Mutation(name="shift_day", description=f"{old} -> {new}", text=text)
    return None


def change_number(answer: str) -> Mutation | None:
    """Change the first number that is not part of a URL or a date (adds 7 to its last digit)."""
    spans = _masked_spans(answer)
    spans += [m.span() for p in (_MONTH_DATE, _ISO_DATE) for m in p.finditer(answer)]
    for match in _NUMBER.finditer(answer):
        if not _outside(spans, *match.span()):
            continue
        old = match.group(0)
        digit = int(old[-1])
        new = old[:-1] + str((digit + 7) % 10)
        text = answer[: match.start()] + new + answer[match.end() :]
        return Mutation(name="change_number", description=f"{old} -> {new}", text=text)
    return None


def remove_list_item(answer: str) -> Mutation | None:
    """Delete the last item of the answer's lists (bulleted or numbered)."""
    items = list(_LIST_ITEM.finditer(answer))
    if not items:
        return None
    last = items[-1]
    text = answer[: last.start()] + answer[last.end() :]
    return Mutation(
        name="remove_list_item", description=f"removed: {last.group(0).strip()[:80]}", text=text
    )


def remove_table_row(answer: str) -> Mutation | None:
    """Delete the last body row of the answer's Markdown tables (an item listed as a row)."""
    tables = list(_TABLE.finditer(answer))
    if not tables:
        return None
    body = tables[-1]
    last = list(_TABLE_ROW.finditer(answer, body.start(1), body.end(1)))[-1]
    text = answer[: last.start()] + answer[last.end() :]
    return Mutation(
        name="remove_table_row", description=f"removed: {last.group(0).strip()[:80]}", text=text
    )


def replace_name(answer: str) -> Mutation | None:
    """Replace the first person-like name (two capitalized words) everywhere it occurs."""
    spans = _masked_spans(answer)
    for match in _NAME.finditer(answer):
        name = match.group(1)
        if name.split()[0] in _SENTENCE_WORDS or not _outside(spans, *match.span()):
            continue
        text = answer.replace(name, REPLACEMENT_NAME)
        return Mutation(name="replace_name", description=f"{name} -> {REPLACEMENT_NAME}", text=text)
    return None


def swap_sources(answer: str) -> Mutation | None:
    """Swap the cited URLs of the first two list items that cite different pages."""
    cited = citations(answer)
    firsts = [
        c
        for item in _LIST_ITEM.finditer(answer)
        if (c := next((c for c in cited if item.start() <= c.start < item.end()), None))
    ]
    for a, b in itertools.pairwise(firsts):
        url_a, url_b = answer[a.start : a.end], answer[b.start : b.end]
        if same_page(url_a, url_b):
            continue
        text = answer[: a.start] + url_b + answer[a.end : b.start] + url_a + answer[b.end :]
        return Mutation(name="swap_sources", description=f"swapped {url_a} <-> {url_b}", text=text)
    return None


@dataclass(frozen=True)
class MutationKind:
    """One kind of damage, under the name its mutations carry, and its version: bump it when
    the kind changes what it damages or how (a test pins each version's output on probe
    answers), so kill rates measured before read as stale, not as judgegen's current ones."""

    name: str
    version: int
    apply: Callable[[str], Mutation | None]


MUTATIONS: tuple[MutationKind, ...] = (
    MutationKind("drop_cited_url", 1, drop_cited_url),
    MutationKind("change_date", 1, change_date),
    MutationKind("shift_day", 1, shift_day),
    MutationKind("change_number", 1, change_number),
    MutationKind("remove_list_item", 1, remove_list_item),
    MutationKind("remove_table_row", 1, remove_table_row),
    MutationKind("replace_name", 1, replace_name),
    MutationKind("swap_sources", 1, swap_sources),
)


def mutation_kinds() -> dict[str, int]:
    """The kinds `mutate_all` applies, in order, each with its version: what a mutation report
    records as the set its kill rate is over."""
    return {kind.name: kind.version for kind in MUTATIONS}


def kinds_change(recorded: Mapping[str, int] | None) -> str | None:
    """How the kinds `mutate_all` applies now differ from `recorded` (a report's `kinds`;
    None: recorded before reports named them), or None when they are the same."""
    current = mutation_kinds()
    if recorded is not None and dict(recorded) == current:
        return None
    if recorded is None:
        applied = ", ".join(f"{name} v{version}" for name, version in current.items())
        return f"recorded before judgegen named its mutation kinds; it now applies {applied}"
    added = [f"{n} v{v}" for n, v in current.items() if n not in recorded]
    removed = [f"{n} v{v}" for n, v in recorded.items() if n not in current]
    changed = [f"{n} v{recorded[n]} -> v{v}" for n, v in current.items() if recorded.get(n, v) != v]
    parts = [f"not applied then: {', '.join(added)}"] if added else []
    parts += [f"no longer applied: {', '.join(removed)}"] if removed else []
    parts += [f"changed since: {', '.join(changed)}"] if changed else []
    return "; ".join(parts)


def kinds_line(kinds: Mapping[str, int] | None) -> str:
    """`Mutation kinds applied: drop_cited_url v1, ...` for a review record's Markdown."""
    if kinds is None:
        return "Mutation kinds applied: not recorded."
    shown = ", ".join(f"{name} v{version}" for name, version in kinds.items())
    return f"Mutation kinds applied: {shown}."


def mutate_all(answer: str) -> list[Mutation]:
    """Every applicable mutation of `answer`, in a fixed order."""
    mutations = (kind.apply(answer) for kind in MUTATIONS)
    return [m for m in mutations if m is not None and m.text != answer]


Outcome = Literal["killed", "survived", "inconclusive", "error"]


class MutationRow(BaseModel):
    """One mutation and how the judge scored it."""

    name: str
    description: str
    score: float | None = Field(description="Root score of the mutated answer; None on error.")
    outcome: Outcome = Field(
        description="killed: the score dropped; survived: it did not; inconclusive: it dropped "
        "while the run missed cited pages the original's run did not (`missing_pages`), so the "
        "drop may be the missing page's; error: the judge failed on it. Only killed counts as "
        "killed in the kill rate."
    )
    error: str | None = None
    missing_pages: list[str] = Field(
        default_factory=list,
        description="Cited pages this mutation's run asked for that the page store lacks and the "
        "original answer's run did not miss (the runner's page-read log).",
    )

    def outcome_cell(self) -> str:
        """The outcome for a Markdown table cell, with the missing pages that made it so."""
        if not self.missing_pages:
            return self.outcome
        pages = ", ".join(self.missing_pages).replace("|", "\\|")
        return f"{self.outcome} (cited pages missing from the page store: {pages})"


class MutationReport(BaseModel):
    """Every mutation of one sample answer, and the share the judge killed."""

    version: int = MUTATION_VERSION
    task_id: str
    answer: str
    original_score: float
    kinds: dict[str, int] | None = Field(
        default=None,
        description="The mutation kinds applied and their versions (`mutation_kinds()`), so a "
        "kill rate over another set than judgegen's current one reads as stale; None: not "
        "recorded (reports before version 3).",
    )
    mutations: list[MutationRow] = Field(default_factory=list)

    @property
    def killed(self) -> int:
        """Mutations that lowered the score, every cited page read as the original's was."""
        return _count(self.mutations, "killed")

    @property
    def survived(self) -> int:
        """Mutations that left the score as it was."""
        return _count(self.mutations, "survived")

    @property
    def inconclusive(self) -> int:
        """Mutations whose score dropped while a cited page was missing: neither killed nor
        survived."""
        return _count(self.mutations, "inconclusive")

    @property
    def errors(self) -> int:
        """Mutations whose judge run failed: neither killed nor survived."""
        return _count(self.mutations, "error")

    @property
    def kill_rate(self) -> float | None:
        """Killed over every mutation (see `kill_rate_of`; None when none was judged)."""
        return kill_rate_of(self.mutations)

    def to_dict(self) -> dict[str, Any]:
        """The report with its computed counts, as written to JSON."""
        return {
            **self.model_dump(mode="json"),
            "killed": self.killed,
            "survived": self.survived,
            "inconclusive": self.inconclusive,
            "errors": self.errors,
            "kill_rate": self.kill_rate,
        }


def _count(rows: list[MutationRow], outcome: Outcome) -> int:
    return sum(row.outcome == outcome for row in rows)


def kill_rate_of(rows: list[MutationRow]) -> float | None:
    """The one definition of the kill rate: killed mutations over every mutation applied.

    A mutation the judge failed on (error) or whose score dropped only while a cited page was
    missing (inconclusive) is no evidence that the judge catches that damage, so it counts as
    not killed: the rate is a lower bound, and `--min-kill-rate` cannot pass on kills the judge
    never showed. Failing the gate on any error instead would let one slow run block a judge
    whose proven rate clears the gate, and would still need a rule for inconclusive rows,
    which a page store cannot always fix. None when no mutation was killed or survived.
    """
    judged = _count(rows, "killed") + _count(rows, "survived")
    return _count(rows, "killed") / len(rows) if judged else None


def unproven_count(errors: int, inconclusive: int) -> str:
    """`2 errors and 1 inconclusive`, leaving out a zero count ("" for both)."""
    parts = [f"{errors} error{'' if errors == 1 else 's'}"] if errors else []
    parts += [f"{inconclusive} inconclusive"] if inconclusive else []
    return " and ".join(parts)


def unproven_note(errors: int, inconclusive: int) -> str:
    """`; 1 error counts as not killed` to follow a kill-rate count, or "" when every mutation
    was killed or survived."""
    if not errors + inconclusive:
        return ""
    verb = "counts" if errors + inconclusive == 1 else "count"
    return f"; {unproven_count(errors, inconclusive)} {verb} as not killed"


def unproven_fixes(errors: int, inconclusive: int) -> list[str]:
    """What to do about `errors` mutations the judge failed on and `inconclusive` ones, one line
    per kind present."""
    fixes = []
    if errors:
        fixes.append(
            "a mutation the judge failed on counts as not killed: make the judge score such "
            "answers instead of failing on them, then regenerate it"
        )
    if inconclusive:
        fixes.append(
            "an inconclusive mutation (its score dropped while a cited page was missing) "
            "counts as not killed: add the missing pages to the page store (`judgegen "
            "cache-pages`), or have the judge check the cited pages rather than addresses "
            "it builds from extracted values"
        )
    return fixes


def mutation_row(
    mutation: Mutation,
    original: float,
    score: float | None,
    *,
    missing: list[str] | None = None,
    error: str | None = None,
) -> MutationRow:
    """The report row of one mutation: an error when the judge failed on it (`score` None);
    inconclusive when its score dropped while its run missed cited pages the original's did
    not (`missing`); otherwise killed when the score dropped, else survived."""
    missing = missing or []
    outcome: Outcome
    if error is not None or score is None:
        outcome, score = "error", None
    elif score >= original - 1e-9:
        outcome = "survived"
    else:
        outcome = "inconclusive" if missing else "killed"
    return MutationRow(
        name=mutation.name,
        description=mutation.description,
        score=score,
        outcome=outcome,
        error=error,
        missing_pages=missing,
    )


async def mutate_answer(
    runs: ReviewRuns,
    judge: Path,
    task_id: str,
    answer_name: str,
    answer_text: str,
    original: float,
    *,
    original_missing: Collection[str],
    progress: Any = None,
) -> MutationReport:
    """Score every mutation of one accepted answer with the judge at `judge`.

    `original_missing` are the cited pages the original answer's run missed: a mutation whose
    run misses others, and scores lower, is inconclusive rather than killed.
    """
    from generator.review.runs import JudgeRunError

    report = MutationReport(
        task_id=task_id, answer=answer_name, original_score=original, kinds=mutation_kinds()
    )
    for mutation in mutate_all(answer_text):
        if progress is not None:
            progress(f"[{task_id}] {mutation.name}: {mutation.description}")
        try:
            judged = await runs.judged(
                judge, mutation.text, task_id=task_id, answer_name=f"{answer_name}~{mutation.name}"
            )
        except JudgeRunError as exc:
            report.mutations.append(mutation_row(mutation, original, None, error=str(exc)))
            continue
        score = float(judged.summary.get("final_score") or 0.0)
        missing = sorted(set(judged.missing_pages) - set(original_missing))
        report.mutations.append(mutation_row(mutation, original, score, missing=missing))
    return report


class MutationStage(BaseModel):
    """Mutation testing inside `generate`: every accepted sample answer, one fact at a time."""

    version: int = MUTATION_STAGE_VERSION
    ran: bool = True
    note: str = ""
    reports: list[MutationReport] = Field(default_factory=list)
    calls: int | None = Field(
        default=None,
        description="LLM calls of mutation testing in this generation (every pass); None in "
        "records older than version 2, which did not count them.",
    )
    cost_usd: float | None = Field(
        default=None, description="What those calls cost (replays $0); None: not recorded."
    )
    estimated_live_usd: float | None = Field(
        default=None, description="Replays only: what those calls would cost live."
    )

    @property
    def total(self) -> int:
        """Mutations applied to all accepted answers, whatever their outcome."""
        return sum(len(r.mutations) for r in self.reports)

    @property
    def errors(self) -> int:
        """Mutations the judge failed on."""
        return sum(r.errors for r in self.reports)

    @property
    def inconclusive(self) -> int:
        """Mutations whose score dropped while a cited page was missing."""
        return sum(r.inconclusive for r in self.reports)

    @property
    def kill_rate(self) -> float | None:
        """Killed over every mutation of all accepted answers (`kill_rate_of`)."""
        return kill_rate_of([row for r in self.reports for row in r.mutations])

    def kinds_change(self) -> str | None:
        """How judgegen's mutation kinds differ from those the reports were measured under
        (`kinds_change`), or None when every report applied the current ones."""
        changes = dict.fromkeys(c for r in self.reports if (c := kinds_change(r.kinds)))
        return "; ".join(changes) or None

    def survivors(self) -> list[str]:
        """`answer: mutation (change) scored s` for each surviving mutation."""
        return [
            f"{r.answer}: {row.name} ({row.description}) still scored {row.score:g}"
            for r in self.reports
            for row in r.mutations
            if row.outcome == "survived" and row.score is not None
        ]

    def unproven(self) -> list[str]:
        """Each mutation counted as not killed without surviving: what the judge failed with,
        or which cited pages were missing when its score dropped."""
        lines = []
        for r in self.reports:
            for row in r.mutations:
                what = f"{r.answer}: {row.name} ({row.description})"
                if row.outcome == "error":
                    lines.append(f"{what} error: {row.error}")
                elif row.outcome == "inconclusive":
                    lines.append(
                        f"{what} inconclusive: scored {row.score:g} while cited pages were "
                        f"missing from the page store: {', '.join(row.missing_pages)}"
                    )
        return lines

    def unproven_fixes(self) -> list[str]:
        """What to do about the mutations counted as not killed without surviving, one line per
        kind present."""
        return unproven_fixes(self.errors, self.inconclusive)

    def summary_line(self) -> str:
        """`kill rate 0.67 (4 of 6 mutations of good)` or why it did not run."""
        if not self.ran:
            return f"skipped: {self.note}"
        if self.kill_rate is None:
            if self.errors or self.inconclusive:
                counted = unproven_count(self.errors, self.inconclusive)
                return f"no mutation was judged conclusively ({counted})"
            return "no mutation applies to the accepted sample answers"
        killed = sum(r.killed for r in self.reports)
        answers = ", ".join(r.answer for r in self.reports)
        return (
            f"kill rate {self.kill_rate:.2f} ({killed} of {self.total} mutations of {answers}"
            f"{unproven_note(self.errors, self.inconclusive)})"
        )
