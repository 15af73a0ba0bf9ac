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

Rewrites are the opposite test: a date or a number written another way, the meaning kept
(`REWRITES`). A judge must KEEP the score of a rewritten answer; one that changes it compares
how a value is written (a value copied from a sample answer, compared as text), which the
sample answers it was drafted from can never show. Rewrites never count in the kill rate.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from toolkit.checks.dates import parse_date
from toolkit.urls import citations, same_page

if TYPE_CHECKING:
    from generator.review.runs import ReviewRuns

# 2: inconclusive rows, missing_pages; kill rate over every mutation; 3: `kinds`;
# 4: `rewrites`, the meaning-preserving rewrites and whether the judge kept the score
MUTATION_VERSION = 4
MUTATION_STAGE_VERSION = 5  # 2: the stage's LLM calls and cost; 3-5: reports of version 2-4

_MONTH = (
    r"(?P<month>(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b\.?)"
)
_DAY = r"(?P<day>\d{1,2})(?P<suffix>st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})\b"
# "March 14, 2024" / "Mar. 14th 2024", and day first: "14 March 2024" / "14th of March, 2024"
_MONTH_DATE = re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR)
_DAY_MONTH_DATE = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR)
_ISO_DATE = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NUMBER = re.compile(r"(?<![\w./-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/-])")
# A number written with thousands separators ("1,200", "12,345.5"), not one of a list ("3,400,5").
_GROUPED_NUMBER = re.compile(r"(?<![\w./-])(?<!\d,)\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w/-])(?!,\d)")
_DECIMAL_COMMA = re.compile(
    r"(?<![\w.,])\d+,\d{1,2}(?![\w,])"  # "2,5 kg": a comma before one or two digits
    r"|(?<![\w.,])\d{1,3}(?:\.\d{3})+(?:,\d+)?(?![\w.,])"  # "1.200" or "1.200,50"
)
"""A number written with a decimal comma, or with dots between its thousands: where the answer
writes one, its "1,200" may be 1.2, not twelve hundred."""
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+.*(?:\n|$)", re.MULTILINE)
_LIST_MARKER = re.compile(r"^[ \t]*\d+[.)](?=[ \t])", re.MULTILINE)
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


def _month_named_dates(answer: str) -> list[re.Match[str]]:
    """Every month-name date of `answer`, month first or day first, in the order written."""
    found = [m for p in (_MONTH_DATE, _DAY_MONTH_DATE) for m in p.finditer(answer)]
    return sorted(found, key=lambda m: m.start())


def _dates(answer: str) -> list[re.Match[str]]:
    """The dates the date kinds change: month-name ones in the order written, then ISO ones,
    none inside a cited URL."""
    spans = _masked_spans(answer)
    found = [*_month_named_dates(answer), *_ISO_DATE.finditer(answer)]
    return [m for m in found if _outside(spans, *m.span())]


def _date_spans(answer: str) -> list[tuple[int, int]]:
    return [m.span() for m in [*_month_named_dates(answer), *_ISO_DATE.finditer(answer)]]


def _replaced(
    name: str, answer: str, match: re.Match[str], span: tuple[int, int], new: str
) -> Mutation:
    """Mutation `name`: `answer` with `span` (inside `match`) replaced by `new`, described as
    the match before and after."""
    start, end = span
    text = answer[:start] + new + answer[end:]
    changed = answer[match.start() : start] + new + answer[end : match.end()]
    return Mutation(name=name, description=f"{match.group(0)} -> {changed}", text=text)


def _ordinal(day: int) -> str:
    """`st`, `nd`, `rd` or `th`: the suffix of `day` written as an ordinal."""
    if day % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


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
    """Move the first date (month-name, month or day first, else ISO) one year later."""
    for match in _dates(answer):
        year = str(int(match.group("year")) + 1)
        return _replaced("change_date", answer, match, match.span("year"), year)
    return None


def shift_day(answer: str) -> Mutation | None:
    """Move the first date (month-name, month or day first, else ISO) one day, within its
    month and year: a judge that compares only the month and year must not miss it. An
    ordinal day keeps a matching suffix ("3rd" -> "4th")."""
    for match in _dates(answer):
        written = match.group("day")
        day = int(written)
        new_day = day + 1 if day < 28 else day - 1
        new = f"{new_day:0{len(written)}d}"
        start, end = match.span("day")
        if match.groupdict().get("suffix"):
            new, end = new + _ordinal(new_day), match.end("suffix")
        return _replaced("shift_day", answer, match, (start, end), new)
    return None


def change_number(answer: str) -> Mutation | None:
    """Change the first number that is not part of a URL, a date or a numbered list's marker
    ("1." numbers an item, it states no fact) by adding 7 to its last digit."""
    spans = _masked_spans(answer) + _date_spans(answer)
    spans += [m.span() for m in _LIST_MARKER.finditer(answer)]
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


def reformat_date(answer: str) -> Mutation | None:
    """Write the first month-name date as ISO ("March 14, 2024" -> "2024-03-14"), else the
    first ISO date with its month name ("2024-03-14" -> "March 14, 2024"): the same day, as
    `toolkit.checks.parse_date` reads both (a date it cannot read is left alone)."""
    spans = _masked_spans(answer)
    for match in _month_named_dates(answer):
        day = parse_date(match.group(0))
        if day is None or not _outside(spans, *match.span()):
            continue
        new = day.isoformat()
        text = answer[: match.start()] + new + answer[match.end() :]
        return Mutation(name="reformat_date", description=f"{match.group(0)} -> {new}", text=text)
    for match in _ISO_DATE.finditer(answer):
        day = parse_date(match.group(0))
        if day is None or not _outside(spans, *match.span()):
            continue
        new = f"{MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"
        text = answer[: match.start()] + new + answer[match.end() :]
        return Mutation(name="reformat_date", description=f"{match.group(0)} -> {new}", text=text)
    return None


def reformat_number(answer: str) -> Mutation | None:
    """Write the first number with thousands separators without them ("1,200" -> "1200").
    Never the other way: "2024" is a year, and "2,024" would change what it says. Nowhere in
    an answer that writes a number the European way ("2,5 kg", "1.200 people"): its commas may
    be decimal commas, and the rewrite would change what it says."""
    spans = _masked_spans(answer) + _date_spans(answer)
    if any(_outside(spans, *m.span()) for m in _DECIMAL_COMMA.finditer(answer)):
        return None
    for match in _GROUPED_NUMBER.finditer(answer):
        if not _outside(spans, *match.span()):
            continue
        old = match.group(0)
        new = old.replace(",", "")
        text = answer[: match.start()] + new + answer[match.end() :]
        return Mutation(name="reformat_number", description=f"{old} -> {new}", text=text)
    return None


@dataclass(frozen=True)
class MutationKind:
    """One kind of damage (or of meaning-preserving rewrite, in `REWRITES`), under the name
    its mutations carry, and its version: bump it when the kind changes what it damages or
    rewrites, or how (a test pins each version's output on probe answers), so kill rates and
    rewrite outcomes measured before read as stale, not as judgegen's current ones."""

    name: str
    version: int
    apply: Callable[[str], Mutation | None]


MUTATIONS: tuple[MutationKind, ...] = (
    MutationKind("drop_cited_url", 1, drop_cited_url),
    MutationKind("change_date", 2, change_date),  # 2: day-first dates ("20 February 2025")
    MutationKind("shift_day", 2, shift_day),  # 2: day-first dates
    MutationKind("change_number", 2, change_number),  # 2: a numbered list's marker is no fact
    MutationKind("remove_list_item", 1, remove_list_item),
    MutationKind("remove_table_row", 1, remove_table_row),
    MutationKind("replace_name", 1, replace_name),
    MutationKind("swap_sources", 1, swap_sources),
)
REWRITES: tuple[MutationKind, ...] = (
    MutationKind("reformat_date", 1, reformat_date),
    MutationKind("reformat_number", 2, reformat_number),  # 2: none with decimal commas
)
"""Meaning-preserving rewrites: a judge must keep the score of each (`rewrite_all`)."""


def mutation_kinds() -> dict[str, int]:
    """The kinds `mutate_all` and `rewrite_all` apply, in order, each with its version: what a
    mutation report records as the set its kill rate and its rewrites are over."""
    return {kind.name: kind.version for kind in (*MUTATIONS, *REWRITES)}


def kinds_change(recorded: Mapping[str, int] | None) -> str | None:
    """How the kinds applied now (`mutation_kinds`) differ from `recorded` (a report's
    `kinds`; None: recorded before reports named them), or None when they are the same."""
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


def _apply_all(kinds: tuple[MutationKind, ...], answer: str) -> list[Mutation]:
    applied = (kind.apply(answer) for kind in kinds)
    return [m for m in applied if m is not None and m.text != answer]


def mutate_all(answer: str) -> list[Mutation]:
    """Every applicable damaging mutation of `answer`, in a fixed order."""
    return _apply_all(MUTATIONS, answer)


def rewrite_all(answer: str) -> list[Mutation]:
    """Every applicable meaning-preserving rewrite of `answer`, in a fixed order."""
    return _apply_all(REWRITES, answer)


Outcome = Literal["killed", "survived", "inconclusive", "error"]
RewriteOutcome = Literal["kept", "changed", "verdicts_differ", "inconclusive", "error"]


class _JudgedRow(BaseModel):
    """One changed answer (a mutation or a rewrite) and how the judge scored it."""

    name: str
    description: str
    score: float | None = Field(description="Root score of the changed answer; None on error.")
    outcome: str
    error: str | None = None
    missing_pages: list[str] = Field(
        default_factory=list,
        description="Cited pages this run asked for that the page store lacks and the "
        "original answer's run did not miss (the runner's page-read log).",
    )

    def outcome_cell(self) -> str:
        """The outcome for a Markdown table cell, with the missing pages that made it so."""
        return _outcome_cell(self.outcome, self.missing_pages)


class MutationRow(_JudgedRow):
    """One mutation and how the judge scored it."""

    outcome: Outcome = Field(
        description="killed: the score dropped; survived: it did not; inconclusive: it dropped "
        "while the run missed cited pages the original's run did not (`missing_pages`), so the "
        "drop may be the missing page's; error: the judge failed on it. Only killed counts as "
        "killed in the kill rate."
    )


class RewriteRow(_JudgedRow):
    """One meaning-preserving rewrite and how the judge scored it: it must keep the score."""

    outcome: RewriteOutcome = Field(
        description="kept: the score is the original's (within 1e-9); changed: it is not, and "
        "a check of the judge's own code failed (`failed_checks`), so the judge reads how a "
        "value is written, not what it says; verdicts_differ: it is not, but only verified "
        "leaves turned (the verifier answered the reworded claims otherwise: its sensitivity "
        "to wording, or a live model's noise), so it shows nothing of the judge; inconclusive: "
        "it changed while the run missed cited pages the original's run did not "
        "(`missing_pages`); error: the judge failed on it. Rewrites never count in the kill "
        "rate."
    )
    failed_checks: list[str] | None = Field(
        default=None,
        description="Leaves of the rewrite's tree that failed with no verification deciding "
        "them (the judge's own checks, `add_custom_node`); None: not known, and then a changed "
        "score counts as changed.",
    )


def row_cells(row: MutationRow | RewriteRow) -> str:
    """`change | score | outcome` of a mutation or rewrite row, for a Markdown table."""
    change = row.description.replace("|", "\\|").replace("\n", " ")
    score = "error" if row.score is None else f"{row.score:.3f}"
    return f"{change} | {score} | {row.outcome_cell()}"


def _outcome_cell(outcome: str, missing_pages: list[str]) -> str:
    if not missing_pages:
        return outcome
    pages = ", ".join(missing_pages).replace("|", "\\|")
    return f"{outcome} (cited pages missing from the page store: {pages})"


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
    rewrites: list[RewriteRow] = Field(
        default_factory=list,
        description="Every meaning-preserving rewrite (`REWRITES`) and whether the judge kept "
        "the score; empty in reports before version 4, which applied none.",
    )

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

    @property
    def rewrites_changed(self) -> int:
        """Rewrites whose score is not the original's, every cited page read as it was."""
        return sum(row.outcome == "changed" for row in self.rewrites)

    def to_dict(self) -> dict[str, Any]:
        """The report with its computed counts, as written to JSON."""
        return {
            **self.model_dump(mode="json"),
            "killed": self.killed,
            "survived": self.survived,
            "inconclusive": self.inconclusive,
            "errors": self.errors,
            "kill_rate": self.kill_rate,
            "rewrites_kept": sum(row.outcome == "kept" for row in self.rewrites),
            "rewrites_changed": self.rewrites_changed,
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


def _unproven_lines(answer: str, rows: list[MutationRow] | list[RewriteRow]) -> list[str]:
    """`answer: kind (change) error: ...` or `... inconclusive: scored s while cited pages were
    missing ...` for each row of `rows` whose run proved nothing."""
    lines = []
    for row in rows:
        what = f"{answer}: {row.name} ({row.description})"
        if row.outcome == "error":
            lines.append(f"{what} error: {row.error}")
        elif row.outcome == "inconclusive":
            lines.append(
                f"{what} inconclusive: scored {row.score:g} while cited pages were "
                f"missing from the page store: {', '.join(row.missing_pages)}"
            )
        elif row.outcome == "verdicts_differ":
            lines.append(
                f"{what} verdicts differ: scored {row.score:g}, every check of the judge's own "
                "code passing; only the verifier's verdicts on the reworded claims turned (its "
                "sensitivity to wording, or a live model's noise), which shows nothing of the judge"
            )
    return lines


def rewrites_summary(rows: list[RewriteRow]) -> str:
    """`rewrites keeping the meaning: 1 of 2 changed the score` (and how many errors and
    inconclusive ones), or "" when no rewrite applied."""
    if not rows:
        return ""
    changed = sum(row.outcome == "changed" for row in rows)
    unproven = unproven_count(
        sum(row.outcome == "error" for row in rows),
        sum(row.outcome == "inconclusive" for row in rows),
    )
    differ = sum(row.outcome == "verdicts_differ" for row in rows)
    if differ:
        turned = f"{differ} turned verdicts only"
        unproven = f"{unproven} and {turned}" if unproven else turned
    outcome = f"{changed} of {len(rows)} changed the score" if changed else ""
    if not changed and not unproven:
        outcome = f"{len(rows)} of {len(rows)} kept the score"
    parts = ", ".join(part for part in (outcome, unproven) if part)
    return f"rewrites keeping the meaning: {parts}"


def rewrites_note(rows: list[RewriteRow]) -> str:
    """`rewrites_summary` to follow a kill-rate line after `; `, or "" when none applied."""
    summary = rewrites_summary(rows)
    return f"; {summary}" if summary else ""


def first_named(lines: list[str], shown: int = 3) -> str:
    """The first `shown` of `lines` joined with "; ", and how many more there are: what a
    gate's message or a warning names of the rows behind it."""
    more = len(lines) - shown
    return "; ".join(lines[:shown]) + (f" (+{more} more)" if more > 0 else "")


REWRITE_FIX = (
    "compare values by meaning with toolkit.checks (same_date, parse_number, ...), not by "
    "their written form; never copy an expected value from a sample answer"
)


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


def rewrite_row(
    rewrite: Mutation,
    original: float,
    score: float | None,
    *,
    missing: list[str] | None = None,
    error: str | None = None,
    failed_checks: list[str] | None = None,
) -> RewriteRow:
    """The report row of one rewrite: an error when the judge failed on it (`score` None);
    kept when its score is the original's; inconclusive when it is not while its run missed
    cited pages the original's did not (`missing`); verdicts_differ when no check of the
    judge's own code failed (`failed_checks` empty: only verified leaves turned); otherwise
    changed (`failed_checks` None, not known, counts as changed)."""
    missing = missing or []
    outcome: RewriteOutcome
    if error is not None or score is None:
        outcome, score = "error", None
    elif abs(score - original) <= 1e-9:
        outcome = "kept"
    elif missing:
        outcome = "inconclusive"
    else:
        outcome = "verdicts_differ" if failed_checks == [] else "changed"
    return RewriteRow(
        name=rewrite.name,
        description=rewrite.description,
        score=score,
        outcome=outcome,
        error=error,
        missing_pages=missing,
        failed_checks=failed_checks,
    )


def failed_checks(summary: dict[str, Any]) -> list[str] | None:
    """Ids of the leaves of `summary`'s tree that failed with no verification deciding them:
    the judge's own checks (`add_custom_node`), which no verifier's reading of a reworded
    claim can turn; None when the summary holds no tree."""
    from generator.review.rubric import flatten, tree_of

    try:
        tree = tree_of(summary)
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(tree, dict) or "id" not in tree:
        return None
    verified = {
        entry.get("node_id")
        for entry in summary.get("verifications") or []
        if isinstance(entry, dict)
    }
    return [
        node.id
        for node in flatten(tree)
        if node.leaf and node.status == "failed" and node.id not in verified
    ]


@dataclass(frozen=True)
class _Judged:
    """One run on a mutated (or rewritten) answer: its root score, the cited pages it missed
    that the original's run did not, or the judge's failure (score None)."""

    score: float | None
    missing: list[str]
    error: str | None = None
    failed_checks: list[str] | None = None


async def _judge(
    runs: ReviewRuns,
    judge: Path,
    where: tuple[str, str],
    mutation: Mutation,
    original_missing: Collection[str],
    progress: Any,
) -> _Judged:
    """Run the judge on `mutation`'s text as `answer~kind` of the task and answer `where`."""
    from generator.review.runs import JudgeRunError

    task_id, answer_name = where
    if progress is not None:
        progress(f"[{task_id}] {mutation.name}: {mutation.description}")
    try:
        judged = await runs.judged(
            judge, mutation.text, task_id=task_id, answer_name=f"{answer_name}~{mutation.name}"
        )
    except JudgeRunError as exc:
        return _Judged(None, [], str(exc))
    score = float(judged.summary.get("final_score") or 0.0)
    missing = sorted(set(judged.missing_pages) - set(original_missing))
    return _Judged(score, missing, failed_checks=failed_checks(judged.summary))


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
    """Score every mutation and every meaning-preserving rewrite of one accepted answer with
    the judge at `judge`, one run each, as the original was run.

    `original_missing` are the cited pages the original answer's run missed: a mutation whose
    run misses others, and scores lower, is inconclusive rather than killed (a rewrite whose
    score changed so, inconclusive rather than changed).
    """
    report = MutationReport(
        task_id=task_id, answer=answer_name, original_score=original, kinds=mutation_kinds()
    )
    where = (task_id, answer_name)
    for mutation in mutate_all(answer_text):
        run = await _judge(runs, judge, where, mutation, original_missing, progress)
        row = mutation_row(mutation, original, run.score, missing=run.missing, error=run.error)
        report.mutations.append(row)
    for rewrite in rewrite_all(answer_text):
        run = await _judge(runs, judge, where, rewrite, original_missing, progress)
        kept = rewrite_row(
            rewrite,
            original,
            run.score,
            missing=run.missing,
            error=run.error,
            failed_checks=run.failed_checks,
        )
        report.rewrites.append(kept)
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
        return [line for r in self.reports for line in _unproven_lines(r.answer, r.mutations)]

    @property
    def rewrites(self) -> list[RewriteRow]:
        """Every meaning-preserving rewrite of all accepted answers."""
        return [row for r in self.reports for row in r.rewrites]

    def rewrites_changed(self) -> list[str]:
        """`answer: rewrite (change) scored s instead of o` for each rewrite whose score
        changed: the judge reads how a value is written, not what it says."""
        return [
            f"{r.answer}: {row.name} ({row.description}) scored {row.score:g} instead of "
            f"{r.original_score:g}"
            for r in self.reports
            for row in r.rewrites
            if row.outcome == "changed" and row.score is not None
        ]

    def rewrites_unproven(self) -> list[str]:
        """Each rewrite neither kept nor changed: what the judge failed with, or which cited
        pages were missing when its score changed."""
        return [line for r in self.reports for line in _unproven_lines(r.answer, r.rewrites)]

    def unproven_fixes(self) -> list[str]:
        """What to do about the mutations counted as not killed without surviving, one line per
        kind present."""
        return unproven_fixes(self.errors, self.inconclusive)

    def summary_line(self) -> str:
        """`kill rate 0.67 (4 of 6 mutations of good); rewrites keeping the meaning: 1 of 1
        kept the score` or why it did not run."""
        if not self.ran:
            return f"skipped: {self.note}"
        return self._kill_rate_line() + rewrites_note(self.rewrites)

    def _kill_rate_line(self) -> str:
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
