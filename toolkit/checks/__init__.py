"""Deterministic checks a judge can use instead of an LLM call where the check is mechanical.

Every function returns a plain value and never raises: None, empty or unparseable input gives
False (or None for the `parse_*`, `number_bounds` and `url_domain` functions, "" for
`normalize_url`). Use a check's result directly:
`ev.add_custom_node(result=checks.same_date(a, b), id=..., desc=...)`.
"""

from toolkit import urls as _urls
from toolkit.checks import dates as _dates
from toolkit.checks import domains as _domains
from toolkit.checks import names as _names
from toolkit.checks import numbers as _numbers
from toolkit.checks import text as _text
from toolkit.keywords import strict_keywords

__all__ = [
    "contains_all",
    "contains_any",
    "normalize_url",
    "number_bounds",
    "number_in_range",
    "page_contains",
    "parse_date",
    "parse_number",
    "same_date",
    "same_name",
    "same_number",
    "same_url",
    "url_domain",
    "url_in_domain",
]

parse_date = strict_keywords(_dates.parse_date)
same_date = strict_keywords(_dates.same_date)
parse_number = strict_keywords(_numbers.parse_number)
number_bounds = strict_keywords(_numbers.number_bounds)
same_number = strict_keywords(_numbers.same_number)
number_in_range = strict_keywords(_numbers.number_in_range)
same_name = strict_keywords(_names.same_name)
normalize_url = strict_keywords(_urls.normalize_url)
same_url = strict_keywords(_domains.same_url)
url_domain = strict_keywords(_domains.url_domain)
url_in_domain = strict_keywords(_domains.url_in_domain)
page_contains = strict_keywords(_text.page_contains)
contains_any = strict_keywords(_text.contains_any)
contains_all = strict_keywords(_text.contains_all)
