"""Recognizing a wall served in place of a cited page: a bot check, a sign-in or a consent page.

Sites behind Cloudflare, Imperva, PerimeterX, DataDome or Amazon's robot check often answer an
automated browser with HTTP 200 and a challenge page; others send it on to a sign-in page
(LinkedIn's authwall, Instagram's login, a private Google Doc) or to a cookie-consent page
(consent.google.com, Yahoo's guce). Stored as the page, such a wall would be judged: every
claim checked against it found unsupported, silently, and blamed on the agent. A capture that
is one is recorded as a failure of kind `blocked` instead, so runs list the page as missing
(still unsupported, as in the paper, but named) and `cache-pages` tries it again.

- A bot check is told by its own wording, specific enough that a real page quoting it is also
  long: only a text of at most `MAX_CHALLENGE_CHARS` characters is tested.
- A sign-in or consent wall is told by where the browser ended up: a URL the cited one was
  redirected to (by HTTP or by script) whose host starts with a sign-in or consent label
  (`accounts.`, `login.`, `consent.`, ...) or whose path has a sign-in step (`/login`,
  `/signin`, `/authwall`, ...), when the cited URL itself has neither: an agent may cite a
  sign-in page on purpose, and a page that merely links to one is not redirected.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote, urlsplit

from toolkit.checks.folding import WHITESPACE, fold
from toolkit.urls import web_host

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


WALL_HOST_LABELS: Final = frozenset(
    {"accounts", "auth", "consent", "guce", "idp", "login", "signin", "sso"}
)
"""A host's first label that names a sign-in or consent service (accounts.google.com,
login.microsoftonline.com, consent.youtube.com, guce.yahoo.com)."""
WALL_PATH_STEPS: Final = frozenset(
    {
        "authwall",
        "log-in",
        "login",
        "logon",
        "servicelogin",
        "sign-in",
        "sign_in",
        "signin",
    }
)
"""A path segment that is a sign-in step (linkedin.com/authwall, instagram.com/accounts/login,
amazon's /ap/signin, x.com/i/flow/login, gitlab's /users/sign_in), compared folded, without
an extension (`login.php`)."""
_SEGMENT_END = re.compile(r"\.[a-z0-9]{1,5}$")


def redirect_wall(cited_url: str, final_url: str | None) -> str | None:
    """Where the browser was sent instead of `cited_url` when that is a sign-in or consent
    page (`host/path`, what the failure names); None when it stayed, or went elsewhere."""
    if not final_url or _wall_sign(cited_url) is not None:
        return None
    sign = _wall_sign(final_url)
    if sign is None:
        return None
    parts = urlsplit(final_url)
    return f"{parts.hostname or ''}{parts.path}"


def _wall_sign(url: str) -> str | None:
    """The host label or path step that marks `url` as a sign-in or consent page, or None."""
    host = web_host(url)
    if host is None:
        return None
    label = host.split(".", 1)[0]
    if label in WALL_HOST_LABELS and "." in host:
        return label
    for segment in unquote(urlsplit(url).path).lower().split("/"):
        step = _SEGMENT_END.sub("", segment)
        if step in WALL_PATH_STEPS:
            return step
    return None


def wall_reason(where: str) -> str:
    """Why a capture sent to a sign-in or consent page is a `blocked` failure, and the fix."""
    return (
        f"the site sent the browser to a sign-in or consent page ({where}) instead of the "
        "page: the page is not public as cited, or needs consent first; capture it again "
        "from another network or save the page by hand"
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
