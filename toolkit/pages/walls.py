"""Recognizing what a site served in place of a cited page: a bot check, a sign-in or a consent
page, its home page, a not-found page (a soft 404), or a cookie-consent dialog hiding it.

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
- A home page is `/`, an index file (`/index.php`, `/Default.aspx`, `/home`), or either under
  a locale (`/en-us/`, `/us/en/`; any two letters, so `/tv/` too: a deep link sent there is
  not the cited page either), whatever its query (`/?from=404`, `/?utm_source=x`,
  `/?redirect=/news/x`) unless the query selects content, as query-routed sites do
  (`/?p=123`, `/?s=term`, `/index.php?title=X`: `CONTENT_KEYS`). The same holds for the
  cited URL: `/?p=123` is a deep link, `/?lang=fr` a home page.
- A short link (`bit.ly/abc`, `t.co/xyz`: a `SHORTENER_HOSTS` host, or one opaque token such
  as `/3xYz9Q` that the browser left for another site) names the page it sends to on
  another site: one that points at a home page is a cited home page, while one that points
  at an article since sent home is a deep link sent home.

A removed page may instead be redirected to the site's error page (`/old` → `/404`,
`/en/not-found`, `/Error.aspx?aspxerrorpath=/old`), or to a search or site map page
(`/products/widget-9` → `/search?q=widget+9`, `/?s=widget-9`, `/sitemap`), which a site shows
for a page it does not have: a soft 404 (`redirect_not_found`), recorded as a failure of kind
`not_found`, the page's fault as a 404 is. A URL is an error page only when its whole path
names one (`/404`, `/errors/404`, under a locale), not a page so named deeper in a site
(`/wiki/404`, `/docs/error`); a search page only when it holds the words searched for (the
bare `/search` may be a section's landing page); a cited error or search page is neither.

`served_instead` applies all these, at capture and again at every read of a stored page
(`toolkit.pages.store`: a store written before a rule, or imported from Mind2Web 2, may hold
such a page as the page), from the same facts: the URL asked for, the URL the browser ended
on, a short text, and the page the cited URL names (`linked_page`: where a short link
pointed, the one thing a read needs of the navigations), which the store keeps with the page.
For a page stored before the store kept that fact, where a short link pointed is unknown: one
that left for a home page on another site reads as missing, to be captured again
(`unrecorded_link_reason`), never served as a home page it may not have pointed at.

Many sites answer a removed page without a redirect, with a success status and a page saying
"Page not found" (a soft 404). Such a page is told by what it shows (`NotFoundShown`, read in
the browser by the capture): its title or a main heading is, as a whole, a not-found message
in one of several languages (`says_not_found`: "Page not found | Site", "Oops! That page
can't be found.", "Seite nicht gefunden", "Error 404"; not "Page not found error when
deploying", nor "Error Correction Codes"), and beside it the page shows little main text
(`not_found_page`: `MAX_NOT_FOUND_CHARS` when title and heading both say it,
`MAX_SAID_ONCE_CHARS` when one does), so a long article about HTTP errors is a page; nor is a
page whose URL speaks of not-found pages (`/Status/404`, MDN's article titled "404 Not
Found"). It is a `not_found` failure too. The rule needs the page's title and headings, which
a store does not keep: it applies at capture only, and a page stored before it is served
until captured again.

A cookie-consent dialog drawn over the page, or in place of its article, is told from what the
page shows (`ConsentShown`, read in the browser by `toolkit.pages.consent`): a box saying
`CONSENT_WORDS` with a button that answers it (`button_choice`, by a consent tool's own
buttons, `CONSENT_BUTTONS`, or by its label in several languages). It hides the page
(`hides_page`) when beside it and the menus the page shows under `HIDDEN_PAGE_CHARS`
characters, or holds its article back (a hidden `main` or `article`); a notice beside the page
hides nothing, and is stored with it. A capture answers a dialog that hides the page
(`consent_button`: the choice that agrees to nothing, else Accept) and one still hiding it then
is a `consent_wall` failure (`consent_wall`), ours: a reader pressing the button sees the page,
so claims checked against it are not unsupported for it. These rules need the page's boxes,
which a store does not keep: they apply at capture only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from toolkit.checks.domains import url_domain
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
compared folded, bare or with an `INDEX_EXTENSIONS` extension. `/home` is many sites' home
page (Drupal's and many apps' front page, `#/home`); a section of that name is rare, and a
deep link sent to it is not the cited page either."""
INDEX_EXTENSIONS: Final = frozenset({"asp", "aspx", "cfm", "htm", "html", "jsp", "php", "shtml"})
_LOCALE = re.compile(r"[a-z]{2}(?:[-_](?:[a-z]{2,4}|\d{3}))?")
"""A path's first segment that is a language or country prefix (`en`, `fr`, `en-us`,
`zh_hans`, `es-419`); up to `MAX_LOCALE_SEGMENTS` of them (`/us/en/`)."""
MAX_LOCALE_SEGMENTS: Final = 2
CONTENT_KEYS: Final = frozenset(
    {
        # WordPress: a post, a page, an archive, a search, an attachment
        "p",
        "page_id",
        "attachment_id",
        "cat",
        "tag",
        "author",
        "m",
        "s",
        "post_type",
        # other query-routed sites: Drupal (?q=node/1), MediaWiki (index.php?title=),
        # Joomla (?option=), OpenCart (?route=), DotNetNuke (?tabid=), Fusebox, forums
        "q",
        "title",
        "curid",
        "option",
        "route",
        "tabid",
        "fuseaction",
        "topic",
        "showtopic",
        # generic: a record, a page, an article or a search by name
        "id",
        "page",
        "article",
        "story",
        "post",
        "item",
        "doc",
        "query",
        "search",
    }
)
"""A query key that makes a home page's address (`/`, `/index.php`) show some other page, as
query-routed sites do (`/?p=123`, `/?s=term`, `/index.php?title=X`), compared folded; a key
that is a path (`/?/news/x`, a router's) does too. Any other query (`?from=404`,
`?utm_source=x`, `?redirect=/news/x`, `?lang=fr`) leaves it the home page: sent there from a
deep link, it is the home page judged in the page's place, so an unknown key errs that way
(a failure that says so) rather than towards a home page stored silently."""
SHORTENER_HOSTS: Final = frozenset(
    {
        "aka.ms",
        "amzn.to",
        "bit.ly",
        "buff.ly",
        "cutt.ly",
        "goo.gl",
        "is.gd",
        "j.mp",
        "lnkd.in",
        "ow.ly",
        "rb.gy",
        "rebrand.ly",
        "shorturl.at",
        "t.co",
        "t.ly",
        "tiny.cc",
        "tinyurl.com",
    }
)
"""Link shorteners whose links may be words (`aka.ms/wsl`, `bit.ly/annual-report`). An opaque
token (`_SHORT_TOKEN`) is taken for a short link on any host (nyti.ms, a company's own), so
this list need not name every shortener; one it misses that links a word to a home page
fails loudly as `redirect_home`, the safe way."""
_SHORT_TOKEN = re.compile(r"(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{4,16}", re.IGNORECASE)
_NUMBERED_WORD = re.compile(r"[a-z]+\d+|\d+[a-z]+", re.IGNORECASE)
"""A short link's one path segment is an opaque token: 4 to 16 letters and digits, mixed
(`3xYz9Q`, `y7abc123`), not a word and a number (`covid19`, `2023report`), which an old
site's page may be named."""


def linked_page(cited_url: str, final_url: str, via: Sequence[str] = ()) -> str:
    """The page `cited_url` names, as a capture that ended on `final_url` through `via` (the
    URLs the browser was sent through, in order) tells it: itself, or for a short link the
    first page it reached on another site (`_linked_page`). What a stored page keeps of the
    navigations, so a read applies `redirect_home` as the capture did."""
    return _linked_page(cited_url, [*via, final_url])


def redirect_home(cited_url: str, final_url: str | None, linked_url: str) -> str | None:
    """`final_url` when the browser was sent from `cited_url`, a deep link, to a site's home
    page (what the failure names); None when the cited URL is a home page itself, or when the
    browser stayed or went to another page. `linked_url`: the page `cited_url` names
    (`linked_page`), so a cited short link is the page it pointed at."""
    if not final_url or _is_home_url(linked_url):
        return None
    return final_url if _is_home_url(final_url) else None


def unrecorded_link(cited_url: str, final_url: str) -> bool:
    """Whether `cited_url`, a short link that ended on a home page on another site
    (`final_url`), needs the page it pointed at, unrecorded, to be told: it may have pointed at
    that home page (a cited home page) or at an article since sent home (`redirect_home`);
    only the capture's navigations told which."""
    return linked_page(cited_url, final_url) != cited_url and _is_home_url(final_url)


def _linked_page(cited_url: str, hops: list[str]) -> str:
    """The page `cited_url` names: itself, or for a short link the first of `hops` on another
    site (itself followed if it is one: `bit.ly` → `ow.ly` → the page). A short link that
    never left its site (a dead link sent to the shortener's home) names itself."""
    page = cited_url
    while short_link(page):
        site = url_domain(page)
        away = next((i for i, hop in enumerate(hops) if url_domain(hop) not in (None, site)), None)
        if away is None:
            return page
        page, hops = hops[away], hops[away + 1 :]
    return page


def short_link(url: str) -> bool:
    """Whether `url` looks like a short link: one path segment, on a `SHORTENER_HOSTS` host or
    an opaque token (`_SHORT_TOKEN`). Only a link the browser left for another site is read
    as one (`_linked_page`), so a site's own page so named is still its page. Any other URL
    names itself: `linked_page` and the rules never need its navigations."""
    segments = [step for step in urlsplit(url).path.split("/") if step]
    if len(segments) != 1:
        return False
    token = segments[0]
    if web_host(url) in SHORTENER_HOSTS:
        return True
    return bool(_SHORT_TOKEN.fullmatch(token)) and not _NUMBERED_WORD.fullmatch(token)


def _is_home_url(url: str) -> bool:
    """Whether `url` shows a site's home page: a home path (`_is_home`) with no query key
    that selects another page (`CONTENT_KEYS`)."""
    path, query = _page_path(url)
    return _is_home(path) and not _selects_content(query)


def _selects_content(query: str) -> bool:
    """Whether a query on a home page's address names another page (`CONTENT_KEYS`, or a key
    that is a path)."""
    keys = (key.strip().lower() for key, _ in parse_qsl(query, keep_blank_values=True))
    return any(key in CONTENT_KEYS or key.startswith("/") for key in keys)


def _page_path(url: str) -> tuple[str, str]:
    """(path, query) of the page `url` shows: a hash route's (`#/reports?y=1`, `#!/about`)
    follows the URL's own."""
    parts = urlsplit(url)
    route = parts.fragment.partition("#")[0] if parts.fragment[:1] in ("/", "!") else ""
    route_path, _, route_query = route.lstrip("!").partition("?")
    return parts.path + "/" + route_path, f"{parts.query}&{route_query}"


def _is_home(path: str) -> bool:
    """Whether `path` is a site's home page's: empty or an index file (`/index.php`), under at
    most `MAX_LOCALE_SEGMENTS` locale prefixes (`/en-us/`, `/us/en/`)."""
    segments = [step for step in unquote(path).lower().split("/") if step]
    for _ in range(MAX_LOCALE_SEGMENTS):
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


def unrecorded_link_reason(cited_url: str, final_url: str) -> str:
    """Why a stored short link that ended on a home page on another site, with the page it
    pointed at unrecorded (`unrecorded_link`), reads as a `redirect_home` failure, and the fix."""
    return (
        f"the short link {cited_url} ended on the home page {final_url}, stored before the page "
        "store recorded where a short link pointed: it may have pointed at that home page or "
        "at an article since sent home, which only a new capture tells; capture it again with "
        "`judgegen cache-pages` (it reads as missing, so it is captured again, with or without "
        "--refresh)"
    )


ERROR_STEPS: Final = frozenset(
    {
        "404",
        "404error",
        "404page",
        "404-error",
        "404-page",
        "error",
        "error404",
        "error-404",
        "error_404",
        "not-found",
        "notfound",
        "not_found",
        "page-404",
        "page-not-found",
        "pagenotfound",
        "page_not_found",
    }
)
"""A path segment that names a site's error page (`/404`, `/not-found`, `/Error.aspx`),
compared folded, bare or with an `INDEX_EXTENSIONS` extension. A URL is an error page when
its whole path, under its locale prefixes, is one of these, alone or in an `ERROR_FOLDERS`
folder (`/errors/404`, `/en/404.html`): a page named so deeper in a site is its own
(`/wiki/404`, an article on the year 404; `/docs/error`)."""
ERROR_FOLDERS: Final = frozenset({"errors", "error", "pages"})
"""A folder an error page may sit in (`/errors/404`, `/error/not-found`, `/pages/404.html`)."""
SEARCH_STEPS: Final = frozenset(
    {
        "search",
        "search-results",
        "searchresults",
        "suche",
        "recherche",
        "rechercher",
        "buscar",
        "busqueda",
        "busca",
        "pesquisa",
        "ricerca",
        "cerca",
        "zoeken",
        "zoek",
        "sok",
        "soeg",
        "haku",
        "szukaj",
        "wyszukiwanie",
        "poisk",
    }
)
"""A path's last segment that names a site's search page (`/search?q=x`, `/suche?query=x`,
`/3/search.html?q=x`), compared folded, bare or with an `INDEX_EXTENSIONS` extension: one only
with a `SEARCH_KEYS` query, as a page is that searched for the term; `/search` alone may be a
section's landing page (developers.google.com/search)."""
SEARCH_KEYS: Final = frozenset(
    {"q", "s", "k", "query", "search", "searchterm", "term", "keyword", "keywords", "text"}
)
"""A query key that holds the words searched for (`?q=`, `?s=`, `?query=`), compared folded.
On a home page's address (`/?s=old-article`, WordPress's search) it makes the page a search,
but `q` holding a path is Drupal's page address (`/?q=node/7`), no search."""
SITEMAP_STEPS: Final = frozenset({"sitemap", "site-map", "plan-du-site", "mapa-del-sitio"})
"""A path's last segment that names a site's map, where some sites send a removed page."""


def redirect_not_found(cited_url: str, final_url: str | None, linked_url: str) -> str | None:
    """Where the browser was sent instead of `cited_url` when that is the site's error page
    (`_is_error_url`) or a search or site map page (`_is_search_url`), which a site shows for
    a page it does not have (a soft 404); None when it stayed or went to another page.
    `linked_url`: the page `cited_url` names (`linked_page`), so a short link to a search is
    a cited search page; a short link to an error page is none anyone cites."""
    if not final_url or final_url == cited_url:
        return None
    if _is_error_url(final_url) and not _is_error_url(cited_url):
        return final_url
    if final_url != linked_url and _is_search_url(final_url) and not _is_search_url(linked_url):
        return final_url
    return None


def _is_error_url(url: str) -> bool:
    """Whether `url` is a site's error page: its path, under its locale prefixes, is an
    error step (`ERROR_STEPS`), alone or in an error folder (`ERROR_FOLDERS`)."""
    steps = _steps(_page_path(url)[0])
    if not steps or len(steps) > 2 or _stem(steps[-1]) not in ERROR_STEPS:
        return False
    return len(steps) == 1 or _stem(steps[0]) in ERROR_FOLDERS | ERROR_STEPS


def _is_search_url(url: str) -> bool:
    """Whether `url` is a site's search or site map page: a search step with the words
    searched for (`SEARCH_STEPS`, `SEARCH_KEYS`), a home page's address searching
    (`/?s=term`), or a site map (`SITEMAP_STEPS`)."""
    path, query = _page_path(url)
    steps = _steps(path)
    last = _stem(steps[-1]) if steps else ""
    if last in SITEMAP_STEPS:
        return True
    searching = any(
        key.strip().lower() in SEARCH_KEYS and not (key.strip().lower() == "q" and "/" in value)
        for key, value in parse_qsl(query, keep_blank_values=True)
    )
    return searching and (last in SEARCH_STEPS or _is_home(path))


def _steps(path: str) -> list[str]:
    """The folded segments of `path` under at most `MAX_LOCALE_SEGMENTS` locale prefixes."""
    segments = [step for step in unquote(path).lower().split("/") if step]
    for _ in range(MAX_LOCALE_SEGMENTS):
        if len(segments) > 1 and _LOCALE.fullmatch(segments[0]):
            segments = segments[1:]
    return segments


def _stem(segment: str) -> str:
    """A folded path segment without an `INDEX_EXTENSIONS` extension (`404.html` → `404`)."""
    stem, dot, extension = segment.rpartition(".")
    return stem if dot and extension in INDEX_EXTENSIONS else segment


def redirect_not_found_reason(final_url: str) -> str:
    """Why a page sent to the site's error, search or site map page is a `not_found` failure."""
    return (
        f"the cited page redirected to {final_url}, the site's error, search or site map page "
        "(a soft 404): the page was moved or removed, and what the site shows instead is not "
        "the page cited"
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


REMEMBERED_REDIRECTS: Final = 4096
"""(cited URL, final URL, linked page) triples whose verdict `served_instead` keeps."""


@dataclass(frozen=True)
class Wall:
    """What a site served in place of a cited page, as a capture records it: the failure's
    kind and reason."""

    kind: Literal["blocked", "redirect_home", "not_found", "consent_wall"]
    reason: str


def served_instead(
    cited_url: str, final_url: str | None, text: str | None, *, linked_url: str | None
) -> Wall | None:
    """The wall a web page read for `cited_url` is (`text`, ending on `final_url`): a bot check,
    a sign-in or consent page, or the site's home, error or search page; None when it is the
    page. Cheap for a page that was not redirected: only a short text is read.

    `linked_url`: the page `cited_url` names (`linked_page`, from the capture's navigations),
    or None when it was not recorded (a page stored before the store kept it). It matters only
    for a short link (`short_link`; any other URL names itself), and unrecorded, a short link
    that ended on a home page on another site is not taken for that home page: it may have
    pointed at an article since sent home, which would then be served as the cited page,
    silently. It reads as a `redirect_home` failure naming the fix (`unrecorded_link_reason`):
    missing, and captured again, which records the page it points at. A short link that never
    left its site, or ended on a page that is no home page, is decided as before: the
    navigations could not change that."""
    challenge = bot_check(text)
    if challenge is not None:
        return Wall("blocked", blocked_reason(challenge))
    if not final_url or final_url == cited_url:  # no redirect rule finds a wall there
        return None
    return _redirected_to_wall(cited_url, final_url, linked_url)


@functools.lru_cache(maxsize=REMEMBERED_REDIRECTS)
def _redirected_to_wall(cited_url: str, final_url: str, linked_url: str | None) -> Wall | None:
    """The sign-in or consent page, the home page, or the error or search page the browser
    was sent to from `cited_url` (`redirect_wall`, `redirect_home`, `unrecorded_link` when
    `linked_url` is None, `redirect_not_found`); remembered, as a store applies the rules to
    each read of a page (~10 µs each)."""
    wall = redirect_wall(cited_url, final_url)
    if wall is not None:
        return Wall("blocked", wall_reason(wall))
    if linked_url is None:
        if unrecorded_link(cited_url, final_url):
            return Wall("redirect_home", unrecorded_link_reason(cited_url, final_url))
        linked_url = linked_page(cited_url, final_url)
    home = redirect_home(cited_url, final_url, linked_url)
    if home is not None:
        return Wall("redirect_home", home_reason(home))
    gone = redirect_not_found(cited_url, final_url, linked_url)
    if gone is not None:
        return Wall("not_found", redirect_not_found_reason(gone))
    return None


MAX_NOT_FOUND_CHARS: Final = 2000
"""A page whose title and a main heading both say it was not found is a not-found page when
its main text (`NotFoundShown.main_chars`) is at most this long: a soft 404 offers a line of
apology, a search box and a few links; an article about HTTP errors runs on."""
MAX_SAID_ONCE_CHARS: Final = 600
"""The same when only its title or only a heading says so: a page that says it less gets less
room (a bug report titled "Page not found" shows its report and its discussion)."""
MAX_MESSAGE_WORDS: Final = 16
"""A title part or a heading longer than this is no not-found message, whatever it says."""
NOT_FOUND_FILLERS: Final = (
    "404",
    "oops",
    "whoops",
    "sorry",
    "we're sorry",
    "we are sorry",
    "uh oh",
    "oh no",
    "ouch",
    "hmm",
    "error",
    "http",
    "fehler",
    "hoppla",
    "leider",
    "entschuldigung",
    "erreur",
    "desole",
    "oups",
    "lo sentimos",
    "ups",
    "errore",
    "spiacenti",
    "erro",
    "fout",
    "helaas",
    "błąd",
    "przepraszamy",
    "ошибка",
    "упс",
    "hata",
    "chyba",
)
"""Words a not-found message is wrapped in ("Oops!", "Error 404", "Sorry,"), in several
languages; a title part or a heading of these alone is one only when it holds `404`."""
NOT_FOUND_MESSAGES: Final = (
    # English: "Page not found", "Not found", "This page doesn't exist", "The page you were
    # looking for could not be found", "We can't find that page", "Nothing found"
    r"(?:(?:page|file|document|article|post|product|resource|content|url|link|item|entry"
    r"|story|webpage) )?not found",
    r"(?:the |this |that )?(?:requested )?(?:page|url|link|file|article|document|post)"
    r"(?: you (?:requested|are looking for|were looking for|re looking for|want|wanted))?"
    r" (?:(?:does not|doesn't|did not|no longer) exists?|(?:could not|couldn't|cannot|can't"
    r"|can not) be found|(?:was not|wasn't|is not|isn't|has not been|hasn't been|could not be)"
    r" found|(?:is )?no longer available|(?:is )?not available|(?:has been|was) (?:removed"
    r"|deleted))(?: on this (?:server|site))?",
    r"(?:we |i )?(?:can't|cannot|can not|couldn't|could not) find (?:the |this |that |your )?"
    r"page(?: you (?:requested|are looking for|were looking for|re looking for))?",
    r"nothing (?:was )?found(?: here)?",
    # German
    r"(?:die |diese )?(?:angeforderte |gesuchte |aufgerufene )?seite (?:wurde )?nicht gefunden",
    r"(?:die |diese )?(?:angeforderte |gesuchte |aufgerufene )?seite (?:existiert nicht"
    r"(?: mehr)?|gibt es nicht(?: mehr)?|konnte nicht gefunden werden|ist nicht mehr verfügbar)",
    r"nicht gefunden",
    # French
    r"(?:la |cette )?page (?:demandee |que vous (?:cherchez|recherchez) )?(?:est )?"
    r"(?:introuvable|non trouvee|inexistante|n'existe pas|n'existe plus)",
    r"introuvable",
    # Spanish, Portuguese, Italian
    r"(?:la |esta )?pagina (?:que buscas |solicitada )?(?:no (?:fue |ha sido )?encontrada"
    r"|no existe|no se encuentra|no se ha encontrado)",
    r"no (?:se )?(?:encontro|encontramos|pudimos encontrar|hemos encontrado|podemos encontrar)"
    r" (?:la |esta )?pagina",
    r"(?:a |esta )?pagina (?:nao (?:foi )?encontrada|nao existe)",
    r"(?:la |questa )?pagina (?:richiesta )?(?:non (?:e stata )?trovata|non esiste)",
    # Dutch, Nordic, Polish, Czech, Turkish
    r"(?:de |deze )?pagina (?:is )?(?:niet gevonden|bestaat niet(?: meer)?)",
    r"sidan (?:hittades inte|kunde inte hittas|finns inte)",
    r"siden? (?:blev ikke fundet|ble ikke funnet|ikke fundet|ikke funnet|findes ikke"
    r"|finnes ikke)",
    r"nie znaleziono strony|strona nie (?:została znaleziona|istnieje)",
    r"stránka (?:nenalezena|nebyla nalezena|neexistuje)",
    r"sayfa bulunamadı",
    # Russian, Ukrainian
    r"страница не (?:найдена|существует)|сторінк[уа] не знайдено|сторінка не знайдена",
    # Japanese, Chinese, Korean
    r"(?:お探しの)?ページ(?:が|は)(?:見つかりません(?:でした)?|存在しません)",
    r"(?:抱歉 ?)?(?:页面|网页|頁面|網頁)(?:不存在|未找到|找不到了?)",
    r"(?:抱歉 ?)?找不到(?:该|該|此)?(?:页面|网页|頁面|網頁)",
    r"(?:요청하신 )?페이지를 찾을 수 없습니다",
)
"""What a page that was not found says in its title or its main heading, as a whole title
part or heading (`says_not_found`; patterns over text folded by `_message_words`, with
`NOT_FOUND_FILLERS` around them): "Page not found | Site", "404 - Seite nicht gefunden",
"Oops! That page can't be found.". A title that only speaks of one ("Page not found error
when deploying", "How to fix 404 errors") is not one."""
_PART_BREAK = re.compile(r"[|·»:!?.。！？]|\s[-–—]\s")
"""Where a title or a heading breaks into parts: the separators a title puts between a
page's name and its site's, and a heading's sentences."""


def _message_words(text: str) -> str:
    """`text` folded, its punctuation but apostrophes made spaces, its spaces single."""
    return WHITESPACE.sub(" ", re.sub(r"[^\w']+", " ", fold(text))).strip(" '")


_FILLERS = "(?:" + "|".join(re.escape(_message_words(f)) for f in NOT_FOUND_FILLERS) + ")"
_NOT_FOUND_MESSAGE = re.compile(
    rf"(?:{_FILLERS} )*(?:"
    + "|".join(fold(pattern) for pattern in NOT_FOUND_MESSAGES)
    + rf")(?: {_FILLERS})*"
)
_ONLY_FILLERS = re.compile(rf"(?:{_FILLERS} ?)+")
_ABOUT_NOT_FOUND = re.compile(r"(?<![0-9])404(?![0-9])|not[-_ +]?found", re.IGNORECASE)
"""A URL that speaks of not-found pages (`/docs/Web/HTTP/Status/404`, `/fix-not-found`):
its page may well be about them, titled so, and short."""


def says_not_found(text: str) -> str | None:
    """The part of a title or heading `text` that says the page was not found: a whole part
    that is a `NOT_FOUND_MESSAGES` message, else one of `404` among `NOT_FOUND_FILLERS` alone
    ("Error 404"); None when none does."""
    number = None
    for part in _PART_BREAK.split(text):
        words = _message_words(part)
        if not words or len(words.split()) > MAX_MESSAGE_WORDS:
            continue
        if _NOT_FOUND_MESSAGE.fullmatch(words):
            return part.strip()
        if number is None and _ONLY_FILLERS.fullmatch(words) and "404" in words.split():
            number = part.strip()
    return number


@dataclass(frozen=True)
class NotFoundShown:
    """What a page shows that tells a not-found page, as a capture reads it from the page:
    its title, its first main headings (`h1`, `h2`), and the size of its main text (its
    longest `main` or `article`, else its text outside its menus: `nav`, `header`, `footer`,
    `aside`)."""

    title: str = ""
    headings: tuple[str, ...] = ()
    main_chars: int = 0


def not_found_page(linked_url: str, shown: NotFoundShown) -> Wall | None:
    """The wall a page showing `shown` for `linked_url` (the page the cited URL names,
    `linked_page`) is when it says it was not found, with a success status (a soft 404): its
    title or a main heading says so (`says_not_found`), and beside that it shows little
    (`MAX_NOT_FOUND_CHARS` when both say so, `MAX_SAID_ONCE_CHARS` when one does). None for
    any other page, and for a page whose URL speaks of not-found pages (`_ABOUT_NOT_FOUND`:
    the page on HTTP 404 is titled "404 Not Found"). The rule reads the page's title and
    headings, which a store does not keep: it applies at capture only."""
    if _ABOUT_NOT_FOUND.search(unquote(linked_url)):
        return None
    in_title = says_not_found(shown.title)
    in_heading = next(filter(None, map(says_not_found, shown.headings)), None)
    said = in_title or in_heading
    if said is None:
        return None
    limit = MAX_NOT_FOUND_CHARS if in_title and in_heading else MAX_SAID_ONCE_CHARS
    if shown.main_chars > limit:
        return None
    return Wall("not_found", not_found_reason(said))


def not_found_reason(said: str) -> str:
    """Why a page saying it was not found, served with a success status, is a `not_found`
    failure."""
    return (
        f"the site served a page saying '{said}' with little else, under a success status (a "
        "soft 404): the cited page was moved or removed, and the not-found page is not the "
        "page cited"
    )


ConsentChoice = Literal["rejected", "accepted"]
"""How a capture answered a cookie-consent dialog that hid the page: `rejected` (its choice
that agrees to nothing: "Reject all", "Only necessary", "Continue without accepting"), or
`accepted` ("Accept", pressed only when the dialog offered no such choice)."""
REFUSING_LABELS: Final = (
    # English
    "reject",
    "reject all",
    "decline",
    "deny",
    "refuse",
    "disagree",
    "do not agree",
    "don't agree",
    "do not accept",
    "don't accept",
    "do not consent",
    "don't consent",
    "do not allow",
    "don't allow",
    "only necessary",
    "necessary only",
    "only essential",
    "essential only",
    "only required",
    "required only",
    "strictly necessary only",
    "necessary cookies only",
    "essential cookies only",
    "continue without accepting",
    "continue without agreeing",
    "continue without consent",
    "without accepting",
    # German
    "ablehnen",
    "alle ablehnen",
    "verweigern",
    "nur notwendige",
    "nur essenzielle",
    "nur erforderliche",
    "nicht einverstanden",
    "ohne zustimmung",
    "ohne einwilligung",
    # French
    "refuser",
    "tout refuser",
    "je refuse",
    "continuer sans accepter",
    "sans accepter",
    "uniquement les cookies nécessaires",
    # Spanish, Portuguese, Italian
    "rechazar",
    "rechazar todo",
    "rechazar todas",
    "solo necesarias",
    "continuar sin aceptar",
    "sin aceptar",
    "rejeitar",
    "rejeitar tudo",
    "recusar",
    "continuar sem aceitar",
    "rifiuta",
    "rifiuta tutto",
    "continua senza accettare",
    "senza accettare",
    "solo necessari",
    # Dutch, Nordic, Polish
    "weigeren",
    "alles weigeren",
    "weiger",
    "alleen noodzakelijke",
    "avvisa",
    "avvisa alla",
    "avböj",
    "afvis",
    "afvis alle",
    "avvis alle",
    "odrzuć",
    "odrzuć wszystkie",
)
"""Labels of a consent dialog's button that agrees to nothing (compared folded, as whole
words of the label: "Reject all cookies" is one). Read before `ACCEPTING_LABELS`, so
"Continue without accepting" and "Don't accept" refuse."""
ACCEPTING_LABELS: Final = (
    "accept",
    "accept all",
    "accept cookies",
    "allow",
    "allow all",
    "agree",
    "i agree",
    "i accept",
    "ok",
    "okay",
    "got it",
    "i understand",
    "akzeptieren",
    "alle akzeptieren",
    "annehmen",
    "zustimmen",
    "alle zulassen",
    "einverstanden",
    "ich stimme zu",
    "accepter",
    "tout accepter",
    "j'accepte",
    "d'accord",
    "aceptar",
    "acepto",
    "aceitar",
    "concordo",
    "accetta",
    "accetto",
    "accepteren",
    "akkoord",
    "toestaan",
    "godkänn",
    "acceptera",
    "accepter alle",
    "tillad alle",
    "godta alle",
    "akceptuję",
    "zgadzam się",
)
"""Labels of a consent dialog's button that agrees (compared as `REFUSING_LABELS` are)."""
CONSENT_WORDS: Final = (
    "cookie",
    "consent",
    "gdpr",
    "dsgvo",
    "rgpd",
    "einwilligung",
    "consentement",
    "consentimiento",
    "consentimento",
    "consenso",
    "toestemming",
    "samtycke",
    "samtykke",
    "zgod",
)
"""Words (as word starts, any case) that make a box holding a button a consent dialog: its
text, not counting its buttons' labels, says one ("We use cookies", "Einwilligung")."""
CONSENT_ROOTS: Final = (
    "#onetrust-consent-sdk",
    "#onetrust-banner-sdk",
    "#CybotCookiebotDialog",
    "#didomi-host",
    "#didomi-notice",
    ".qc-cmp2-container",
    "#qc-cmp2-ui",
    "#truste-consent-track",
    "#consent_blackbar",
    "#usercentrics-root",
    "[id^='sp_message_container']",
    ".fc-consent-root",
    "#cmpbox",
    ".cc-window",
    "#cookie-law-info-bar",
    "#cookiescript_injected",
    "#BorlabsCookieBox",
)
"""The boxes of common consent tools (OneTrust, Cookiebot, Didomi, Quantcast, TrustArc,
Usercentrics, Sourcepoint, Google's Funding Choices, consentmanager, Cookie Consent, ...):
a button in one belongs to its dialog, whatever its text says."""
CONSENT_BUTTONS: Final[tuple[tuple[str, ConsentChoice], ...]] = (
    ("#onetrust-reject-all-handler", "rejected"),
    ("#CybotCookiebotDialogBodyButtonDecline", "rejected"),
    ("#didomi-notice-disagree-button", "rejected"),
    ("[data-testid='uc-deny-all-button']", "rejected"),
    ("#truste-consent-required", "rejected"),
    (".fc-cta-do-not-consent", "rejected"),
    ("#onetrust-accept-btn-handler", "accepted"),
    ("#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll", "accepted"),
    ("#CybotCookiebotDialogBodyButtonAccept", "accepted"),
    ("#didomi-notice-agree-button", "accepted"),
    ("[data-testid='uc-accept-all-button']", "accepted"),
    ("#truste-consent-button", "accepted"),
    (".fc-cta-consent", "accepted"),
)
"""Consent tools' own buttons (CSS selectors) and what they answer, in any language."""
MAX_DIALOG_CHARS: Final = 5000
"""A box holding a button whose text is longer is no consent dialog (a page that mentions
cookies), unless it is a consent tool's (`CONSENT_ROOTS`)."""
MAX_LABEL_CHARS: Final = 60
"""A button's label longer than this is no consent choice."""
HIDDEN_PAGE_CHARS: Final = 500
"""A page showing fewer characters than this beside its consent dialogs and its menus
(`nav`, `header`, `footer`) is hidden by them: a claim checked against it would be checked
against the dialog."""
HIDDEN_ARTICLE_CHARS: Final = 200
"""A hidden `main` or `article` holding at least this much text is an article held back."""


def _whole_words(phrases: Sequence[str]) -> re.Pattern[str]:
    """A pattern finding any of `phrases`, folded, as whole words of a folded text."""
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(fold(p)) for p in phrases) + r")(?!\w)")


_REFUSING = _whole_words(REFUSING_LABELS)
_ACCEPTING = _whole_words(ACCEPTING_LABELS)


def button_choice(label: str, named: ConsentChoice | None = None) -> ConsentChoice | None:
    """What pressing a consent dialog's button labelled `label` answers: `named`, when a
    consent tool names the button (`CONSENT_BUTTONS`), else by its label, a refusing one
    first (`REFUSING_LABELS`, then `ACCEPTING_LABELS`); None for any other (settings, more)."""
    if named is not None:
        return named
    plain = WHITESPACE.sub(" ", fold(label)).strip()
    if _REFUSING.search(plain):
        return "rejected"
    if _ACCEPTING.search(plain):
        return "accepted"
    return None


@dataclass(frozen=True)
class ConsentShown:
    """What a page shows of cookie-consent dialogs, as a capture reads it from the page:
    the choice each of their buttons offers (`button_choice`; None: another button), the
    size of each dialog's text, the button's dialog, and beside them the size of its menus'
    text (`nav`, `header`, `footer` outside its article) and whether it holds an article back
    (a `main` or `article` hidden, with `HIDDEN_ARTICLE_CHARS` of text)."""

    choices: tuple[ConsentChoice | None, ...] = ()
    dialogs: tuple[int, ...] = ()
    """For each of `choices`, the index of its dialog in `dialog_chars`."""
    dialog_chars: tuple[int, ...] = ()
    chrome_chars: int = 0
    hidden_article: bool = False

    def shown(self) -> bool:
        """Whether a consent dialog is shown: a box saying `CONSENT_WORDS` with a button
        that answers it (a box with only "Cookie settings" is none)."""
        return any(choice is not None for choice in self.choices)

    def beside(self, text: str) -> int:
        """Characters of `text` (what the page shows) that are neither its consent dialogs'
        nor its menus'."""
        consent = {self.dialogs[i] for i, choice in enumerate(self.choices) if choice}
        dialogs = sum(self.dialog_chars[i] for i in consent)  # boxes with no choice are text
        return max(len(text.strip()) - dialogs - self.chrome_chars, 0)


def hides_page(shown: ConsentShown, text: str) -> bool:
    """Whether a consent dialog hides the page showing `text`: one is shown, and beside it
    and the menus the page shows under `HIDDEN_PAGE_CHARS` characters, or holds its article
    back. A notice beside the page hides nothing: it is left alone, and stored with it."""
    if not shown.shown():
        return False
    return shown.hidden_article or shown.beside(text) < HIDDEN_PAGE_CHARS


def consent_button(shown: ConsentShown, text: str) -> int | None:
    """The button (its index in `shown.choices`) a capture presses to see the page showing
    `text` that a consent dialog hides (`hides_page`): the first that agrees to nothing, else,
    only when there is none, the first that accepts; None when no dialog hides the page."""
    if not hides_page(shown, text):
        return None
    for wanted in ("rejected", "accepted"):
        if wanted in shown.choices:
            return shown.choices.index(wanted)
    return None


def consent_wall(shown: ConsentShown, text: str, answered: ConsentChoice | None) -> Wall | None:
    """The wall a page showing `text` is when a consent dialog still hides it (`hides_page`)
    after the capture `answered` it (or could not): a `consent_wall` failure, ours, as a
    reader who presses the button sees the page; None when no dialog hides it."""
    if not hides_page(shown, text):
        return None
    return Wall("consent_wall", consent_wall_reason(answered))


def consent_wall_reason(answered: ConsentChoice | None) -> str:
    """Why a capture that a consent dialog still hides is a `consent_wall` failure, and the
    fix."""
    tried = {
        None: "no button of it was pressed",
        "rejected": "still after its button agreeing to nothing was pressed",
        "accepted": "still after its Accept button (it had no other) was pressed",
    }[answered]
    return (
        f"a cookie-consent dialog hides the page ({tried}): what the capture read is the "
        "dialog beside the menus, not the page, so judging against it is left incomplete; "
        "capture it again (`judgegen cache-pages`) once the dialog lets it through, or import "
        "the page from a Mind2Web 2 cache (`--import-m2w2`)"
    )
