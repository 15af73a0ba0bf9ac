"""Which service answers an SDK provider's calls, as one identity: the provider's name, the
server when it is not the official API, and the structured-output mode when not the default
(`openai`, `openai@http://localhost:8000/v1`, `openai@http://localhost:8000/v1 mode=json`).

The identity is every request's `provider`, so it is part of each cache key and ledger row, and
the server and mode are part of a result's fingerprint: answers from one server (two local
servers may serve the same model name), or asked for another way, are never served or kept as
another's. An offline provider is named for what answers, the policy or the recordings
(`scripted:pkg.mod:func`, `replay:/abs/recordings recorded=<hash>`), so switching either
never serves the other's cached answers; `kind_of` gives the kind prices go by. Stdlib only: a rerun with nothing to redo computes fingerprints without the SDKs.
"""

from __future__ import annotations

import os
import re
from typing import Final
from urllib.parse import SplitResult, urlsplit, urlunsplit

from toolkit.errors import LLMError

URL_VARIABLES: Final = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
"""The variable each SDK reads its server from when none is passed."""
KEY_VARIABLES: Final = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN",
}
"""The variables each SDK (and judgegen for a --base-url) reads the key it sends from."""
OFFICIAL_DOMAINS: Final = {"openai": "openai.com", "anthropic": "anthropic.com"}
"""Servers on these domains (the API, its mTLS and data-residency hosts) serve one service."""
DEFAULT_MODES: Final = {"openai": "native", "anthropic": "auto"}


def server(kind: str, base_url: str | None) -> str | None:
    """The server the `kind` SDK calls when it is not the official API: `base_url`, else the
    SDK's own variable, without user info or query (they may hold credentials, and the name
    is written to ledgers, recordings and results); None for the official API or a provider
    without a server."""
    if kind not in URL_VARIABLES:
        return None
    url = (base_url or os.environ.get(URL_VARIABLES[kind]) or "").strip()
    if not url or _official(kind, url):
        return None
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, _host_and_port(parts), parts.path, "", ""))


def identity(kind: str, url: str | None, mode: str) -> str:
    """The provider's name for requests, cache keys and ledger rows (see the module doc),
    given its `server`."""
    name = kind
    if url is not None:
        name += f"@{url}"
    if mode != DEFAULT_MODES.get(kind, mode):
        name += f" mode={mode}"
    return name


def kind_of(name: str) -> str:
    """The kind of provider an identity names (what prices and budgets go by):
    `openai@http://localhost:8000/v1 mode=json` → `openai`, `scripted:pkg.mod:f` → `scripted`."""
    return re.split(r"[@: ]", name, maxsplit=1)[0]


def check_client_server(kind: str, expected: str | None, called: str) -> None:
    """Raise a config `LLMError` when the SDK client calls another server than `expected`,
    the `server` its provider is named for (the SDK found one in its own configuration, e.g.
    a profile file, or the variable changed since): its answers would be cached and
    fingerprinted as the other server's."""
    if expected is None and _official(kind, called):
        return
    if expected is not None and _same_url(expected, called):
        return
    shown = shown_url(called)
    raise LLMError(
        f"the {kind} SDK calls {shown}, but judgegen was told "
        f"{expected or 'the official API'}: set JUDGEGEN_LLM_BASE_URL={shown} so its answers "
        "are cached and recorded as that server's",
        kind="config",
    )


def shown_url(url: str) -> str:
    """`url` as judgegen shows it in messages: without user info, query or fragment (they may
    hold credentials) and without a trailing slash."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme, _host_and_port(parts), parts.path.rstrip("/"), "", ""))


def _official(kind: str, url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    domain = OFFICIAL_DOMAINS[kind]
    return urlsplit(url).scheme == "https" and (host == domain or host.endswith(f".{domain}"))


def _same_url(a: str, b: str) -> bool:
    """The same server: equal but for user info, query, the case of scheme and host, and a
    trailing slash (as the SDKs normalize)."""
    left, right = urlsplit(a.strip()), urlsplit(b.strip())
    return (
        left.scheme.lower() == right.scheme.lower()
        and _host_and_port(left).lower() == _host_and_port(right).lower()
        and left.path.rstrip("/") == right.path.rstrip("/")
    )


def _host_and_port(parts: SplitResult) -> str:
    return parts.netloc.rpartition("@")[2]
