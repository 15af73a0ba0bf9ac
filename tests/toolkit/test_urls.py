"""URLs: the canonical (fetch/store) form, the same-page key, and citation extraction."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.pages import answer_files, cited_urls
from toolkit.urls import (
    canonical_url,
    citations,
    extract_urls,
    normalize_url,
    same_page,
    url_spellings,
)


@pytest.mark.parametrize(
    ("cited", "key"),
    [
        ("  https://example.com/a  ", "https://example.com/a"),
        ("<https://example.com/a>", "https://example.com/a"),
        ("(https://example.com/a).", "https://example.com/a"),
        ("**https://example.com/a**,", "https://example.com/a"),
        ("`https://example.com/a`;", "https://example.com/a"),
        ('"https://example.com/a"', "https://example.com/a"),
        ("[label](https://example.com/a)", "https://example.com/a"),
        ("https://example.com/a!?", "https://example.com/a"),
    ],
)
def test_canonical_strips_decorations_agents_add(cited: str, key: str) -> None:
    assert canonical_url(cited) == key


def test_canonical_lowercases_scheme_and_host_but_not_path() -> None:
    assert canonical_url("HTTPS://Example.COM/Path/To") == "https://example.com/Path/To"


def test_canonical_drops_fragment_and_keeps_query() -> None:
    url = "https://example.com/p?b=2&a=1#:~:text=hello"
    assert canonical_url(url) == "https://example.com/p?b=2&a=1"


PRICING = "https://app.example.com/#/pricing"
ABOUT = "https://app.example.com/#/about"
HASHBANG_ABOUT = "https://app.example.com/#!/about"


@pytest.mark.parametrize("url", [PRICING, ABOUT, HASHBANG_ABOUT])
def test_canonical_keeps_a_hash_route_which_names_the_page(url: str) -> None:
    assert canonical_url(url) == url


def test_two_hash_routes_of_one_app_are_two_pages() -> None:
    keys = {normalize_url(url) for url in (PRICING, ABOUT, HASHBANG_ABOUT, "app.example.com")}
    assert len(keys) == 4
    assert not same_page(PRICING, ABOUT)


def test_an_anchor_within_a_hash_route_is_dropped_like_any_anchor() -> None:
    assert canonical_url(f"{PRICING}#faq") == PRICING
    assert same_page(f"{PRICING}#faq", PRICING)


def test_the_same_page_key_reads_a_hash_route_like_a_path() -> None:
    variants = [
        "http://www.app.example.com/#/caf%C3%A9/",
        "https://app.example.com#/café",
        "<https://app.example.com/#/caf%c3%a9>.",
    ]
    assert {normalize_url(v) for v in variants} == {"https://app.example.com#/caf%C3%A9"}


@pytest.mark.parametrize("root", ["https://app.example.com/#/", "https://app.example.com/#!/"])
def test_the_root_route_is_fetched_as_cited_and_is_the_apps_home_page(root: str) -> None:
    assert canonical_url(root) == root
    assert same_page(root, "https://app.example.com/")


def test_extract_cites_each_hash_route_of_an_app_once() -> None:
    text = f"Plans: {PRICING}. Team: [about]({ABOUT}), again {PRICING}/ and {HASHBANG_ABOUT}"
    assert extract_urls(text) == [PRICING, ABOUT, HASHBANG_ABOUT]


@pytest.mark.parametrize(
    ("cited", "key"),
    [
        ("https://example.com:443/x", "https://example.com/x"),
        ("http://example.com:80/x", "http://example.com/x"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
    ],
)
def test_canonical_drops_only_default_ports(cited: str, key: str) -> None:
    assert canonical_url(cited) == key


def test_canonical_keeps_balanced_parentheses_in_path() -> None:
    url = "(https://en.wikipedia.org/wiki/Mercury_(planet))"
    assert canonical_url(url) == "https://en.wikipedia.org/wiki/Mercury_(planet)"


def test_canonical_gives_empty_path_a_slash() -> None:
    assert canonical_url("https://example.com") == "https://example.com/"


def test_canonical_removes_markdown_escapes() -> None:
    assert canonical_url(r"https://example.com/some\_page") == "https://example.com/some_page"


@pytest.mark.parametrize(
    ("cited", "key"),
    [
        ("www.example.com/a", "https://www.example.com/a"),
        ("example.com/a?b=1", "https://example.com/a?b=1"),
        ("Example.org", "https://example.org/"),
        ("//cdn.example.com/x", "https://cdn.example.com/x"),
    ],
)
def test_canonical_reads_schemeless_hosts_as_https(cited: str, key: str) -> None:
    assert canonical_url(cited) == key


@pytest.mark.parametrize("text", ["  not a url ", "file.txt is here", "v1.2"])
def test_canonical_leaves_non_web_strings_stripped_only(text: str) -> None:
    assert canonical_url(text) == text.strip()


def test_same_page_key_ignores_scheme_www_encoding_trailing_slash_and_utm() -> None:
    variants = [
        "https://www.example.com/caf%C3%A9/?utm_source=chatgpt.com",
        "http://example.com/café",
        "https://example.com/café/",
    ]
    assert len({normalize_url(v) for v in variants}) == 1


@pytest.mark.parametrize(
    "cited",
    [
        "[the page](https://www.example.com/a/)",
        "<http://example.com/a>",
        "**https://example.com/a#top**.",
        "'example.com/a',",
    ],
)
def test_same_page_unwraps_markdown_and_decorations(cited: str) -> None:
    assert same_page(cited, "https://example.com/a")


def test_same_page_is_false_for_non_urls() -> None:
    assert same_page("not a url", "not a url") is False


def test_canonical_keeps_what_the_same_page_key_drops() -> None:
    url = "http://www.example.com/a/?b=2&a=1"
    assert canonical_url(url) == url
    assert normalize_url(url) == "https://example.com/a?a=1&b=2"


def test_extract_finds_markdown_and_bare_urls_in_order() -> None:
    text = (
        "Start https://b.example/one. Then [docs](https://A.example/two#sec) and "
        "<https://c.example/three?q=1>, then **https://d.example/four**."
    )
    assert extract_urls(text) == [
        "https://b.example/one",
        "https://a.example/two",
        "https://c.example/three?q=1",
        "https://d.example/four",
    ]


def test_citations_give_where_each_url_is_written_and_the_whole_citation() -> None:
    text = "See [Mercury](https://w.example/M_(p)), <https://c.example/x> and https://b.example/y."
    found = citations(text)
    assert [text[c.start : c.end] for c in found] == [
        "https://w.example/M_(p)",
        "https://c.example/x",
        "https://b.example/y",
    ]
    assert [text[c.outer_start : c.outer_end] for c in found] == [
        "[Mercury](https://w.example/M_(p))",
        "<https://c.example/x>",
        "https://b.example/y",
    ]
    assert [c.label for c in found] == ["Mercury", "", ""]


def test_citations_list_every_occurrence_of_a_page() -> None:
    assert len(citations("https://a.example/x and again https://a.example/x")) == 2


def test_extract_deduplicates_by_page_keeping_the_first_spelling() -> None:
    text = "[https://x.example/a](https://x.example/a) and http://X.example/a/#frag again"
    assert extract_urls(text) == ["https://x.example/a"]


def test_extract_keeps_parentheses_inside_markdown_link_targets() -> None:
    text = "See [Mercury](https://en.wikipedia.org/wiki/Mercury_(planet))."
    assert extract_urls(text) == ["https://en.wikipedia.org/wiki/Mercury_(planet)"]


def test_extract_stops_at_cjk_punctuation() -> None:
    assert extract_urls("参见https://example.cn/页面。然后") == ["https://example.cn/页面"]


def test_extract_stops_at_typographic_quotes_guillemets_and_ellipses() -> None:
    text = (
        "Per “https://example.com/report” and ‘https://example.com/b’… and "
        "«https://example.com/c», see https://example.com/d…"
    )
    assert extract_urls(text) == [
        "https://example.com/report",
        "https://example.com/b",
        "https://example.com/c",
        "https://example.com/d",
    ]


def test_extract_stops_at_a_zero_width_space() -> None:
    assert extract_urls("see https://example.com/a\u200bnext") == ["https://example.com/a"]


def test_extract_keeps_a_typographic_apostrophe_inside_a_url() -> None:
    text = "See https://en.wikipedia.org/wiki/Ender’s_Game."
    assert extract_urls(text) == ["https://en.wikipedia.org/wiki/Ender’s_Game"]


@pytest.mark.parametrize(
    "cited", ["“https://example.com/a”", "«https://example.com/a»", "https://example.com/a…"]
)
def test_canonical_strips_typographic_quotes_and_ellipses(cited: str) -> None:
    assert canonical_url(cited) == "https://example.com/a"


@pytest.mark.parametrize("glue", [",", ";", "|", "\u2013", "\u2014"])
def test_extract_splits_two_urls_glued_by_punctuation(glue: str) -> None:
    text = f"Sources: https://a.example/x{glue}https://b.example/y"
    assert extract_urls(text) == ["https://a.example/x", "https://b.example/y"]


def test_extract_keeps_an_en_dash_inside_a_url() -> None:
    cited = "https://en.wikipedia.org/wiki/Mexican\u2013American_War"
    assert extract_urls(f"See {cited}, which says so.") == [cited]


def test_an_html_escaped_ampersand_in_a_url_is_the_ampersand() -> None:
    assert extract_urls("https://a.example/s?q=1&amp;page=2") == ["https://a.example/s?q=1&page=2"]
    assert canonical_url("https://a.example/s?q=1&amp;page=2") == "https://a.example/s?q=1&page=2"


def test_extract_ignores_non_http_schemes() -> None:
    assert extract_urls("mail me: mailto:a@b.c or ftp://files.example/x") == []


def test_cited_urls_lists_each_hash_route_as_its_own_page(tmp_path: Path) -> None:
    answer = tmp_path / "answer_1.md"
    answer.write_text(f"{PRICING} and {ABOUT}", encoding="utf-8")
    assert cited_urls(answer_files(tmp_path)) == {PRICING: [answer], ABOUT: [answer]}


def test_cited_urls_reads_mind2web2_answer_layout(tmp_path: Path) -> None:
    first = tmp_path / "agent" / "task_a" / "answer_1.md"
    second = tmp_path / "agent" / "task_b" / "answer_1.md"
    for path, body in [
        (first, "https://a.example/x"),
        (second, "https://a.example/x#y and https://b.example/"),
    ]:
        path.parent.mkdir(parents=True)
        path.write_text(body, encoding="utf-8")
    citations = cited_urls(answer_files(tmp_path))
    assert citations == {
        "https://a.example/x": [first, second],
        "https://b.example/": [second],
    }


@pytest.mark.parametrize(
    "text",
    [
        "The musical: [Oklahoma!](https://en.wikipedia.org/wiki/Oklahoma!).",
        "The musical: <https://en.wikipedia.org/wiki/Oklahoma!>.",
    ],
)
def test_a_url_spelled_out_whole_keeps_its_last_punctuation(text: str) -> None:
    """`/wiki/Oklahoma!` is the musical, `/wiki/Oklahoma` the state: a Markdown link's target
    or an autolink ends where its delimiter says, so nothing in it is prose punctuation."""
    assert extract_urls(text) == ["https://en.wikipedia.org/wiki/Oklahoma%21"]


def test_a_canonical_url_ending_in_punctuation_reads_back_as_itself() -> None:
    """Capture and the page store canonicalize the URLs `extract_urls` gives again."""
    url = canonical_url("https://en.wikipedia.org/wiki/Apple_Inc.", whole=True)
    assert url == "https://en.wikipedia.org/wiki/Apple_Inc%2E"
    assert canonical_url(url) == url
    assert normalize_url(url) != normalize_url("https://en.wikipedia.org/wiki/Apple_Inc")


def test_a_source_is_looked_up_whole_first_then_as_prose() -> None:
    assert url_spellings("https://en.wikipedia.org/wiki/Oklahoma!") == [
        "https://en.wikipedia.org/wiki/Oklahoma%21",
        "https://en.wikipedia.org/wiki/Oklahoma",
    ]


def test_an_encoded_slash_is_part_of_a_path_segment_not_a_separator() -> None:
    """GitLab's API (`projects/group%2Fproject`) and Apache answer `a%2Fb` and `a/b` apart."""
    assert normalize_url("https://example.com/files/a%2Fb") != normalize_url(
        "https://example.com/files/a/b"
    )
    assert same_page("https://example.com/files/a%2fb", "https://example.com/files/a%2Fb")


def test_extract_cites_a_path_with_an_encoded_slash_and_one_with_a_slash() -> None:
    text = "[enc](https://example.com/files/a%2Fb) and [dir](https://example.com/files/a/b)"
    assert extract_urls(text) == [
        "https://example.com/files/a%2Fb",
        "https://example.com/files/a/b",
    ]


@pytest.mark.parametrize(
    "spelling",
    [
        "https://xn--bcher-kva.example/katalog",
        "https://XN--BCHER-KVA.example/katalog",
        "https://www.xn--bcher-kva.example/katalog",
        "https://B%C3%BCcher.example/katalog",
    ],
)
def test_an_internationalized_host_is_one_page_in_unicode_and_in_punycode(spelling: str) -> None:
    """A browser shows `bücher.example` and sends `xn--bcher-kva.example`: one host, and an
    agent cites either; the capture may have stored the other."""
    assert same_page("https://bücher.example/katalog", spelling)


def test_a_punycode_host_is_not_mapped_to_another_domain() -> None:
    """`straße.example` (`xn--strae-oqa`) and `strasse.example` are two domains (IDNA 2008,
    as browsers resolve them); the IDNA 2003 mapping would make them one."""
    assert not same_page("https://xn--strae-oqa.example/a", "https://strasse.example/a")
    assert same_page("https://xn--strae-oqa.example/a", "https://straße.example/a")
