"""Rechecking a page store against today's rules: which stored pages reads refuse, and why.

A store written by an older judgegen may hold, as cited pages, what today's capture refuses: a
bot check, a sign-in or consent page, the home, error or search page a removed page was sent
to, a page with nothing to judge, and (told from their text, `toolkit.pages.stored_walls`) a
soft 404 or a cookie-consent dialog stored before the rules reading the live page. Reads
already treat each as the failure a capture records now; `recheck_store` lists them, so
`judgegen cache-pages --recheck` can say so, and capture them again with `--refresh`.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from toolkit.pages.store import FailureKind, PageStore

RECHECK_REPORT_VERSION = 1


class RefusedPage(BaseModel):
    """A stored page reads refuse, as the failure they give for it."""

    url: str
    """The store key (canonical URL)."""
    requested_url: str
    """The URL as it was asked for."""
    error_kind: FailureKind
    """The failure reads give it (`not_found`, `consent_wall`, `blocked`, ...)."""
    reason: str
    """Why, and the fix."""
    record_version: int
    """The page record version it was stored as (`store.PAGE_RECORD_VERSION` now)."""
    origin: str
    """`capture` or `m2w2` (imported)."""
    fetched_at: datetime
    """When it was captured (or its imported file made), UTC."""


class RecheckReport(BaseModel):
    """What `cache-pages --recheck` found in a store, as `--json` prints it."""

    version: int = RECHECK_REPORT_VERSION
    store: str
    refused: list[RefusedPage] = []
    """The stored pages reads refuse, oldest row first."""
    unchecked: int = 0
    """Web pages reads serve that were stored before a rule reading the live page: their text
    passed the rule's text counterpart; only a new capture (`--refresh`) asks the live page."""


def recheck_store(store: PageStore) -> RecheckReport:
    """The stored pages of `store` reads refuse under today's rules, and how many pages served
    were stored before the rules reading the live page (`PageStore.recheck`)."""
    found = store.recheck()
    refused = []
    for record in found.refused:
        assert record.error_kind is not None  # a refused page reads as a failure of a kind
        refused.append(
            RefusedPage(
                url=record.url,
                requested_url=record.requested_url,
                error_kind=record.error_kind,
                reason=record.error or "",
                record_version=record.version,
                origin=record.origin,
                fetched_at=record.fetched_at,
            )
        )
    return RecheckReport(store=str(store.path), refused=refused, unchecked=found.unchecked)
