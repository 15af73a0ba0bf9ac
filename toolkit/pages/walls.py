"""Recognizing a bot check served in place of a cited page.

Sites behind Cloudflare, Imperva, PerimeterX, DataDome or Amazon's robot check often answer an
automated browser with HTTP 200 and a challenge page. Stored as the page, it would be judged:
every claim checked against it found unsupported, silently, and blamed on the agent. A capture
whose whole text is short and says one of these challenge phrases is recorded as a failure of
kind `blocked` instead, so runs list the page as missing and `cache-pages` tries it again.

The phrases are the challenges' own wording, specific enough that a real page quoting one is
also long: only a text of at most `MAX_CHALLENGE_CHARS` characters is tested.
"""

from __future__ import annotations

from typing import Final

from toolkit.checks.folding import WHITESPACE, fold

MAX_CHALLENGE_CHARS: Final = 3000
CHALLENGE_PHRASES: Final = (
    "enable javascript and cookies to continue",
    "checking your browser before accessing",
    "checking if the site connection is secure",
    "needs to review the security of your connection before proceeding",
    "verify you are human by completing the action below",
    "verifying you are human",
    "sorry, you have been blocked",
    "attention required! | cloudflare",
    "why have i been blocked?",
    "to confirm you are a human",
    "access to this page has been denied",
    "pardon our interruption",
    "request unsuccessful. incapsula incident id",
    "our systems have detected unusual traffic from your computer network",
    "enter the characters you see below",
    "please complete the security check to access",
    "please enable js and disable any ad blocker",
)


def bot_check(text: str | None) -> str | None:
    """The challenge phrase `text` says when it is a short bot-check page, else None."""
    if not text or len(text) > MAX_CHALLENGE_CHARS:
        return None
    plain = WHITESPACE.sub(" ", fold(text))
    return next((phrase for phrase in CHALLENGE_PHRASES if phrase in plain), None)


def blocked_reason(phrase: str) -> str:
    """Why a capture is a `blocked` failure, and what to do about it."""
    return (
        f"the site served a bot check instead of the page (it says '{phrase}'): capture it "
        "again later or from another network, or save the page by hand"
    )
