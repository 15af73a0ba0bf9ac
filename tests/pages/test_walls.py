"""A bot check served in place of a page is recognized by its own wording, only when it is the
whole (short) text: a real page that quotes such a phrase is not taken for one."""

from __future__ import annotations

import pytest

from toolkit.pages.walls import MAX_CHALLENGE_CHARS, bot_check

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
