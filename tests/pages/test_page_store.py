"""The page store: round trips, failure records, lookup by variant URLs, the PageSource seam."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures.sqlite_faults import FailingConnection, damage
from toolkit import Evaluator, InfraError, ScriptedBackend, VerifyRequest
from toolkit.errors import PageStoreError
from toolkit.pages import PageRecord, PageStore
from toolkit.pages.store import NOTHING_TO_JUDGE, PAGE_RECORD_VERSION, SCHEMA_VERSION
from toolkit.pages.walls import MAX_CHALLENGE_CHARS
from toolkit.util.hashing import sha256_bytes

JPEG = b"\xff\xd8\xff\xe0fake-jpeg"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PageStore]:
    with PageStore(tmp_path / "pages") as page_store:
        yield page_store


def test_web_page_round_trips_text_screenshot_and_details(store: PageStore) -> None:
    store.put(PageRecord.web("https://Example.com/a#x", "Hello page", JPEG, http_status=200))
    record = store.lookup("https://example.com/a")
    assert record is not None
    assert (record.status, record.kind, record.http_status) == ("ok", "web", 200)
    assert record.text == "Hello page"
    assert record.screenshot == JPEG
    assert record.content_hash is not None and record.content_hash.startswith("sha256:")
    assert record.version == PAGE_RECORD_VERSION


def test_get_returns_text_and_screenshot_returns_base64_jpeg(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "Hello page", JPEG))
    assert store.get("https://example.com/a") == "Hello page"
    assert base64.b64decode(store.screenshot("https://example.com/a") or "") == JPEG


def test_pdf_round_trips_bytes_and_text(store: PageStore, make_pdf: Callable[[str], bytes]) -> None:
    data = make_pdf("Annual report")
    store.put(PageRecord.pdf_document("https://example.com/r.pdf", data, "Annual report"))
    assert store.get("https://example.com/r.pdf") == "Annual report"
    assert store.pdf("https://example.com/r.pdf") == data
    assert store.screenshot("https://example.com/r.pdf") is None


@pytest.mark.parametrize("text", ["", " \n\t "], ids=["empty", "blank"])
def test_a_stored_page_with_nothing_to_judge_counts_as_missing(
    store: PageStore, make_pdf: Callable[[str], bytes], text: str
) -> None:
    # as an older judgegen stored a scanned PDF, or a blank render it could not draw
    store.put(PageRecord.pdf_document("https://example.com/scan.pdf", make_pdf(""), text))
    store.put(PageRecord.web("https://example.com/blank", text, None))
    for url in ("https://example.com/scan.pdf", "https://example.com/blank"):
        assert store.get(url) is None and store.text_hash(url) is None
        assert not store.has_page(url)  # `cache-pages` captures it again
        record = store.lookup(url)
        assert record is not None and record.status == "failed"
        assert record.error == NOTHING_TO_JUDGE
    assert {r.error_kind for r in store.records("failed")} == {"pdf", "empty"}
    assert len(store.records(raw=True)) == 2  # what was stored is still there to inspect
    assert store.counts() == {"ok": 0, "failed": 2, "not_served": 2}


DEEP = "https://news.example.com/2023/05/story"
NOT_FOUND_TEXT = "Example News\nPage not found\nSorry, we couldn't find that page."
HOME_TEXT = "Example News. Top stories today: markets rally, and the weather turns cold."
SHORT = "https://bit.ly/3xYz9Q"
# pages an older judgegen stored as the cited page (with the store's API, as it did): the site
# had sent the browser to its home page, to sign in, or served a bot check (as Mind2Web 2's
# cache may hold one, with no final URL); or a short link had, to another site's home page,
# stored without where it pointed (maybe an article since sent home)
STORED_BEFORE_THE_RULES = {
    "redirect_home": (
        PageRecord.web(DEEP, HOME_TEXT, JPEG, final_url="https://news.example.com/?from=404"),
        "redirected to the site's home page https://news.example.com/?from=404",
    ),
    "sign-in": (
        PageRecord.web(
            "https://www.linkedin.com/in/someone",
            "Sign in. New to LinkedIn? Join now",
            JPEG,
            final_url="https://www.linkedin.com/authwall?trk=x",
        ),
        "sign-in or consent page (www.linkedin.com/authwall)",
    ),
    "bot check": (
        PageRecord.web(
            "https://shop.example.com/item/7",
            "Just a moment...\nEnable JavaScript and cookies to continue",
            JPEG,
            origin="m2w2",
        ),
        "bot check instead of the page",
    ),
    "short link": (
        PageRecord.web(SHORT, HOME_TEXT, JPEG, final_url="https://news.example.com/"),
        "stored before the page store recorded where a short link pointed",
    ),
    "error page": (
        PageRecord.web(DEEP, NOT_FOUND_TEXT, JPEG, final_url="https://news.example.com/en/404"),
        "redirected to https://news.example.com/en/404, the site's error, search or site map",
    ),
    "search page": (
        PageRecord.web(
            "https://shop.example.com/products/widget-9",
            "Search results for widget 9: Widget 8, Widget 10",
            JPEG,
            final_url="https://shop.example.com/search?q=widget+9",
        ),
        "redirected to https://shop.example.com/search?q=widget+9",
    ),
}
KINDS = {
    "redirect_home": "redirect_home",
    "sign-in": "blocked",
    "bot check": "blocked",
    "short link": "redirect_home",
    "error page": "not_found",
    "search page": "not_found",
}


@pytest.mark.parametrize("case", STORED_BEFORE_THE_RULES)
def test_a_wall_stored_as_the_page_before_the_rules_reads_as_missing(
    tmp_path: Path, case: str
) -> None:
    stored, _ = STORED_BEFORE_THE_RULES[case]
    with PageStore(tmp_path / "pages") as writer:
        writer.put(stored)
    with PageStore(tmp_path / "pages", readonly=True) as store:  # as a run reads it
        url = stored.requested_url
        assert store.get(url) is None and store.stored_page(url) is None
        assert store.screenshot(url) is None
        assert (store.text_hash(url), store.screenshot_hash(url)) == (None, None)
        assert not store.has_page(url)  # `cache-pages` captures it again


@pytest.mark.parametrize("case", STORED_BEFORE_THE_RULES)
def test_a_wall_stored_as_the_page_is_looked_up_as_the_failure_a_capture_records_now(
    store: PageStore, case: str
) -> None:
    stored, reason = STORED_BEFORE_THE_RULES[case]
    store.put(stored)
    record = store.lookup(stored.requested_url)
    assert record is not None
    assert (record.status, record.error_kind) == ("failed", KINDS[case])
    assert reason in (record.error or "")
    assert (record.text, record.screenshot, record.final_url) == (None, None, stored.final_url)
    assert store.records(raw=True)[0].text == stored.text  # what was stored, to inspect


@pytest.mark.parametrize("case", STORED_BEFORE_THE_RULES)
def test_counts_count_a_wall_stored_as_the_page_as_a_failure_not_served(
    store: PageStore, case: str
) -> None:
    store.put(STORED_BEFORE_THE_RULES[case][0])
    store.put(PageRecord.web("https://example.com/a", "A page", JPEG))
    assert store.counts() == {"ok": 1, "failed": 1, "not_served": 1}


@pytest.mark.parametrize("case", STORED_BEFORE_THE_RULES)
def test_records_list_a_wall_stored_as_the_page_as_the_failure_lookup_gives(
    store: PageStore, case: str
) -> None:
    stored, _ = STORED_BEFORE_THE_RULES[case]
    store.put(stored)
    store.put(PageRecord.web("https://example.com/a", "A page", JPEG))
    assert [r.url for r in store.records("ok")] == ["https://example.com/a"]
    [failed] = store.records("failed")
    looked_up = store.lookup(stored.requested_url)
    assert looked_up is not None
    assert (failed.url, failed.error_kind, failed.error) == (
        looked_up.url,
        KINDS[case],
        looked_up.error,
    )
    assert [r.status for r in store.records(raw=True)] == ["ok", "ok"]  # as stored


def test_a_short_link_is_served_as_the_home_page_its_capture_recorded_it_pointed_at(
    tmp_path: Path,
) -> None:
    with PageStore(tmp_path / "pages") as writer:
        home = "https://news.example.com/"
        writer.put(PageRecord.web(SHORT, HOME_TEXT, JPEG, final_url=home, linked_url=home))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert store.get(SHORT) == HOME_TEXT and store.has_page(SHORT)
        assert store.counts() == {"ok": 1, "failed": 0, "not_served": 0}


def test_a_short_link_whose_capture_recorded_an_article_sent_home_reads_as_missing(
    tmp_path: Path,
) -> None:
    """Stored by a capture that did not apply the rule (or by any path that stored it), the
    home page is no more the page than it was when captured."""
    home = "https://news.example.com/"
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web(SHORT, HOME_TEXT, JPEG, final_url=home, linked_url=DEEP))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert store.get(SHORT) is None and not store.has_page(SHORT)
        assert store.text_hash(SHORT) is None
        record = store.lookup(SHORT)
        assert record is not None
        assert (record.status, record.error_kind) == ("failed", "redirect_home")
        assert f"redirected to the site's home page {home}" in (record.error or "")
        assert record.linked_url == DEEP


def test_a_page_of_this_version_that_says_not_found_is_served_as_its_capture_decided(
    store: PageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its capture read its title and headings, which tell a soft 404, and found it a page:
    its text is not tested again, nor at any read (a read of a current record costs none)."""

    def tested(*args: object, **kwargs: object) -> None:
        raise AssertionError("a current record's text was tested")

    monkeypatch.setattr("toolkit.pages.store.stored_wall", tested)
    store.put(PageRecord.web(DEEP, NOT_FOUND_TEXT, JPEG, final_url=DEEP))
    assert store.get(DEEP) == NOT_FOUND_TEXT and store.has_page(DEEP)
    assert store.text_hash(DEEP) is not None
    assert store.recheck().refused == []


OLD_CONSENT_TEXT = (
    "Home News Sport Weather\nWe use cookies to improve your experience and to show "
    "personalised ads. Reject all Accept all"
)  # an older capture's text of a page a cookie-consent dialog hid


def test_a_soft_404_captured_before_the_rule_reads_as_missing(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web(DEEP, NOT_FOUND_TEXT, JPEG, final_url=DEEP, version=3))
    with PageStore(tmp_path / "pages", readonly=True) as store:  # as a run reads it
        assert store.get(DEEP) is None and store.stored_page(DEEP) is None
        assert (store.text_hash(DEEP), store.screenshot_hash(DEEP)) == (None, None)
        assert not store.has_page(DEEP)  # `cache-pages` captures it again
        record = store.lookup(DEEP)
        assert record is not None and (record.status, record.error_kind) == ("failed", "not_found")
        assert "saying 'Page not found'" in (record.error or "")
        assert "page record version 3" in (record.error or "")
        assert store.counts() == {"ok": 0, "failed": 1, "not_served": 1}


def test_a_consent_banner_captured_before_the_rule_is_our_failure_not_the_page(
    tmp_path: Path,
) -> None:
    """A capture today answers the dialog and stores the page behind it: judging against the
    banner, or without the page, is left incomplete (`InfraError`), never scored."""
    url = "https://news.example.com/2023/05/dams"
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web(url, OLD_CONSENT_TEXT, JPEG, version=2))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        for read in (store.get, store.stored_page, store.screenshot, store.text_hash):
            with pytest.raises(InfraError, match="cookie-consent dialog"):
                read(url)
        assert not store.has_page(url)
        record = store.lookup(url)
        assert record is not None and record.error_kind == "consent_wall"


def test_a_capture_replaces_a_banner_stored_before_the_rule_even_with_a_failure(
    store: PageStore,
) -> None:
    url = "https://news.example.com/2023/05/dams"
    store.put(PageRecord.web(url, OLD_CONSENT_TEXT, JPEG, version=2))
    assert store.put(PageRecord.failure(url, "http", "HTTP 404 Not Found"))
    assert [r.status for r in store.records(raw=True)] == ["failed"]


def test_recheck_lists_the_stored_pages_reads_refuse_and_counts_those_only_their_text_passed(
    store: PageStore,
) -> None:
    dams = "https://news.example.com/2023/05/dams"
    store.put(PageRecord.web(DEEP, NOT_FOUND_TEXT, JPEG, version=2))
    store.put(PageRecord.web(dams, OLD_CONSENT_TEXT, JPEG, version=2))
    store.put(PageRecord.web("https://example.com/old", HOME_TEXT, JPEG, version=2))
    store.put(PageRecord.web("https://example.com/new", NOT_FOUND_TEXT, JPEG))
    found = store.recheck()
    assert [(r.url, r.error_kind) for r in found.refused] == [
        (DEEP, "not_found"),
        (dams, "consent_wall"),
    ]
    assert all(r.version == 2 and r.text is None for r in found.refused)
    assert found.unchecked == 1  # the old page its text passed


def test_counts_do_not_count_a_long_page_quoting_a_bot_check_as_a_wall(store: PageStore) -> None:
    text = "How bot checks work. " * 200 + "Cloudflare: enable JavaScript and cookies to continue"
    store.put(PageRecord.web("https://blog.example.com/bots", text, None))
    assert store.counts() == {"ok": 1, "failed": 0, "not_served": 0}


@pytest.mark.parametrize(
    ("url", "final_url"),
    [
        ("https://news.example.com/index.html", "https://news.example.com/"),  # a home page
        ("https://news.example.com/old-story", "https://news.example.com/2023/new-story"),
        ("https://news.example.com/2023/story", "https://news.example.com/2023/story"),
        ("https://news.example.com/?p=123", None),
    ],
)
def test_a_page_stored_where_a_capture_ends_now_is_still_served(
    store: PageStore, url: str, final_url: str | None
) -> None:
    store.put(PageRecord.web(url, HOME_TEXT, JPEG, final_url=final_url))
    assert store.get(url) == HOME_TEXT and store.has_page(url)


def test_a_bot_check_in_letters_of_several_bytes_is_told_without_reading_its_text(
    store: PageStore,
) -> None:
    """Its size in bytes is over `MAX_CHALLENGE_CHARS`, its length in characters is not."""
    text = "Vérification: enable JavaScript and cookies to continue. " + "é" * 2000
    assert len(text) <= MAX_CHALLENGE_CHARS < len(text.encode())
    store.put(PageRecord.web("https://shop.example.com/item/8", text, JPEG))
    assert store.text_hash("https://shop.example.com/item/8") is None
    assert store.screenshot("https://shop.example.com/item/8") is None


def test_a_long_page_quoting_a_bot_checks_words_is_served(store: PageStore) -> None:
    text = (
        "How bot checks work. " * 200 + "Cloudflare says: enable JavaScript and cookies to continue"
    )
    store.put(PageRecord.web("https://blog.example.com/bots", text, JPEG))
    assert store.text_hash("https://blog.example.com/bots") is not None
    assert store.get("https://blog.example.com/bots") == text


def test_a_failure_replaces_a_home_page_stored_as_the_page(store: PageStore) -> None:
    stored, _ = STORED_BEFORE_THE_RULES["redirect_home"]
    store.put(stored)
    failure = PageRecord.failure(DEEP, "http", "HTTP 404", http_status=404)
    assert store.put(failure) is True  # the stored page is known wrong: nothing to keep
    record = store.lookup(DEEP)
    assert record is not None
    assert (record.error_kind, record.error, record.attempts) == ("http", "HTTP 404", 1)
    assert store.counts() == {"ok": 0, "failed": 1, "not_served": 0}


def test_a_capture_of_the_page_replaces_a_wall_stored_under_another_spelling(
    store: PageStore,
) -> None:
    stored, _ = STORED_BEFORE_THE_RULES["redirect_home"]
    store.put(stored)
    store.put(PageRecord.web("http://news.example.com/2023/05/story/", "The story", None))
    assert store.get(DEEP) == "The story"
    assert store.counts() == {"ok": 1, "failed": 0, "not_served": 0}


async def test_the_evaluator_lists_a_wall_stored_as_the_page_among_missing_sources(
    store: PageStore,
) -> None:
    stored, _ = STORED_BEFORE_THE_RULES["redirect_home"]
    store.put(stored)
    seen: list[VerifyRequest] = []
    ev = Evaluator.create(
        task_id="t",
        task_description="d",
        answer="a",
        backend=ScriptedBackend(verify=lambda request: seen.append(request) or True),
        pages=store,
    )
    leaf = ev.add_leaf(id="story", desc="the story", critical=False)
    await ev.verify(claim="Markets rallied", node=leaf, sources=DEEP)
    assert [request.page_texts for request in seen] == [[None]]
    assert ev.missing_sources == [DEEP]


def test_a_page_without_text_is_judged_by_its_screenshot(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/chart", "", JPEG))
    assert store.get("https://example.com/chart") == ""
    assert base64.b64decode(store.screenshot("https://example.com/chart") or "") == JPEG
    assert store.has_page("https://example.com/chart")


def test_failure_is_not_returned_as_page_text(store: PageStore) -> None:
    store.put(PageRecord.failure("https://example.com/gone", "http", "HTTP 404", http_status=404))
    assert store.get("https://example.com/gone") is None
    assert store.screenshot("https://example.com/gone") is None


def test_failure_is_visible_through_lookup_with_its_reason(store: PageStore) -> None:
    store.put(PageRecord.failure("https://example.com/slow", "timeout", "no page within 3s"))
    record = store.lookup("https://example.com/slow")
    assert record is not None
    assert (record.status, record.error_kind, record.error) == (
        "failed",
        "timeout",
        "no page within 3s",
    )
    assert record.text is None


def test_missing_url_gives_none_everywhere(store: PageStore) -> None:
    assert store.get("https://example.com/never") is None
    assert store.lookup("https://example.com/never") is None


def test_failure_never_overwrites_a_stored_page(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "Good copy", JPEG))
    written = store.put(PageRecord.failure("https://example.com/a", "timeout", "slow today"))
    assert written is False
    assert store.get("https://example.com/a") == "Good copy"


def test_repeated_failures_count_attempts(store: PageStore) -> None:
    for _ in range(3):
        store.put(PageRecord.failure("https://example.com/x", "network", "refused"))
    record = store.lookup("https://example.com/x")
    assert record is not None and record.attempts == 3


def test_page_replaces_an_earlier_failure(store: PageStore) -> None:
    store.put(PageRecord.failure("https://example.com/x", "network", "refused"))
    store.put(PageRecord.web("https://example.com/x", "Back online", None))
    assert store.get("https://example.com/x") == "Back online"


@pytest.mark.parametrize(
    "variant",
    [
        "<https://EXAMPLE.com/caf%C3%A9/page#top>.",
        "http://www.example.com/café/page/",
        "https://example.com/café/page?utm_source=chatgpt.com",
    ],
)
def test_lookup_finds_page_by_surface_variants(store: PageStore, variant: str) -> None:
    store.put(PageRecord.web("https://example.com/café/page", "Menu", None))
    assert store.get(variant) == "Menu"


WWW = "https://www.example.com/a"
PLAIN = "http://example.com/a/"  # the same page (`normalize_url`), spelled otherwise


def test_a_failure_never_hides_a_page_stored_under_another_spelling(store: PageStore) -> None:
    store.put(PageRecord.failure(PLAIN, "timeout", "slow today"))
    store.put(PageRecord.web(WWW, "Good copy", JPEG))
    assert store.get(PLAIN) == "Good copy"
    assert base64.b64decode(store.screenshot(PLAIN) or "") == JPEG
    page = store.stored_page(PLAIN)
    assert page is not None and page.text == "Good copy"
    assert store.has_page(PLAIN)


def test_a_read_only_store_serves_a_page_stored_under_another_spelling_over_a_failure(
    tmp_path: Path,
) -> None:
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.failure(PLAIN, "browser", "crashed"))
        writer.put(PageRecord.web(WWW, "Good copy", None))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert store.get(PLAIN) == "Good copy"


def test_a_page_stored_under_this_spelling_wins_over_another_spellings(store: PageStore) -> None:
    store.put(PageRecord.web(WWW, "www copy", None))
    store.put(PageRecord.web(PLAIN, "plain copy", None))
    assert (store.get(WWW), store.get(PLAIN)) == ("www copy", "plain copy")


def test_a_failure_is_served_when_no_spelling_of_the_page_is_stored(store: PageStore) -> None:
    store.put(PageRecord.failure(WWW, "http", "HTTP 404"))
    store.put(PageRecord.failure(PLAIN, "browser", "crashed"))
    assert store.get(WWW) is None
    with pytest.raises(InfraError, match="cache-pages"):
        store.get(PLAIN)  # this spelling's own failure, not the other one's
    assert not store.has_page(PLAIN)


def test_a_failure_is_not_stored_for_a_page_stored_under_another_spelling(
    store: PageStore,
) -> None:
    store.put(PageRecord.web(WWW, "Good copy", None))
    assert store.put(PageRecord.failure(PLAIN, "timeout", "slow today")) is False
    assert store.counts() == {"ok": 1, "failed": 0, "not_served": 0}
    record = store.lookup(PLAIN)
    assert record is not None and record.text == "Good copy"


APP = "https://app.example.com/"
PRICING = "https://app.example.com/#/pricing"
ABOUT = "https://app.example.com/#!/about"


def test_each_hash_route_of_an_app_is_served_its_own_page(store: PageStore) -> None:
    store.put(PageRecord.web(PRICING, "Pro plan: 10 dollars a month", None))
    store.put(PageRecord.web(ABOUT, "Founded in 2019", None))
    assert (store.get(PRICING), store.get(ABOUT)) == (
        "Pro plan: 10 dollars a month",
        "Founded in 2019",
    )
    assert store.get(APP) is None


def test_a_page_stored_without_its_route_by_an_older_judgegen_is_not_served_for_a_route(
    tmp_path: Path,
) -> None:
    """Before routes were kept, `#/pricing` was stored under the app's address: that row holds
    the home page (or one route), so a route reads as missing and is captured again."""
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web(APP, "Welcome to the app", None))
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        db.execute("UPDATE pages SET requested_url = ?", (PRICING,))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert (store.get(PRICING), store.lookup(PRICING), store.stored_page(PRICING)) == (
            None,
            None,
            None,
        )
        assert not store.has_page(PRICING)
        assert store.get(APP) == "Welcome to the app"


def test_a_source_ending_in_punctuation_is_served_the_page_cited_whole(store: PageStore) -> None:
    """A judge copies `…/Oklahoma!` from the answer's Markdown link: that is the musical,
    stored by `cache-pages` as cited, not the state at `…/Oklahoma`."""
    store.put(PageRecord.web("https://en.wikipedia.org/wiki/Oklahoma", "The US state", None))
    store.put(PageRecord.web("https://en.wikipedia.org/wiki/Oklahoma%21", "The musical", None))
    assert store.get("https://en.wikipedia.org/wiki/Oklahoma!") == "The musical"
    assert store.get("https://en.wikipedia.org/wiki/Oklahoma") == "The US state"


def test_a_source_with_prose_punctuation_is_served_the_page_without_it(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "Page a", None))
    assert store.get("https://example.com/a.") == "Page a"


def test_a_page_at_an_encoded_slash_is_not_served_for_the_path_with_a_slash(
    store: PageStore,
) -> None:
    store.put(PageRecord.web("https://example.com/files/a%2Fb", "File named a/b", None))
    assert store.get("https://example.com/files/a/b") is None
    assert not store.has_page("https://example.com/files/a/b")


def test_a_page_captured_at_a_punycode_host_is_served_for_its_unicode_spelling(
    store: PageStore,
) -> None:
    store.put(PageRecord.web("https://xn--bcher-kva.example/katalog", "Der Katalog", None))
    assert store.get("https://bücher.example/katalog") == "Der Katalog"
    assert store.has_page("https://www.bücher.example/katalog/")


def test_opening_a_schema_6_store_recomputes_the_keys_of_internationalized_hosts(
    tmp_path: Path,
) -> None:
    url = "https://xn--bcher-kva.example/katalog"
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web(url, "Der Katalog", None))
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        db.execute("UPDATE pages SET match_key = ?", (url,))  # schema 6 kept punycode
        db.execute("PRAGMA user_version = 6")
    with PageStore(tmp_path / "pages", readonly=True) as old:
        assert old.get(url) == "Der Katalog"  # still served under the spelling stored
    with PageStore(tmp_path / "pages") as upgraded:
        assert upgraded.get("https://bücher.example/katalog") == "Der Katalog"


def _as_written_by_schema_3(path: Path, url: str, match_key: str, as_stored: str) -> None:
    """Make the row of `url` look as judgegen wrote it before schema 4."""
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE pages SET url = ?, match_key = ? WHERE url = ?", (as_stored, match_key, url)
        )
        db.execute("PRAGMA user_version = 3")


def test_a_schema_3_store_read_only_serves_no_page_by_a_key_that_merged_two(
    tmp_path: Path,
) -> None:
    url = "https://example.com/files/a%2Fb"
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web(url, "File named a/b", None))
    _as_written_by_schema_3(
        tmp_path / "pages" / "pages.sqlite", url, "https://example.com/files/a/b", url
    )
    with PageStore(tmp_path / "pages", readonly=True) as old:
        assert old.get("https://example.com/files/a/b") is None
        assert old.get(url) == "File named a/b"


def test_opening_a_schema_3_store_respells_a_url_ending_in_punctuation(tmp_path: Path) -> None:
    """A page fetched at `…/Oklahoma!` (cited `…/Oklahoma!#plot`) is the musical's: the store
    keeps it under that address taken whole, not the state's `…/Oklahoma`."""
    url = "https://en.wikipedia.org/wiki/Oklahoma%21"
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web(url, "The musical", None))
    old_url = "https://en.wikipedia.org/wiki/Oklahoma!"
    _as_written_by_schema_3(
        tmp_path / "pages" / "pages.sqlite", url, "https://en.wikipedia.org/wiki/Oklahoma", old_url
    )
    with PageStore(tmp_path / "pages") as upgraded:
        assert upgraded.get("https://en.wikipedia.org/wiki/Oklahoma!") == "The musical"
        assert upgraded.get("https://en.wikipedia.org/wiki/Oklahoma") is None
        assert [r.url for r in upgraded.records()] == [url]


def test_pages_persist_after_reopening(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web("https://example.com/a", "Kept", None))
    with PageStore(tmp_path / "pages", readonly=True) as second:
        assert second.get("https://example.com/a") == "Kept"


def test_opening_a_version_1_store_recomputes_its_same_page_keys(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web("https://example.com/p?b=2&a=1", "Sorted", None))
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        db.execute("UPDATE pages SET match_key = 'stale'")
        db.execute("PRAGMA user_version = 1")
    with PageStore(tmp_path / "pages") as reopened:
        assert reopened.get("http://example.com/p?a=1&b=2") == "Sorted"


def test_a_screenshot_hash_is_the_hash_of_its_bytes_and_none_without_one(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/shot", "Text", JPEG))
    store.put(PageRecord.web("https://example.com/plain", "Text", None))
    store.put(PageRecord.failure("https://example.com/gone", "http", "HTTP 404"))
    assert store.screenshot_hash("https://example.com/shot") == sha256_bytes(JPEG)
    for url in ("https://example.com/plain", "https://example.com/gone", "https://x.org/"):
        assert store.screenshot_hash(url) is None


def test_a_screenshot_hash_is_read_from_its_column_not_from_the_image(tmp_path: Path) -> None:
    """A freshness check reads hashes: hashing every cited image again would cost more than
    the rest of the check."""
    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://example.com/shot", "Text", JPEG))
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        db.execute("UPDATE pages SET screenshot_hash = 'sha256:as-stored'")
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert store.screenshot_hash("https://example.com/shot") == "sha256:as-stored"


def _as_written_by_schema_5(path: Path) -> None:
    """Make a store look as judgegen wrote it before it answered consent dialogs."""
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE pages DROP COLUMN consent")
        db.execute("PRAGMA user_version = 5")


def test_a_schema_5_store_serves_its_pages_read_only_and_gains_the_consent_column(
    tmp_path: Path,
) -> None:
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web(DEEP, "The story", JPEG))
    _as_written_by_schema_5(tmp_path / "pages" / "pages.sqlite")
    with PageStore(tmp_path / "pages", readonly=True) as old:
        assert old.get(DEEP) == "The story"
        assert [r.consent for r in old.records()] == [None]
    with PageStore(tmp_path / "pages") as upgraded:
        upgraded.put(PageRecord.web(WWW, "The article", JPEG, consent="rejected"))
        assert [r.consent for r in upgraded.records()] == [None, "rejected"]
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def _as_written_by_schema_4(path: Path) -> None:
    """Make a store look as judgegen wrote it before it recorded the page a URL names."""
    _as_written_by_schema_5(path)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE pages DROP COLUMN linked_url")
        db.execute("PRAGMA user_version = 4")


def _schema_4_store(directory: Path) -> None:
    """A schema 4 store holding an article and a short link that ended on a home page."""
    with PageStore(directory) as first:
        first.put(PageRecord.web(DEEP, "The story", JPEG))
        first.put(PageRecord.web(SHORT, HOME_TEXT, JPEG, final_url="https://news.example.com/"))
    _as_written_by_schema_4(directory / "pages.sqlite")


def test_a_schema_4_store_read_only_serves_its_pages_but_no_short_link_sent_to_a_home_page(
    tmp_path: Path,
) -> None:
    _schema_4_store(tmp_path / "pages")
    with PageStore(tmp_path / "pages", readonly=True) as old:
        assert old.get(DEEP) == "The story"
        assert old.get(SHORT) is None and not old.has_page(SHORT)
        record = old.lookup(SHORT)
        assert record is not None and record.error_kind == "redirect_home"
        assert "judgegen cache-pages" in (record.error or "")
        assert old.counts() == {"ok": 1, "failed": 1, "not_served": 1}
        assert [r.linked_url for r in old.records(raw=True)] == [None, None]


def test_opening_a_schema_4_store_for_writing_adds_the_linked_pages_as_not_recorded(
    tmp_path: Path,
) -> None:
    _schema_4_store(tmp_path / "pages")
    home = "https://news.example.com/"
    with PageStore(tmp_path / "pages") as upgraded:
        assert upgraded.get(SHORT) is None  # not recorded: it may be an article sent home
        assert upgraded.get(DEEP) == "The story"
        upgraded.put(PageRecord.web(SHORT, HOME_TEXT, JPEG, final_url=home, linked_url=home))
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("SELECT url, linked_url FROM pages ORDER BY rowid").fetchall() == [
            (DEEP, None),
            (SHORT, home),
        ]
    with PageStore(tmp_path / "pages", readonly=True) as store:
        assert store.get(SHORT) == HOME_TEXT  # captured again, with where it pointed


def _as_written_by_schema_2(path: Path) -> None:
    """Make a store look as judgegen wrote it before screenshot hashes were stored."""
    _as_written_by_schema_4(path)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE pages DROP COLUMN screenshot_hash")
        db.execute("PRAGMA user_version = 2")


def test_a_schema_2_store_gains_its_screenshot_hashes_when_opened_for_writing(
    tmp_path: Path,
) -> None:
    url = "https://example.com/shot"
    with PageStore(tmp_path / "pages") as first:
        first.put(PageRecord.web(url, "Text", JPEG))
    _as_written_by_schema_2(tmp_path / "pages" / "pages.sqlite")
    with PageStore(tmp_path / "pages", readonly=True) as old:
        assert old.screenshot_hash(url) == sha256_bytes(JPEG)  # hashed from the image itself
    with PageStore(tmp_path / "pages"):
        pass
    with sqlite3.connect(tmp_path / "pages" / "pages.sqlite") as db:
        assert db.execute("SELECT screenshot_hash FROM pages").fetchone() == (sha256_bytes(JPEG),)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    with PageStore(tmp_path / "pages", readonly=True) as upgraded:
        assert upgraded.screenshot_hash(url) == sha256_bytes(JPEG)


async def test_citations_of_one_page_are_verified_once(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "Text", None))
    seen: list[list[str]] = []

    def verify(request: VerifyRequest) -> bool:
        seen.append(list(request.sources))
        return False

    ev = Evaluator.create(
        task_id="t",
        task_description="d",
        answer="a",
        backend=ScriptedBackend(verify=verify),
        pages=store,
    )
    leaf = ev.add_leaf(id="claim", desc="claim", critical=False)
    cited = ["https://example.com/a", "[the same](http://www.example.com/a/)"]
    await ev.verify(claim="c", node=leaf, sources=cited)
    assert seen == [["https://example.com/a"]]


def test_store_uses_wal_journal(store: PageStore) -> None:
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_readonly_open_of_missing_store_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="cache-pages"):
        PageStore(tmp_path / "nowhere", readonly=True)


def test_readonly_store_refuses_writes(tmp_path: Path) -> None:
    PageStore(tmp_path / "pages").close()
    with (
        PageStore(tmp_path / "pages", readonly=True) as store,
        pytest.raises(PermissionError),
    ):
        store.put(PageRecord.web("https://example.com/a", "x", None))


def test_counts_and_records_list_pages_and_failures(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "A", JPEG))
    store.put(PageRecord.failure("https://example.com/b", "http", "HTTP 500"))
    assert store.counts() == {"ok": 1, "failed": 1, "not_served": 0}
    assert [r.url for r in store.records("failed")] == ["https://example.com/b"]
    assert store.records("ok")[0].screenshot is None


def test_report_replaces_blobs_with_sizes(store: PageStore) -> None:
    record = PageRecord.web("https://example.com/a", "Hello", JPEG)
    report = record.report()
    assert report["screenshot_bytes"] == len(JPEG)
    assert report["text_chars"] == 5
    assert "screenshot" not in report and "text" not in report


async def test_evaluator_reads_stored_pages_and_treats_failures_as_missing(
    store: PageStore,
) -> None:
    store.put(PageRecord.web("https://example.com/ok", "The sky is blue.", JPEG))
    store.put(PageRecord.failure("https://example.com/dead", "http", "HTTP 404"))
    seen: list[VerifyRequest] = []

    def verify(request: VerifyRequest) -> bool:
        seen.append(request)
        return "blue" in (request.page_texts[0] or "")

    ev = Evaluator.create(
        task_id="t",
        task_description="d",
        answer="a",
        backend=ScriptedBackend(verify=verify),
        pages=store,
    )
    leaf = ev.add_leaf(id="sky", desc="sky colour", critical=False)
    passed = await ev.verify(
        claim="The sky is blue",
        node=leaf,
        sources=["https://example.com/dead", "https://example.com/ok"],
    )
    assert passed is True
    assert [r.page_texts[0] for r in seen] == [None, "The sky is blue."]
    assert seen[1].images == [base64.b64encode(JPEG).decode("ascii")]
    assert ev.missing_sources == ["https://example.com/dead"]


def test_browser_failure_is_an_infra_error_not_a_missing_page(store: PageStore) -> None:
    store.put(PageRecord.failure("https://example.com/a", "browser", "Chromium failed: crashed"))
    with pytest.raises(InfraError, match="cache-pages"):
        store.get("https://example.com/a")


async def test_evaluator_marks_node_error_when_capture_failed_on_our_side(
    store: PageStore,
) -> None:
    store.put(PageRecord.failure("https://example.com/a", "browser", "Chromium failed: crashed"))
    ev = Evaluator.create(
        task_id="t", task_description="d", answer="a", backend=ScriptedBackend(), pages=store
    )
    leaf = ev.add_leaf(id="claim", desc="claim", critical=False)
    await ev.verify(claim="c", node=leaf, sources="https://example.com/a")
    assert leaf.status == "error"
    assert ev.errors and ev.errors[0]["kind"] == "page_capture"


def counted_queries(store: PageStore) -> list[str]:
    """Every SQL statement `store` runs from now on."""
    queries: list[str] = []
    store._db.set_trace_callback(queries.append)
    return queries


def test_a_read_only_store_answers_a_page_read_again_without_querying_it(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.web("https://example.com/a", "Hello page", JPEG))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        queries = counted_queries(store)
        first = (store.get("https://example.com/a"), store.screenshot("https://example.com/a"))
        asked = len(queries)
        again = (store.get("https://example.com/a"), store.screenshot("https://example.com/a"))
    assert again == first == ("Hello page", base64.b64encode(JPEG).decode())
    assert asked > 0 and len(queries) == asked


def test_a_writable_store_always_reads_what_is_stored_now(store: PageStore) -> None:
    store.put(PageRecord.web("https://example.com/a", "old text", JPEG))
    assert store.get("https://example.com/a") == "old text"
    store.put(PageRecord.web("https://example.com/a", "new text", JPEG))
    assert store.get("https://example.com/a") == "new text"


def test_a_site_refusing_our_capture_is_our_failure_on_read(store: PageStore) -> None:
    """HTTP 429 still after a retry: the capture host was refused, the page likely exists."""
    store.put(PageRecord.failure(WWW, "throttled", "HTTP 429 Too Many Requests", http_status=429))
    with pytest.raises(InfraError, match="cache-pages"):
        store.get(WWW)


def test_a_consent_wall_is_our_failure_on_read(store: PageStore) -> None:
    """A consent dialog still hid the page after the capture answered it: a reader who
    presses its button sees the page, so its claims are not unsupported."""
    store.put(PageRecord.failure(WWW, "consent_wall", "a cookie-consent dialog hides the page"))
    with pytest.raises(InfraError, match="consent dialog hides the page"):
        store.get(WWW)


def test_how_a_consent_dialog_was_answered_is_kept_with_the_page(store: PageStore) -> None:
    store.put(PageRecord.web(WWW, "The article", JPEG, consent="accepted"))
    store.put(PageRecord.web(DEEP, "The story", JPEG))
    assert [(r.url, r.consent) for r in store.records()] == [(WWW, "accepted"), (DEEP, None)]


def test_a_capture_that_failed_on_our_side_is_reported_on_every_read(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as writer:
        writer.put(PageRecord.failure("https://example.com/a", "browser", "crashed"))
    with PageStore(tmp_path / "pages", readonly=True) as store:
        for _ in range(2):
            with pytest.raises(InfraError, match="cache-pages"):
                store.get("https://example.com/a")


def test_a_pages_text_hash_is_the_hash_of_what_get_returns(store: PageStore) -> None:
    from toolkit.util.hashing import sha256_text

    store.put(PageRecord.web("https://example.com/web", "Web text", JPEG))
    store.put(PageRecord.pdf_document("https://example.com/a.pdf", b"%PDF-1.4 x", "PDF text"))
    store.put(PageRecord.failure("https://example.com/gone", "http", "404"))
    for url in ("https://example.com/web", "https://example.com/a.pdf"):
        assert store.text_hash(url) == sha256_text(store.get(url) or "")
    assert store.text_hash("https://example.com/gone") is None
    assert store.text_hash("https://example.com/never") is None


def test_a_stored_web_page_hash_always_matches_its_text(store: PageStore) -> None:
    """`text_hash` trusts the stored hash of a web page, so `put` writes it from the text,
    whatever hash the record carried."""
    from toolkit.util.hashing import sha256_text

    wrong = PageRecord.web("https://example.com/a", "new text", JPEG).model_copy(
        update={"content_hash": "sha256:" + "0" * 64}
    )
    store.put(wrong)
    assert store.text_hash("https://example.com/a") == sha256_text("new text")


def test_a_browser_failure_is_reported_by_text_hash_too(store: PageStore) -> None:
    store.put(PageRecord.failure("https://example.com/a", "browser", "crashed"))
    with pytest.raises(InfraError, match="cache-pages"):
        store.text_hash("https://example.com/a")


def test_a_damaged_store_file_is_a_page_store_error_naming_the_file_and_the_fix(
    tmp_path: Path,
) -> None:
    with PageStore(tmp_path / "pages") as writer:
        for index in range(20):
            writer.put(PageRecord.web(f"https://example.com/{index}", "text " * 2000, JPEG))
    database = tmp_path / "pages" / "pages.sqlite"
    damage(database)
    with (
        PageStore(tmp_path / "pages", readonly=True) as store,
        pytest.raises(PageStoreError) as raised,
    ):
        store.get("https://example.com/3")
    assert raised.value.kind == "page_store"
    assert str(database) in str(raised.value) and "judgegen cache-pages" in str(raised.value)


def test_a_store_that_cannot_be_read_says_to_check_the_disk_or_wait_for_the_writer(
    store: PageStore,
) -> None:
    store.put(PageRecord.web("https://example.com/a", "Hello page", JPEG))
    store._db.close()
    store._db = FailingConnection()  # type: ignore[assignment]
    with pytest.raises(PageStoreError, match="disk I/O error") as raised:
        store.get("https://example.com/a")
    assert "cache-pages" in str(raised.value) and "disk" in str(raised.value)
    assert str(store.path) in str(raised.value)


def test_a_stored_page_is_served_with_the_hashes_of_exactly_what_it_serves(
    store: PageStore,
) -> None:
    from toolkit.runner.fingerprint import screenshot_digest
    from toolkit.util.hashing import sha256_text

    store.put(PageRecord.web("https://example.com/web", "Web text", JPEG))
    store.put(PageRecord.web("https://example.com/plain", "Plain text", None))
    store.put(PageRecord.pdf_document("https://example.com/a.pdf", b"%PDF-1.4 x", "PDF text"))
    for url in (
        "https://example.com/web",
        "https://example.com/plain",
        "https://example.com/a.pdf",
    ):
        page = store.stored_page(url)
        assert page is not None
        assert (page.text, page.screenshot) == (store.get(url), store.screenshot(url))
        assert page.text_hash == sha256_text(page.text)
        assert page.screenshot_hash == screenshot_digest(page.screenshot)


def test_a_stored_page_is_none_where_get_is_none_and_raises_where_get_raises(
    store: PageStore,
) -> None:
    store.put(PageRecord.failure("https://example.com/gone", "http", "HTTP 404"))
    store.put(PageRecord.web("https://example.com/blank", " \n", None))
    store.put(PageRecord.failure("https://example.com/broken", "browser", "crashed"))
    for url in ("https://example.com/gone", "https://example.com/blank", "https://x.org/never"):
        assert store.stored_page(url) is None
    with pytest.raises(InfraError, match="cache-pages"):
        store.stored_page("https://example.com/broken")


def test_a_stored_pages_screenshot_hash_comes_from_its_column_when_stored(tmp_path: Path) -> None:
    """Served with the column's hash (what a freshness check compares), not hashed again;
    a store without the column (read-only, schema 2) hashes the bytes it read."""
    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://example.com/shot", "Text", JPEG))
    database = tmp_path / "pages" / "pages.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("UPDATE pages SET screenshot_hash = 'sha256:as-stored'")
    with PageStore(tmp_path / "pages", readonly=True) as store:
        page = store.stored_page("https://example.com/shot")
        assert page is not None and page.screenshot_hash == "sha256:as-stored"
    _as_written_by_schema_2(database)
    with PageStore(tmp_path / "pages", readonly=True) as old:
        page = old.stored_page("https://example.com/shot")
        assert page is not None and page.screenshot_hash == sha256_bytes(JPEG)


def marked_schema(directory: Path, version: int) -> None:
    """Mark the store in `directory` as written at page store schema `version`."""
    db = sqlite3.connect(directory / "pages.sqlite")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


@pytest.mark.parametrize("readonly", [True, False])
def test_a_store_a_newer_judgegen_wrote_is_refused_and_left_as_it_is(
    tmp_path: Path, readonly: bool
) -> None:
    """Its rows may say what this judgegen misreads; opened to write, its schema mark would
    drop to this one's and the newer judgegen would redo its upgrades."""
    PageStore(tmp_path).close()
    marked_schema(tmp_path, SCHEMA_VERSION + 1)

    with pytest.raises(PageStoreError, match="a newer judgegen wrote it") as raised:
        PageStore(tmp_path, readonly=readonly)

    assert "pip install -U judgegen" in str(raised.value)
    db = sqlite3.connect(tmp_path / "pages.sqlite")
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION + 1,)
    db.close()


def test_a_failure_of_a_kind_this_judgegen_does_not_know_is_no_missing_page(
    tmp_path: Path,
) -> None:
    """A newer judgegen's failure kind may be on our side (an outage): read as the page
    missing, the claim would be failed; the read is an infrastructure error instead."""
    url = "https://example.com/held"
    with PageStore(tmp_path) as store:
        store.put(PageRecord.failure(url, "http", "HTTP 403"))
    db = sqlite3.connect(tmp_path / "pages.sqlite")
    db.execute("UPDATE pages SET error_kind = 'proxy_outage'")
    db.commit()
    db.close()

    with PageStore(tmp_path, readonly=True) as store, pytest.raises(InfraError) as raised:
        store.get(url)

    assert "'proxy_outage'" in str(raised.value) and "does not know" in str(raised.value)


def test_a_missed_url_is_told_the_stored_page_it_nearly_names(store: PageStore) -> None:
    """`/Wiki/Foo` may be `/wiki/Foo` or another page (paths are case-sensitive): never
    served for it, but named, so the user sees a spelling miss rather than a claim failed."""
    store.put(PageRecord.web("https://en.wikipedia.org/wiki/Ada_Lovelace", "Ada", None))
    store.put(PageRecord.web("https://example.com/report?id=2", "Report 2", None))
    store.put(PageRecord.failure("https://example.com/gone", "http", "HTTP 404"))
    cited = "https://en.wikipedia.org/wiki/ada_lovelace"
    assert store.get(cited) is None
    assert store.near_misses(cited) == ["https://en.wikipedia.org/wiki/Ada_Lovelace"]
    assert store.near_misses("https://example.com/report?id=3") == [
        "https://example.com/report?id=2"
    ]
    assert store.near_misses("https://example.com/Gone") == []  # a failure is no page
    assert store.near_misses("https://example.org/wiki/Ada_Lovelace") == []  # another site


def test_a_near_miss_is_found_through_the_characters_sql_patterns_treat_as_wildcards(
    store: PageStore,
) -> None:
    """The store narrows candidates with SQL `LIKE`, where `%` and `_` are wildcards and
    case is ignored: a path holding them, cited in another case, is still hinted, and a
    page they would match as wildcards is not."""
    store.put(PageRecord.web("https://en.wikipedia.org/wiki/Caf%C3%A9_au_lait", "Café", None))
    store.put(PageRecord.web("https://en.wikipedia.org/wiki/CafXA9Xau_lait", "Other", None))
    cited = "https://en.wikipedia.org/wiki/caf%c3%a9_Au_Lait"
    assert store.near_misses(cited) == ["https://en.wikipedia.org/wiki/Caf%C3%A9_au_lait"]
