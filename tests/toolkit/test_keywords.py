"""Strict keywords: a misspelled keyword fails at the call and names the closest valid one."""

import pytest

from toolkit.keywords import strict_keywords


@strict_keywords
def check_value(value: str, expected: str, *, tolerance: float = 0.0) -> bool:
    return value == expected


@strict_keywords
async def verify_claim(claim: str, sources: list[str] | None = None) -> bool:
    return bool(sources)


def test_unknown_keyword_names_the_closest_valid_one() -> None:
    with pytest.raises(TypeError, match="did you mean `tolerance`"):
        check_value("a", "a", tolerence=1.0)


def test_unknown_keyword_without_a_close_match_lists_the_valid_ones() -> None:
    with pytest.raises(TypeError, match="valid keywords: expected, tolerance, value"):
        check_value("a", "a", zzz=1)


async def test_async_functions_are_checked_before_they_run() -> None:
    with pytest.raises(TypeError, match="did you mean `sources`"):
        await verify_claim("c", source=["https://example.org"])
    assert await verify_claim("c", sources=["https://example.org"]) is True


def test_valid_keywords_pass_through_unchanged() -> None:
    assert check_value(value="a", expected="a", tolerance=0.5) is True
