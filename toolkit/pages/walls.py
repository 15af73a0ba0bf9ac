"""Recognizing what a site served in place of a cited page: a bot check, a sign-in or a consent
page, or its home page.

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

A removed page is often redirected to the site's home page (`/news/2023/an-article` → `/`),
which stored as the cited page would be judged in its place. A deep link that ended on a
home page (`redirect_home`) is recorded as a failure of kind `redirect_home`: the page's
fault, as a 404 is, so the page is missing and the claim unsupported. A cited home page that
ended on one (`/index.html` → `/`, `/` → `/en/`) is not; nor is a redirect to another page.
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


INDEX_STEMS: Final = frozenset({"default", "home", "index"})
"""A path's last segment that names a site's home page (`index.html`, `Default.aspx`, `home`),
compared folded, bare or with an `INDEX_EXTENSIONS` extension."""
INDEX_EXTENSIONS: Final = frozenset({"asp", "aspx", "cfm", "htm", "html", "jsp", "php", "shtml"})
_LOCALE = re.compile(r"[a-z]{2}(?:[-_][a-z]{2,4})?")
"""A path's first segment that is a language or country prefix (`en`, `fr`, `en-us`, `zh_hans`)."""


def redirect_home(cited_url: str, final_url: str | None) -> str | None:
    """`final_url` when the browser was sent from `cited_url`, a deep link, to a site's home
    page (what the failure names); None when the cited URL is a home page itself, or when the
    browser stayed or went to another page. A final URL with a query may name a page
    (WordPress's `/?p=123`), so it is not taken for the home page."""
    if not final_url or _home_path(cited_url):
        return None
    path, query = _page_path(final_url)
    return final_url if not query and _is_home(path) else None


def _home_path(url: str) -> bool:
    """Whether `url`'s path (its query aside) is a site's home page's."""
    return _is_home(_page_path(url)[0])


def _page_path(url: str) -> tuple[str, str]:
    """(path, query) of the page `url` shows: a hash route's (`#/reports?y=1`, `#!/about`)
    follows the URL's own."""
    parts = urlsplit(url)
    route = parts.fragment.partition("#")[0] if parts.fragment[:1] in ("/", "!") else ""
    route_path, _, route_query = route.lstrip("!").partition("?")
    return parts.path + "/" + route_path, parts.query + route_query


def _is_home(path: str) -> bool:
    """Whether `path` is a site's home page's: empty or an index file (`/index.php`), under at
    most a locale prefix (`/en-us/`)."""
    segments = [step for step in unquote(path).lower().split("/") if step]
    if segments and _LOCALE.fullmatch(segments[0]):
        segments = segments[1:]
    return not segments or (len(segments) == 1 and _is_index(segments[0]))


def _is_index(segment: str) -> bool:
    """Whether a (folded) path segment names a home page: `index`, `index.html`, `home`, ..."""
    stem, dot, extension = segment.partition(".")
    return stem in INDEX_STEMS and (not dot or extension in INDEX_EXTENSIONS)


def home_reason(final_url: str) -> str:
    """Why a deep link sent to a site's home page is a `redirect_home` failure."""
    return (
        f"the cited page redirected to the site's home page {final_url}: it was moved or "
        "removed, and the home page is not the page cited"
    )


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
