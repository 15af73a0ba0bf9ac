"""A wall served in place of a page is recognized: a bot check by its own wording, only when it
is the whole (short) text (a real page that quotes such a phrase is not taken for one); a
sign-in or consent page by where the browser was sent, only when the cited URL is not one; a
site's home page likewise, only when the cited URL is a deep link (a short link is the page it
points at, as its capture recorded it; unrecorded, one that ended on another site's home page
is not taken for that home page); a cookie-consent dialog hiding the page by what the page
shows beside it (a notice beside the page is left alone); a not-found page served with a
success status (a soft 404) by where the browser was sent (the site's error or search page),
or by its title or main heading saying so with little else on the page (a long article about
404 errors, or a page named "Error ...", is a page)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolkit.pages.walls import (
    MAX_CHALLENGE_CHARS,
    MAX_NOT_FOUND_CHARS,
    MAX_SAID_ONCE_CHARS,
    ConsentChoice,
    ConsentShown,
    NotFoundShown,
    Wall,
    bot_check,
    button_choice,
    consent_button,
    consent_wall,
    consent_wall_reason,
    hides_page,
    home_reason,
    linked_page,
    not_found_page,
    not_found_reason,
    redirect_home,
    redirect_not_found_reason,
    redirect_wall,
    says_not_found,
    served_instead,
)

CHALLENGES = {
    "cloudflare": "Just a moment...\n\nEnable JavaScript and cookies to continue",
    "cloudflare turnstile": (
        "www.example.com\nVerify you are human by completing the action below.\n"
        "www.example.com needs to review the security of your connection before proceeding."
    ),
    "cloudflare block": "Sorry, you have been blocked\nYou are unable to access example.com",
    "perimeterx": "Access to this page has been denied\nPress & Hold to confirm you are a human",
    "imperva": "Pardon Our Interruption\nAs you were browsing something about your browser",
    "google": "Our systems have detected unusual traffic from your computer network.",
    "amazon": "Enter the characters you see below\nSorry, we just need to make sure you’re not a robot.",
}


@pytest.mark.parametrize("text", CHALLENGES.values(), ids=CHALLENGES.keys())
def test_a_short_challenge_page_is_a_bot_check(text: str) -> None:
    assert bot_check(text) is not None


def test_the_phrase_is_found_across_line_breaks_case_and_curly_quotes() -> None:
    assert bot_check("WHY  HAVE\nI BEEN BLOCKED?") == "why have i been blocked?"


def test_a_real_page_quoting_a_challenge_phrase_is_not_one() -> None:
    article = "How Cloudflare works. " * 200 + "Its page says 'Sorry, you have been blocked'."
    assert len(article) > MAX_CHALLENGE_CHARS
    assert bot_check(article) is None


@pytest.mark.parametrize("text", [None, "", "The Louvre is open 9:00-18:00; Friday to 21:45."])
def test_an_ordinary_or_empty_page_is_not_a_bot_check(text: str | None) -> None:
    assert bot_check(text) is None


WALLS = {
    "linkedin authwall": (
        "https://www.linkedin.com/in/someone",
        "https://www.linkedin.com/authwall?trk=bf&sessionRedirect=x",
        "www.linkedin.com/authwall",
    ),
    "instagram login": (
        "https://www.instagram.com/p/abc/",
        "https://www.instagram.com/accounts/login/?next=/p/abc/",
        "www.instagram.com/accounts/login/",
    ),
    "private google doc": (
        "https://docs.google.com/document/d/1x/edit",
        "https://accounts.google.com/v3/signin/identifier?continue=x",
        "accounts.google.com/v3/signin/identifier",
    ),
    "google consent": (
        "https://www.google.com/maps/place/Louvre",
        "https://consent.google.com/ml?continue=x",
        "consent.google.com/ml",
    ),
    "yahoo consent": (
        "https://finance.yahoo.com/quote/AAPL",
        "https://guce.yahoo.com/consent?brandType=nonEu",
        "guce.yahoo.com/consent",
    ),
    "a php sign-in step": (
        "https://forum.example.org/thread/42",
        "https://forum.example.org/Login.php?return=42",
        "forum.example.org/Login.php",
    ),
}


@pytest.mark.parametrize(("cited", "final", "where"), WALLS.values(), ids=WALLS.keys())
def test_a_redirect_to_a_sign_in_or_consent_page_is_a_wall(
    cited: str, final: str, where: str
) -> None:
    assert redirect_wall(cited, final) == where


NOT_WALLS = {
    "no redirect": ("https://example.com/a", "https://example.com/a"),
    "no final url": ("https://example.com/a", None),
    "an ordinary redirect": ("http://example.com/a", "https://www.example.com/a/"),
    "a word that only contains login": (
        "https://example.com/a",
        "https://example.com/loginless-faq",
    ),
    "a cited sign-in page": (
        "https://accounts.google.com/signin",
        "https://accounts.google.com/v3/signin/identifier",
    ),
    "a host label that only starts with auth": (
        "https://example.com/a",
        "https://authors.example.com/a",
    ),
    "a bare host named login": ("https://example.com/a", "http://login/"),
    "a section named uas (drones)": ("https://www.faa.gov/drones", "https://www.faa.gov/uas/"),
}


@pytest.mark.parametrize(("cited", "final"), NOT_WALLS.values(), ids=NOT_WALLS.keys())
def test_other_redirects_and_cited_sign_in_pages_are_not_walls(
    cited: str, final: str | None
) -> None:
    assert redirect_wall(cited, final) is None


HOME_REDIRECTS = {
    "a removed article": (
        "https://news.example.com/news/2023/some-article",
        "https://news.example.com/",
    ),
    "to another host's root": ("http://example.com/products/widget", "https://www.example.com"),
    "to an index file": ("https://example.com/products/widget", "https://example.com/index.html"),
    "to Default.aspx": ("https://agency.gov/dept/report.aspx", "https://agency.gov/Default.aspx"),
    "to /home": ("http://127.0.0.1:8000/old-article", "http://127.0.0.1:8000/home"),
    "to a locale home": (
        "https://example.com/en-us/support/kb/123",
        "https://example.com/en-us/",
    ),
    "to a locale's index file": (
        "https://example.com/blog/post",
        "https://example.com/fr/index.php",
    ),
    "a cited page under a locale": ("https://example.com/de/produkte/x", "https://example.com/de"),
    "a page behind an index file": (
        "https://wiki.example.org/index.php/Some_Article",
        "https://wiki.example.org/",
    ),
    "a hash route to the app's root": (
        "https://app.example.com/#/reports/7",
        "https://app.example.com/#/",
    ),
    "a deep link with a query": ("https://example.com/item?id=5", "https://example.com/"),
    "to the root marked as a 404": (
        "https://example.com/news/2023/a",
        "https://example.com/?from=404",
    ),
    "to the root naming the removed path": (
        "https://example.com/news/2023/a",
        "https://example.com/?404=/news/2023/a",
    ),
    "to the root with a tracking query": (
        "https://example.com/news/2023/a",
        "https://example.com/?utm_source=redirect&utm_medium=404",
    ),
    "to an index file with a redirect query": (
        "https://example.com/news/2023/a",
        "https://example.com/index.php?redirect=%2Fnews%2F2023%2Fa",
    ),
    "to the root with an unknown query": ("https://example.com/a/b", "https://example.com/?x7=1"),
    "a hash route to the app's root with a query": (
        "https://app.example.com/#/reports/7",
        "https://app.example.com/#/?notfound=1",
    ),
    "to a country-and-language home": (
        "https://shop.example.com/us/en/p/widget-42",
        "https://shop.example.com/us/en/",
    ),
    "to a locale with a numeric region": (
        "https://example.com/es-419/ayuda/x",
        "https://example.com/es-419/",
    ),
    "a cited WordPress post id": ("https://blog.example.com/?p=123", "https://blog.example.com/"),
    "to a two-letter section's front, not the page either": (
        "https://broadcaster.example/tv/shows/some-show",
        "https://broadcaster.example/tv/",
    ),
    "an old domain's article to the new domain's root": (
        "https://old-name.example/news/2019/article",
        "https://new-name.example/",
    ),
    "an old domain's page to the new domain's root": (
        "https://old-name.example/about",
        "https://new-name.example/",
    ),
    "an old domain's numbered page, not a short link": (
        "https://old-name.example/covid19",
        "https://new-name.example/",
    ),
    "a site's own token page to its root": ("https://example.com/x7Kq2A", "https://example.com/"),
    "a dead short link to the shortener's home": ("https://bit.ly/3xYz9Q", "https://bit.ly/"),
}


def captured(cited: str, final: str | None, via: Sequence[str] = ()) -> str | None:
    """`redirect_home` as a capture applies it: with the page `cited` names, told by the
    navigations `via` (none: the browser was sent straight to `final`)."""
    return redirect_home(cited, final, linked_page(cited, final, via) if final else cited)


@pytest.mark.parametrize(("cited", "final"), HOME_REDIRECTS.values(), ids=HOME_REDIRECTS.keys())
def test_a_deep_link_sent_to_the_sites_home_page_is_a_redirect_home(cited: str, final: str) -> None:
    assert captured(cited, final) == final


NOT_HOME_REDIRECTS = {
    "no redirect": ("https://example.com/a/b", "https://example.com/a/b"),
    "no final url": ("https://example.com/a/b", None),
    "a cited home page": ("https://example.com/", "https://example.com/"),
    "a root to https and www": ("http://x.com", "https://www.x.com/"),
    "an index file to the root": ("https://example.com/index.html", "https://example.com/"),
    "a root to its locale": ("https://example.com/", "https://example.com/en/"),
    "a locale home to another": ("https://example.com/fr/", "https://example.com/en-us/"),
    "a locale index file to the locale": (
        "https://example.com/en/index.html",
        "https://example.com/en/",
    ),
    "/home to the root": ("https://example.com/home", "https://example.com/"),
    "an anchor on the home page": ("https://example.com/#top", "https://example.com/"),
    "a root with a tracking query": ("https://example.com/?utm_source=x", "https://example.com/"),
    "an article moved": ("https://example.com/news/2023/a", "https://example.com/articles/a"),
    "an article sent to its section": (
        "https://example.com/news/2023/a",
        "https://example.com/news/",
    ),
    "to a section that is not a locale": (
        "https://example.com/faq/item-5",
        "https://example.com/faq",
    ),
    "to a home page with a query (a page)": (
        "https://example.com/2023/05/a-post",
        "https://example.com/?p=123",
    ),
    "a hash route to another": ("https://app.example.com/#/old", "https://app.example.com/#/new"),
    "to an index file deeper down": (
        "https://example.com/docs/v1/intro",
        "https://example.com/docs/index.html",
    ),
    "to a WordPress page id": ("https://example.com/about-us", "https://example.com/?page_id=45"),
    "to a search for the removed page": (
        "https://example.com/2023/05/a-post",
        "https://example.com/?s=a-post",
    ),
    "to a query-routed wiki page": (
        "https://wiki.example.org/wiki/Some_Article",
        "https://wiki.example.org/index.php?title=Some_Article",
    ),
    "to a router path in the query": ("https://example.com/news/x", "https://example.com/?/news/x"),
    "a cited root with a language query": ("https://example.com/?lang=fr", "https://example.com/"),
    "a country-and-language home to the root": (
        "https://shop.example.com/us/en/",
        "https://shop.example.com/",
    ),
    "a short link to a company's home page": ("https://bit.ly/acme-site", "https://acme.example/"),
    "a tweet's link to a home page": ("https://t.co/AbCdEfGhIj", "https://www.example.com/"),
    "an opaque short link on its own host": ("https://nyti.ms/3xYz9Q", "https://www.nytimes.com/"),
}


@pytest.mark.parametrize(
    ("cited", "final"), NOT_HOME_REDIRECTS.values(), ids=NOT_HOME_REDIRECTS.keys()
)
def test_a_cited_home_page_or_a_redirect_to_another_page_is_not_a_redirect_home(
    cited: str, final: str | None
) -> None:
    assert captured(cited, final) is None


SHORT_LINKS_SENT_HOME = {
    "to an article since removed": (
        "https://bit.ly/3xYz9Q",
        ["https://bit.ly/3xYz9Q", "https://acme.example/news/2023/a"],
        "https://acme.example/",
    ),
    "through another shortener to an article since removed": (
        "https://t.co/AbCdEfGhIj",
        ["https://t.co/AbCdEfGhIj", "https://ow.ly/acme", "https://acme.example/news/2023/a"],
        "https://acme.example/",
    ),
}


@pytest.mark.parametrize(
    ("cited", "via", "final"), SHORT_LINKS_SENT_HOME.values(), ids=SHORT_LINKS_SENT_HOME.keys()
)
def test_a_short_link_to_a_deep_link_sent_home_is_a_redirect_home(
    cited: str, via: list[str], final: str
) -> None:
    assert captured(cited, final, via) == final


SHORT_LINKS_TO_HOME = {
    "straight to a home page": (
        "https://bit.ly/3xYz9Q",
        ["https://bit.ly/3xYz9Q", "http://acme.example/", "https://www.acme.example/"],
        "https://www.acme.example/en/",
    ),
    "through another shortener to a home page": (
        "https://t.co/AbCdEfGhIj",
        ["https://t.co/AbCdEfGhIj", "https://ow.ly/acme", "https://acme.example/"],
        "https://acme.example/",
    ),
}


@pytest.mark.parametrize(
    ("cited", "via", "final"), SHORT_LINKS_TO_HOME.values(), ids=SHORT_LINKS_TO_HOME.keys()
)
def test_a_short_link_to_a_home_page_is_a_cited_home_page(
    cited: str, via: list[str], final: str
) -> None:
    assert captured(cited, final, via) is None


HOME_TEXT = "Acme. Welcome! Our products, news and careers."


@pytest.mark.parametrize(
    ("cited", "via", "final"), SHORT_LINKS_SENT_HOME.values(), ids=SHORT_LINKS_SENT_HOME.keys()
)
def test_a_read_decides_a_short_link_sent_home_from_the_page_its_capture_recorded(
    cited: str, via: list[str], final: str
) -> None:
    """A store keeps `linked_page`, not the navigations: from it, a read finds the same wall."""
    linked = linked_page(cited, final, via)
    wall = served_instead(cited, final, HOME_TEXT, linked_url=linked)
    assert wall == Wall("redirect_home", home_reason(final))


@pytest.mark.parametrize(
    ("cited", "via", "final"), SHORT_LINKS_TO_HOME.values(), ids=SHORT_LINKS_TO_HOME.keys()
)
def test_a_read_serves_a_short_link_to_a_home_page_from_the_page_its_capture_recorded(
    cited: str, via: list[str], final: str
) -> None:
    linked = linked_page(cited, final, via)
    assert served_instead(cited, final, HOME_TEXT, linked_url=linked) is None


UNRECORDED_SHORT_LINKS_TO_HOME = {
    "a shortener's link": ("https://bit.ly/acme-site", "https://acme.example/"),
    "a tweet's link": ("https://t.co/AbCdEfGhIj", "https://www.example.com/"),
    "an opaque short link on its own host": ("https://nyti.ms/3xYz9Q", "https://www.nytimes.com/"),
    "through another shortener's home": ("https://bit.ly/3xYz9Q", "https://ow.ly/"),
}


@pytest.mark.parametrize(
    ("cited", "final"),
    UNRECORDED_SHORT_LINKS_TO_HOME.values(),
    ids=UNRECORDED_SHORT_LINKS_TO_HOME.keys(),
)
def test_a_short_link_to_another_sites_home_page_with_its_page_unrecorded_is_no_page(
    cited: str, final: str
) -> None:
    """Stored before the store recorded where a short link pointed, it may be an article since
    sent home: never served as the page, it fails naming the fix."""
    wall = served_instead(cited, final, HOME_TEXT, linked_url=None)
    assert wall is not None and wall.kind == "redirect_home"
    assert cited in wall.reason and final in wall.reason
    assert "judgegen cache-pages" in wall.reason


DECIDED_WITHOUT_THE_LINKED_PAGE = {
    "a deep link sent home": (
        "https://news.example.com/news/2023/some-article",
        "https://news.example.com/",
        Wall("redirect_home", home_reason("https://news.example.com/")),
    ),
    "a dead short link to the shortener's home": (
        "https://bit.ly/3xYz9Q",
        "https://bit.ly/",
        Wall("redirect_home", home_reason("https://bit.ly/")),
    ),
    "a short link to an article": (
        "https://bit.ly/3xYz9Q",
        "https://acme.example/news/2023/a",
        None,
    ),
    "a cited home page to its locale": ("https://example.com/", "https://example.com/en/", None),
    "an article moved": ("https://example.com/news/2023/a", "https://example.com/articles/a", None),
}


@pytest.mark.parametrize(
    ("cited", "final", "wall"),
    DECIDED_WITHOUT_THE_LINKED_PAGE.values(),
    ids=DECIDED_WITHOUT_THE_LINKED_PAGE.keys(),
)
def test_a_page_whose_navigations_could_not_change_the_verdict_is_decided_unrecorded(
    cited: str, final: str, wall: Wall | None
) -> None:
    """Any URL but a short link names itself, and a short link that never left its site, or
    left for a page that is no home page, is decided as a capture would."""
    assert served_instead(cited, final, HOME_TEXT, linked_url=None) == wall


@pytest.mark.parametrize(
    "label",
    [
        "Reject all",
        "REJECT ALL COOKIES",
        "Decline",
        "Use necessary cookies only",
        "Only essential",
        "Continue without accepting",
        "Don’t accept",
        "Disagree and close",
        "Alle ablehnen",
        "Nur notwendige Cookies",
        "Tout refuser",
        "Continuer sans accepter",
        "Rechazar todo",
        "Rifiuta tutto",
        "Alles weigeren",
        "Odrzuć wszystkie",
    ],
)
def test_a_button_that_agrees_to_nothing_is_told_by_its_label(label: str) -> None:
    assert button_choice(label) == "rejected"


@pytest.mark.parametrize(
    "label",
    ["Accept all", "Accept cookies", "I agree", "OK", "Alle akzeptieren", "J’accepte", "Aceptar"],
)
def test_a_button_that_agrees_is_told_by_its_label(label: str) -> None:
    assert button_choice(label) == "accepted"


@pytest.mark.parametrize(
    "label", ["Manage preferences", "Cookie settings", "More options", "Learn more", "Acceptable"]
)
def test_a_button_that_answers_nothing_is_no_choice(label: str) -> None:
    assert button_choice(label) is None


def test_a_consent_tools_own_button_answers_what_the_tool_says_whatever_its_label() -> None:
    assert button_choice("Nee, bedankt", "rejected") == "rejected"


MENUS = "Home News Sport Weather " * 10  # 240 characters of menus beside the dialog
BANNER = "We use cookies to improve your experience. Reject all Accept all"
WALLED = ConsentShown(
    choices=("accepted", None, "rejected"),
    dialogs=(0, 0, 0),
    dialog_chars=(len(BANNER),),
    chrome_chars=len(MENUS),
)


def test_a_dialog_beside_nothing_but_the_menus_hides_the_page_and_is_refused() -> None:
    text = MENUS + BANNER
    assert hides_page(WALLED, text)
    assert consent_button(WALLED, text) == 2


def test_a_dialog_offering_no_refusal_that_hides_the_page_is_accepted() -> None:
    shown = ConsentShown(("accepted",), (0,), (len(BANNER),), len(MENUS))
    assert consent_button(shown, MENUS + BANNER) == 0


def test_a_dialog_holding_an_article_back_hides_the_page_whatever_else_it_shows() -> None:
    shown = ConsentShown(("accepted",), (0,), (len(BANNER),), 0, hidden_article=True)
    assert hides_page(shown, "Section " * 500 + BANNER)


def test_a_notice_beside_the_page_hides_nothing_and_is_left_alone() -> None:
    text = MENUS + "The dam was finished in 1936. " * 30 + BANNER
    assert not hides_page(WALLED, text)
    assert consent_button(WALLED, text) is None
    assert consent_wall(WALLED, text, None) is None


def test_a_box_with_no_consent_choice_is_no_dialog() -> None:
    """A footer's "Cookie settings" link beside a short page: nothing to answer or flag."""
    shown = ConsentShown((None,), (0,), (15,), 0)
    assert not shown.shown()
    assert consent_wall(shown, "Contact us. Cookie settings", None) is None


@pytest.mark.parametrize("answered", [None, "rejected", "accepted"])
def test_a_dialog_still_hiding_the_page_is_a_consent_wall_saying_what_was_pressed(
    answered: ConsentChoice | None,
) -> None:
    wall = consent_wall(WALLED, MENUS + BANNER, answered)
    assert wall == Wall("consent_wall", consent_wall_reason(answered))
    assert "cookie-consent dialog hides the page" in wall.reason


SENT_TO_ERROR_PAGES = {
    "a 404 path": ("https://shop.example.com/items/7", "https://shop.example.com/404"),
    "a 404 file under a locale": (
        "https://www.example.com/en/news/2023/a",
        "https://www.example.com/en/404.html",
    ),
    "a not-found path with a trailing slash": (
        "https://example.com/guides/setup",
        "https://example.com/page-not-found/",
    ),
    "an error folder": ("https://example.com/reports/2022", "https://example.com/errors/404"),
    "asp.net's error page naming the path": (
        "https://example.gov/Reports/Annual.aspx",
        "https://example.gov/Error.aspx?aspxerrorpath=/Reports/Annual.aspx",
    ),
    "an error page with a code": ("https://example.com/a/b", "https://example.com/error?code=404"),
    "a single-page app's not-found route": (
        "https://app.example.com/#/reports/7",
        "https://app.example.com/#/not-found",
    ),
}


@pytest.mark.parametrize(("cited", "final"), SENT_TO_ERROR_PAGES.values(), ids=SENT_TO_ERROR_PAGES)
def test_a_page_sent_to_the_sites_error_page_is_not_found(cited: str, final: str) -> None:
    wall = served_instead(cited, final, "We looked everywhere.", linked_url=cited)
    assert wall == Wall("not_found", redirect_not_found_reason(final))
    assert "soft 404" in wall.reason


SENT_TO_SEARCH_PAGES = {
    "a search for the page's words": (
        "https://shop.example.com/products/widget-9",
        "https://shop.example.com/search?q=widget+9",
    ),
    "a documentation search": (
        "https://docs.example.org/3/library/gone.html",
        "https://docs.example.org/3/search.html?q=gone",
    ),
    "wordpress's search on the home page": (
        "https://blog.example.com/2021/05/old-post/",
        "https://blog.example.com/?s=old-post",
    ),
    "a german search": (
        "https://www.example.de/produkte/alt",
        "https://www.example.de/suche?query=alt",
    ),
    "the site map": ("https://example.com/about/team/jane", "https://example.com/sitemap"),
}


@pytest.mark.parametrize(
    ("cited", "final"), SENT_TO_SEARCH_PAGES.values(), ids=SENT_TO_SEARCH_PAGES
)
def test_a_deep_link_sent_to_a_search_or_site_map_page_is_not_found(cited: str, final: str) -> None:
    wall = served_instead(cited, final, "Results: Widget 8, Widget 10", linked_url=cited)
    assert wall == Wall("not_found", redirect_not_found_reason(final))


NOT_SENT_TO_NOT_FOUND = {
    "a cited error page": ("https://example.com/404", "https://example.com/404/"),
    "an article on the year 404 (a MediaWiki redirect)": (
        "https://en.wikipedia.org/wiki/AD_404",
        "https://en.wikipedia.org/wiki/404",
    ),
    "a documentation page named error": (
        "https://docs.example.org/api/errors",
        "https://docs.example.org/api/error",
    ),
    "a section named errors": ("https://api.example.com/codes", "https://api.example.com/errors"),
    "a section's landing page named search": (
        "https://developers.example.com/webmasters",
        "https://developers.example.com/search",
    ),
    "a cited search page": (
        "https://www.example.com/search?q=dams",
        "https://www.example.com/search?q=dams&hl=en",
    ),
    "a cited home page search": (
        "https://blog.example.com/?s=dams",
        "https://blog.example.com/search/dams/",
    ),
    "drupal's page address": ("https://example.org/old-node", "https://example.org/?q=node/7"),
    "a word that only contains search": (
        "https://example.org/a",
        "https://example.org/research?q=1",
    ),
    "an article moved": ("https://example.com/news/a", "https://example.com/articles/a"),
}


@pytest.mark.parametrize(
    ("cited", "final"), NOT_SENT_TO_NOT_FOUND.values(), ids=NOT_SENT_TO_NOT_FOUND
)
def test_a_cited_error_or_search_page_or_a_page_named_like_one_is_no_soft_404(
    cited: str, final: str
) -> None:
    assert served_instead(cited, final, "A page.", linked_url=cited) is None


def test_a_short_link_to_a_search_is_a_cited_search_page() -> None:
    cited, final = "https://bit.ly/3xYz9Q", "https://www.example.com/search?q=dams"
    assert served_instead(cited, final, "Results", linked_url=final) is None
    article = "https://www.example.com/dams/hoover"  # one to an article sent to a search is not
    wall = served_instead(cited, final, "Results", linked_url=article)
    assert wall is not None and wall.kind == "not_found"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Page not found | Example News", "Page not found"),
        ("Oops! That page can’t be found. – Example", "That page can’t be found"),
        ("Sorry, we couldn't find that page", "Sorry, we couldn't find that page"),
        ("The requested URL was not found on this server.", None),
        ("404", "404"),
        ("Error 404 - Example", "Error 404"),
        ("404 - Seite nicht gefunden", "Seite nicht gefunden"),
        ("Diese Seite existiert nicht", "Diese Seite existiert nicht"),
        ("Page introuvable", "Page introuvable"),
        ("Página no encontrada", "Página no encontrada"),
        ("Pagina non trovata", "Pagina non trovata"),
        ("Nie znaleziono strony", "Nie znaleziono strony"),
        ("Страница не найдена", "Страница не найдена"),
        ("ページが見つかりません | Example", "ページが見つかりません"),
        ("页面不存在", "页面不存在"),
    ],
)
def test_a_title_or_heading_that_is_a_not_found_message_says_so(
    text: str, said: str | None
) -> None:
    assert says_not_found(text) == (said or text.rstrip("."))


@pytest.mark.parametrize(
    "text",
    [
        "Error Correction Codes",
        "Error",
        "Page not found error when deploying · Issue #12 · acme/site",
        "How to fix a 404 Not Found error",
        "Route 404 - Roads of Ohio",
        "Dog Not Found",
        "Can't find what you're looking for? Contact us",
        "",
    ],
)
def test_a_title_or_heading_that_only_speaks_of_errors_or_not_found_says_nothing(
    text: str,
) -> None:
    assert says_not_found(text) is None


GONE = "https://news.example.com/2023/05/story"
NOT_FOUND_PAGES = {
    "english, in title and heading": NotFoundShown(
        "Page not found | Example News", ("Sorry, we couldn't find that page",), 180
    ),
    "german, in title and heading": NotFoundShown(
        "Seite nicht gefunden – Beispiel", ("Diese Seite existiert nicht",), 240
    ),
    "a heading alone (an app keeping its title)": NotFoundShown("Example App", ("404",), 90),
    "a title alone": NotFoundShown("Page introuvable | Exemple", ("Exemple",), 300),
    "both, beside a list of popular articles": NotFoundShown(
        "404 Not Found", ("Page not found", "Popular articles"), MAX_NOT_FOUND_CHARS
    ),
}


@pytest.mark.parametrize("shown", NOT_FOUND_PAGES.values(), ids=NOT_FOUND_PAGES)
def test_a_short_page_whose_title_or_heading_says_not_found_is_a_soft_404(
    shown: NotFoundShown,
) -> None:
    wall = not_found_page(GONE, shown)
    assert wall is not None and wall.kind == "not_found"
    assert "soft 404" in wall.reason


NOT_NOT_FOUND_PAGES = {
    "a long article about http errors": NotFoundShown(
        "404 Not Found: what it means | Web Guide", ("404 Not Found", "What causes it"), 6000
    ),
    "a short page named error": NotFoundShown(
        "Error Correction Codes | Coding Notes", ("Error Correction Codes",), 400
    ),
    "a bug report about a not-found error": NotFoundShown(
        "Page not found error when deploying · Issue #12 · acme/site",
        ("Page not found error when deploying #12",),
        300,
    ),
    "a bug report titled not found, beside its discussion": NotFoundShown(
        "Page not found · Issue #12 · acme/site", ("Page not found #12",), MAX_SAID_ONCE_CHARS + 1
    ),
    "an ordinary page": NotFoundShown("Hoover Dam", ("Hoover Dam", "History"), 300),
    "a page showing nothing that tells": NotFoundShown(),
}


@pytest.mark.parametrize("shown", NOT_NOT_FOUND_PAGES.values(), ids=NOT_NOT_FOUND_PAGES)
def test_a_page_that_does_not_say_it_was_not_found_with_little_else_is_a_page(
    shown: NotFoundShown,
) -> None:
    assert not_found_page(GONE, shown) is None


def test_a_page_whose_url_speaks_of_not_found_pages_is_a_page_though_titled_so() -> None:
    """MDN's article on HTTP 404 is short and titled "404 Not Found"."""
    shown = NotFoundShown("404 Not Found - HTTP | MDN", ("404 Not Found",), 1400)
    assert (
        not_found_page("https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/404", shown)
        is None
    )
    assert not_found_page("https://example.com/fix-page-not-found", shown) is None
    assert not_found_page(GONE, shown) == Wall("not_found", not_found_reason("404 Not Found"))


def test_the_reason_says_what_the_page_said() -> None:
    wall = not_found_page(GONE, NOT_FOUND_PAGES["german, in title and heading"])
    assert wall is not None and "'Seite nicht gefunden'" in wall.reason
