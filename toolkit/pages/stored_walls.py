"""Telling, from a stored page's text alone, the walls whose capture rules read the live page.

Two rules of `toolkit.pages.walls` read what only the browser shows: a soft 404 is told by its
title and main headings (`walls.not_found_page`), a cookie-consent dialog hiding the page by
its boxes and buttons (`walls.consent_wall`). A store keeps neither, only the text, so a page
captured before a rule (a record older than the version from which captures apply it,
`RULE_VERSIONS`) may be such a wall stored as the page: a judge would check claims against a
"Page not found" text or a cookie banner, and blame the answer. `stored_wall` applies the
rules' counterparts here to such a record's text; a record captured with the rules is never
tested (a fresh capture decided from the live page, which knows better than its text).

Where the text cannot tell, the counterparts err towards the page (a page served is what an
older judgegen served; one refused is captured again):

- `stored_not_found`: one line of the text (`innerText` puts a heading on a line of its own;
  the title is not stored) says, as a whole part, that the page was not found
  (`walls.says_not_found`), and the whole text, which holds the main text and so bounds it,
  is at most `walls.MAX_SAID_ONCE_CHARS` (the live rule's limit when only one of title and
  heading says so). A page whose URL speaks of not-found pages is exempt, as live: MDN's
  article titled "404 Not Found", the article on the year 404 at `/wiki/404`.
- `stored_consent_wall`: the lines saying `walls.CONSENT_WORDS` and the short lines that are a
  consent choice (`walls.button_choice`) are the dialog (at most `walls.MAX_DIALOG_CHARS`, a
  choice among them); it hid the page when the rest of the text is under
  `walls.HIDDEN_PAGE_CHARS` characters. The rest includes the menus, which the live rule
  leaves out: the text rule finds fewer walls. A page whose URL path names cookies or privacy
  (a cited cookie policy) is exempt.

A soft 404 found so is a `not_found` failure, the page's, as a capture records it; a consent
dialog a `consent_wall` failure, ours (a capture today answers the dialog and stores the page
behind it): judging against it is incomplete until the page is captured again
(`judgegen cache-pages --recheck --refresh`).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote, urlsplit

from toolkit.checks.folding import WHITESPACE, fold
from toolkit.pages.walls import (
    CONSENT_WORDS,
    HIDDEN_PAGE_CHARS,
    MAX_DIALOG_CHARS,
    MAX_LABEL_CHARS,
    MAX_SAID_ONCE_CHARS,
    NotFoundShown,
    Wall,
    button_choice,
    not_found_page,
    not_found_reason,
    says_not_found,
)

CONSENT_RULE_VERSION: Final = 3
"""The page record version from which a capture applied `walls.consent_wall` (it answered a
consent dialog hiding the page, and refused what one still hid)."""
NOT_FOUND_RULE_VERSION: Final = 4
"""The page record version from which a capture applied `walls.not_found_page` (a soft 404
told by its title and headings)."""
RULE_VERSIONS: Final = (CONSENT_RULE_VERSION, NOT_FOUND_RULE_VERSION)
"""The record versions from which a capture applied a rule reading the live page: a record of
the last one or later was checked by all of them, and its text is never tested here."""
CHECKED_VERSION: Final = max(RULE_VERSIONS)
MAX_STORED_WALL_CHARS: Final = MAX_DIALOG_CHARS + HIDDEN_PAGE_CHARS
"""The longest stored text either counterpart can find a wall in: a longer one is the page,
told by its size alone."""
MAX_BUTTON_WORDS: Final = 5
"""A line of more words is no button's label ("Continue without accepting", "Only necessary
cookies" are buttons; a sentence saying "accept" is not)."""
_CONSENT_LINE = re.compile(r"(?<!\w)(?:" + "|".join(CONSENT_WORDS) + ")", re.IGNORECASE)
"""A line saying a consent word, as a word start (what the capture's dialog finder reads)."""
_ABOUT_CONSENT = re.compile(
    r"(?:^|[/_-])(?:cookies?|privacy|gdpr|dsgvo|datenschutz)(?:[/_.-]|$)", re.IGNORECASE
)
"""A URL path naming cookies or privacy (`/cookie-policy`, `/privacy`, `/datenschutz.html`): its
page, a policy, may well be short and all about them."""


def needs_check(version: int) -> bool:
    """Whether a stored web page of record `version` was captured before a rule reading the
    live page (`RULE_VERSIONS`), so its text is tested (`stored_wall`)."""
    return version < CHECKED_VERSION


def stored_wall(
    linked_url: str, text: str | None, version: int, *, imported: bool = False
) -> Wall | None:
    """The wall a web page stored as record `version` for `linked_url` (the page the cited URL
    names), showing `text`, is under the rules its capture did not apply: a soft 404
    (`stored_not_found`, before `NOT_FOUND_RULE_VERSION`) or a consent dialog hiding the page
    (`stored_consent_wall`, before `CONSENT_RULE_VERSION`; any version before the last for an
    `imported` page, which no capture of ours read), its reason saying how it was told and the
    fix; None for any other page, and for every record stored with the rules."""
    if not needs_check(version):
        return None
    wall = text_wall(
        linked_url,
        text,
        not_found=version < NOT_FOUND_RULE_VERSION,
        consent=imported or version < CONSENT_RULE_VERSION,
    )
    if wall is None:
        return None
    return Wall(wall.kind, f"{wall.reason}; {_told_from_text(version)}")


def text_wall(
    linked_url: str, text: str | None, *, not_found: bool = True, consent: bool = True
) -> Wall | None:
    """The wall `text`, read for `linked_url` with no live page to ask, is under the text
    counterparts of the live rules (`stored_not_found` when `not_found`,
    `stored_consent_wall` when `consent`): what a Mind2Web 2 import, whose pages no capture
    of ours read, is checked with too. None for any other text."""
    if not text or len(text) > MAX_STORED_WALL_CHARS:
        return None
    wall = stored_not_found(linked_url, text) if not_found else None
    if wall is None and consent:
        wall = stored_consent_wall(linked_url, text)
    return wall


def stored_not_found(linked_url: str, text: str) -> Wall | None:
    """The `not_found` wall a stored `text` for `linked_url` is when a line of it says the
    page was not found and the whole is short (`walls.not_found_page` with that line as its
    heading and the text's size as its main text's); None otherwise."""
    if len(text.strip()) > MAX_SAID_ONCE_CHARS:
        return None
    said = next(filter(None, map(says_not_found, _lines(text))), None)
    if said is None:
        return None
    if not_found_page(linked_url, NotFoundShown("", (said,), len(text.strip()))) is None:
        return None  # its URL speaks of not-found pages
    return Wall("not_found", not_found_reason(said))


def stored_consent_wall(linked_url: str, text: str) -> Wall | None:
    """The `consent_wall` a stored `text` for `linked_url` is when it shows a consent dialog
    (lines saying `CONSENT_WORDS`, a choice among them or on a short line of its own) beside
    under `HIDDEN_PAGE_CHARS` characters of anything else; None otherwise."""
    if _ABOUT_CONSENT.search(unquote(urlsplit(linked_url).path)):
        return None
    dialog: list[str] = []
    rest = 0
    for line in _lines(text):
        if _CONSENT_LINE.search(line) or _button_line(line):
            dialog.append(line)
        else:
            rest += len(line)
    if not any(_CONSENT_LINE.search(line) for line in dialog):
        return None
    if not any(button_choice(line) for line in dialog):
        return None
    if sum(map(len, dialog)) > MAX_DIALOG_CHARS or rest >= HIDDEN_PAGE_CHARS:
        return None
    return Wall(
        "consent_wall",
        f"the text is a cookie-consent dialog beside {rest} characters of anything else: "
        "judging against the dialog is left incomplete, as a capture today answers the dialog "
        "and stores the page behind it",
    )


def _button_line(line: str) -> bool:
    """Whether `line` reads as a consent dialog's button: a short label that answers it."""
    plain = WHITESPACE.sub(" ", fold(line)).strip()
    short = len(plain) <= MAX_LABEL_CHARS and len(plain.split()) <= MAX_BUTTON_WORDS
    return short and button_choice(line) is not None


def _lines(text: str) -> list[str]:
    """The non-blank lines of `text`, stripped."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _told_from_text(version: int) -> str:
    """How a wall found here was found, and the fix."""
    return (
        f"told from the text stored before judgegen applied this rule (page record version "
        f"{version}): `judgegen cache-pages --recheck --refresh --store DIR` captures it again "
        "and decides from the live page"
    )
