"""URLs and the sites they belong to: same page, registrable domain, domain membership.

"Same page" is `toolkit.urls.normalize_url`, the key the page store and the Evaluator use
too. Registrable domains come from the Public Suffix List as bundled with `publicsuffixlist`
(read offline, never fetched), private suffixes included so "alice.github.io" is its own site.
"""

from __future__ import annotations

import functools
import ipaddress
import unicodedata

from publicsuffixlist import PSLFILE, PublicSuffixList

from toolkit.urls import same_page, unicode_host, web_host

# Blog platforms whose subdomains are separate authors but that the PSL does not list.
_EXTRA_SHARED_HOSTS = ("substack.com", "medium.com")


@functools.cache
def suffix_list() -> PublicSuffixList:
    """The one suffix-list reader: the bundled snapshot plus `_EXTRA_SHARED_HOSTS`, private
    suffixes included; no network, no cache files. Parsing it takes ~80 ms, so the sandbox's
    fork server builds it once while idle and its jobs inherit it."""
    with open(PSLFILE, encoding="utf-8") as bundled:
        lines = [*bundled, *(f"{host}\n" for host in _EXTRA_SHARED_HOSTS)]
    return PublicSuffixList(lines, accept_unknown=True, only_icann=False)


def same_url(a: str | None, b: str | None) -> bool:
    """True when `a` and `b` have the same `normalize_url` key (and both are URLs).

    "http://www.example.com/a/" = "https://example.com/a" = "example.com/a#intro";
    "https://example.com/a" ≠ "https://example.com/b" and ≠ "https://other.com/a".
    """
    return same_page(a, b)


def url_domain(url: str | None) -> str | None:
    """The site a URL belongs to: its registrable domain, lower-case, without "www.".

    "https://www.nytimes.com/2023/x" → "nytimes.com"; "https://docs.github.com/en" →
    "github.com"; "https://news.bbc.co.uk/a" → "bbc.co.uk" (country second levels such as
    co.uk, com.au, gov.cn are kept); shared hosting keeps the owner's subdomain
    ("alice.github.io" → "alice.github.io"); an IP address or "localhost" is returned as
    is. None when `url` is not an http(s) URL. To test membership use `url_in_domain`.
    """
    host = web_host(url)
    if host is None:
        return None
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        # The registrable domain of the host as written: "m.github.io" is a site of its own.
        return suffix_list().privatesuffix(web_host(url, as_written=True) or host) or host
    return host


def url_in_domain(url: str | None, domain: str | None) -> bool:
    """True when `url` is on `domain` or on one of its subdomains.

    "https://docs.github.com/x" is in "github.com"; "https://evilgithub.com" and
    "https://github.com.evil.net" are not in "github.com". `domain` may also be given as
    a URL ("https://github.com/") or an IP address ("93.184.216.34"). False for None or
    anything that is not an http(s) URL.

    Names are compared as browsers resolve them (IDNA 2008, UTS 46 non-transitional): an
    internationalised name in Unicode or punycode is one name ("xn--bcher-kva.de" =
    "bücher.de"), as are full-width forms ("ｇｏｏｄ.com" = "good.com"), but "straße.de"
    (xn--strae-oqa.de) and "strasse.de" are two domains.

    Editions of a site are the site: on both sides the labels "www", "m" and "mobile" in
    front of the registrable domain (the site `url_domain` names) are ignored, so
    "https://github.com" is in "www.github.com", "https://en.m.wikipedia.org/wiki/X" is in
    "en.wikipedia.org" and "https://mobile.twitter.com" and "https://m.youtube.com" are in
    "twitter.com" and "www.youtube.com". Those labels are never dropped from the
    registrable domain itself, so no other site can match: "https://alice.github.io" is
    not in "m.github.io" (user m's site), "https://fr.m.wikipedia.org" is not in
    "en.wikipedia.org" and "https://attacker-wikipedia.org" is not in "wikipedia.org".
    """
    host, wanted = web_host(url, as_written=True), web_host(domain, as_written=True)
    if wanted is None and isinstance(domain, str) and "://" not in domain:
        wanted = web_host("https://" + domain.strip(), as_written=True)
    if host is None or not wanted:
        return False
    host, wanted = _site_host(_resolved_name(host)), _site_host(_resolved_name(wanted))
    return host == wanted or host.endswith("." + wanted)


# Labels that name an edition of a site (desktop "www", mobile "m"), not another site.
_EDITION_LABELS = frozenset({"www", "m", "mobile"})


def _site_host(host: str) -> str:
    """`host` without its edition labels in front of its registrable domain:
    "en.m.wikipedia.org" → "en.wikipedia.org"; "m.github.io" (a site itself) is kept."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        site = suffix_list().privatesuffix(host)
    else:
        return host
    if not site or site == host:
        return host
    labels = host.removesuffix("." + site).split(".")
    return ".".join([*(label for label in labels if label not in _EDITION_LABELS), site])


# Full stops browsers read as the dot between labels (UTS 46 maps them to ".").
_LABEL_DOTS = str.maketrans(dict.fromkeys("\u3002\uff0e\uff61", "."))


def _resolved_name(host: str) -> str:
    """`host` as the name browsers resolve (UTS 46, non-transitional), in Unicode: punycode
    decoded ("xn--bcher-kva.de" = "bücher.de"), width and compatibility forms folded (NFKC:
    "ｇｏｏｄ.com" = "good.com"), lower-case. ß stays ß: "straße.de" (xn--strae-oqa) is not
    "strasse.de", as it would be under the IDNA 2003 mapping Python's "idna" codec does."""
    return unicode_host(unicodedata.normalize("NFKC", host.translate(_LABEL_DOTS)))
