"""The live-page rules' text counterparts (`toolkit.pages.stored_walls`): which stored texts of
records captured before a rule are a soft 404 or a consent dialog, and which stay pages.

The texts are what an older capture stored for the fixture pages of `test_page_capture`
(`document.body.innerText`: the menus' links on one line, then the page's lines)."""

from __future__ import annotations

import pytest

from toolkit.pages.store import PAGE_RECORD_VERSION
from toolkit.pages.stored_walls import (
    CONSENT_RULE_VERSION,
    NOT_FOUND_RULE_VERSION,
    needs_check,
    stored_wall,
    text_wall,
)

MENUS = " ".join(f"Section {i}" for i in range(12))
GONE = "https://news.example.com/2023/05/story"
SOFT_404 = (
    f"{MENUS}\nSorry, we couldn't find that page\n\nIt may have been moved or deleted. Try the"
    " search above, or start again from the home page."
)  # SOFT_404_HTML as an older capture stored it
GERMAN_SOFT_404 = (
    f"{MENUS}\nDiese Seite existiert nicht\n\nVielleicht wurde sie verschoben oder gelöscht."
    " Nutzen Sie die Suche oder gehen Sie zur Startseite."
)
CONSENT_WALL = (
    f"{MENUS}\nWe use cookies to improve your experience and to show personalised ads. "
    "Reject all Accept all"
)  # CONSENT_STUCK_HTML: the article hidden, the dialog beside the menus
CONSENT_TOOL_WALL = (
    f"{MENUS}\nWij en onze partners gebruiken cookies.\nJa, prima\nNee, bedankt\nAccept all"
)
ARTICLE = " ".join(
    f"The dam was finished in 1936. The reservoir behind it holds {n} cubic kilometres."
    for n in range(10)
)
OLD = 2  # a record an older judgegen captured, before either rule


@pytest.mark.parametrize("text", [SOFT_404, GERMAN_SOFT_404], ids=["english", "german"])
@pytest.mark.parametrize("version", [OLD, CONSENT_RULE_VERSION])
def test_a_short_stored_text_with_a_line_saying_not_found_is_a_soft_404_before_the_rule(
    text: str, version: int
) -> None:
    wall = stored_wall(GONE, text, version)
    assert wall is not None and wall.kind == "not_found"
    assert "soft 404" in wall.reason
    assert f"page record version {version}" in wall.reason
    assert "judgegen cache-pages --recheck --refresh" in wall.reason


@pytest.mark.parametrize("text", [CONSENT_WALL, CONSENT_TOOL_WALL], ids=["own", "tool"])
def test_a_consent_dialog_beside_only_the_menus_is_a_consent_wall_before_the_rule(
    text: str,
) -> None:
    wall = stored_wall(GONE, text, OLD)
    assert wall is not None and wall.kind == "consent_wall"
    assert "cookie-consent dialog" in wall.reason


def test_a_record_captured_with_the_consent_rule_has_no_consent_wall_told_from_its_text() -> None:
    """Its capture answered the dialog and read the live page's boxes: they decided."""
    assert stored_wall(GONE, CONSENT_WALL, CONSENT_RULE_VERSION) is None


@pytest.mark.parametrize("text", [SOFT_404, CONSENT_WALL])
def test_a_record_of_this_version_is_never_tested(text: str) -> None:
    assert PAGE_RECORD_VERSION >= NOT_FOUND_RULE_VERSION
    assert not needs_check(PAGE_RECORD_VERSION)
    assert stored_wall(GONE, text, PAGE_RECORD_VERSION) is None


def test_an_imported_page_is_tested_by_both_rules_whatever_its_version_before_the_last() -> None:
    """No capture of ours answered a dialog on an imported page."""
    wall = stored_wall(GONE, CONSENT_WALL, CONSENT_RULE_VERSION, imported=True)
    assert wall is not None and wall.kind == "consent_wall"


MUST_STAY_PAGES = {
    "MDN's article titled 404 Not Found": (
        "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/404",
        f"{MENUS}\n404 Not Found\nThe HTTP 404 Not Found client error response status code"
        " indicates that the server cannot find the requested resource.",
    ),
    "a short page named Error Correction Codes": (
        "https://notes.example.com/coding/ecc",
        f"{MENUS}\nError Correction Codes\nReed-Solomon codes correct burst errors on CDs and"
        " QR codes.",
    ),
    "the article on the year 404": (
        "https://en.wikipedia.org/wiki/404",
        "404\nFrom Wikipedia, the free encyclopedia\nYear 404 (CDIV) was a leap year starting"
        " on Saturday of the Julian calendar.",
    ),
    "a long article about http errors": (
        "https://guide.example.com/http/status",
        "404 Not Found\n" + "Status 410: a server answers it when the resource is gone. " * 20,
    ),
    "an article with a cookie notice beside it": (
        GONE,
        f"{MENUS}\n{ARTICLE}\nThis site uses cookies. Accept",
    ),
    "a cookie policy": (
        "https://news.example.com/cookie-policy",
        "Cookie policy\nWe use cookies to remember your choices. Accept",
    ),
    "a short page that says nothing of either": (GONE, f"{MENUS}\nThe dam was finished."),
}


@pytest.mark.parametrize(("url", "text"), MUST_STAY_PAGES.values(), ids=MUST_STAY_PAGES)
def test_a_page_stays_a_page_under_the_text_rules(url: str, text: str) -> None:
    assert stored_wall(url, text, OLD) is None
    assert text_wall(url, text) is None


def test_a_text_too_long_for_either_rule_is_the_page_told_by_its_size() -> None:
    assert stored_wall(GONE, SOFT_404 + "\nMore. " * 2000, OLD) is None
