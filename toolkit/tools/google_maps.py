"""`GoogleMapsProvider`: the broker-side `MapsProvider` over Google's Geocoding and Directions
web services (httpx2). `toolkit.tools.maps` re-exports it and loads it on first use."""

from __future__ import annotations

import asyncio
import os
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import httpx2

from toolkit.errors import InfraError
from toolkit.tools.maps import API_KEY_ENV, GOOGLE_MAPS_BASE_URL, check_mode
from toolkit.util.redact import redact

_EMPTY_STATUSES = frozenset({"ZERO_RESULTS", "NOT_FOUND"})
_RETRY_STATUSES = frozenset({"OVER_QUERY_LIMIT", "UNKNOWN_ERROR"})


class _KeyedTransport(httpx2.AsyncBaseTransport):
    """Adds the API key to each request's query on its way to the wire.

    The key is added below the client, so the client's request log (httpx2 logs every URL
    at INFO), its `Request` objects and its exceptions never contain it.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport, key: str) -> None:
        self._inner = inner
        self._key = key

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        wire = httpx2.Request(
            request.method,
            request.url.copy_set_param("key", self._key),
            headers=request.headers,
            extensions=request.extensions,
        )
        return await self._inner.handle_async_request(wire)

    async def aclose(self) -> None:
        await self._inner.aclose()


class GoogleMapsProvider:
    """Google's Geocoding and Directions web services over httpx2.

    The key is read from the environment (`GOOGLE_MAPS_API_KEY`) at each call and never
    appears in errors or logs. Rate limits, 5xx and transport errors are retried up to
    `max_attempts` times with doubling delays; other failures raise `InfraError` at once.
    With `trust_env`, the standard proxy variables (`https_proxy`, `no_proxy`) apply.
    """

    def __init__(
        self,
        *,
        base_url: str = GOOGLE_MAPS_BASE_URL,
        timeout: float = 30.0,
        max_attempts: int = 3,
        retry_delay: float = 1.0,
        trust_env: bool = True,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.trust_env = trust_env

    async def geocode(self, address: str) -> list[dict[str, Any]]:
        """Google's geocoding `results` for `address`."""
        body = await self._get("geocode", {"address": address})
        return list(body.get("results") or [])

    async def directions(self, origin: str, destination: str, mode: str) -> list[dict[str, Any]]:
        """Google's directions `routes` from `origin` to `destination` by `mode`."""
        check_mode(mode)
        params = {"origin": origin, "destination": destination, "mode": mode}
        body = await self._get("directions", params)
        return list(body.get("routes") or [])

    def _key(self) -> str:
        key = os.environ.get(API_KEY_ENV, "").strip()
        if not key:
            raise InfraError(
                f"maps: no API key; set {API_KEY_ENV} in the runner's environment", kind="tool"
            )
        return key

    def _proxy(self) -> str | None:
        if not self.trust_env:
            return None
        parts = urlsplit(self.base_url)
        if urllib.request.proxy_bypass(parts.hostname or ""):
            return None
        return urllib.request.getproxies().get(parts.scheme)

    def _client(self, key: str) -> httpx2.AsyncClient:
        inner = httpx2.AsyncHTTPTransport(trust_env=self.trust_env, proxy=self._proxy())
        return httpx2.AsyncClient(
            transport=_KeyedTransport(inner, key), timeout=self.timeout, trust_env=False
        )

    async def _get(self, service: str, params: dict[str, str]) -> dict[str, Any]:
        key = self._key()
        url = f"{self.base_url}/{service}/json"
        problem = "no attempt made"
        delay = self.retry_delay
        async with self._client(key) as client:
            for attempt in range(1, self.max_attempts + 1):
                if attempt > 1:
                    await asyncio.sleep(delay)
                    delay *= 2
                body, problem, retry = await self._attempt(client, url, params)
                if body is not None:
                    return body
                if not retry:
                    break
        raise InfraError(f"maps {service}: {redact(problem)}", kind="tool")

    async def _attempt(
        self, client: httpx2.AsyncClient, url: str, params: dict[str, str]
    ) -> tuple[dict[str, Any] | None, str, bool]:
        """One request: (body, "", _) on success, else (None, problem, retryable)."""
        try:
            response = await client.get(url, params=params)
        except httpx2.TransportError as exc:
            return None, f"transport error ({type(exc).__name__})", True
        if response.status_code != 200:
            return None, f"HTTP {response.status_code}", response.status_code >= 500
        try:
            body = response.json()
        except ValueError:
            return None, "response is not JSON", False
        status = body.get("status") if isinstance(body, dict) else None
        if status == "OK" or status in _EMPTY_STATUSES:
            return body, "", False
        detail = str(body.get("error_message") or "") if isinstance(body, dict) else ""
        problem = f"status {status}" + (f": {detail}" if detail else "")
        return None, problem, status in _RETRY_STATUSES
