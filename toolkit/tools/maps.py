"""Maps for judges: Mind2Web 2's `GoogleMapsTool` on the judge side, providers on the broker side.

A judge calls `GoogleMapsTool().calculate_distance(...)` exactly as in Mind2Web 2; the call
travels as `maps.<method>` through the tool channel to the runner's broker, where
`maps_tools(provider)` shapes a `MapsProvider`'s raw answers into Mind2Web 2's return values
(meters, seconds, a city name, the geocoding results, or their "... not found" strings).
The judge process never holds the API key. Invariant: a failure to reach the maps service is
an `InfraError` (node `error`), while an address the service cannot resolve is an ordinary
"not found" answer.
"""

from __future__ import annotations

import asyncio
import os
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx2

from toolkit.errors import InfraError
from toolkit.tools import call_tool
from toolkit.util.redact import redact

TRAVEL_MODES = ("driving", "walking", "transit")
CITY_LEVELS = ("locality", "sublocality")
API_KEY_ENV = "GOOGLE_MAPS_API_KEY"
GOOGLE_MAPS_BASE_URL = "https://maps.googleapis.com/maps/api"
CITY_NOT_FOUND = "City/Sub-city name not found"
DISTANCE_NOT_FOUND = "Distance not found"
TRAVEL_TIME_NOT_FOUND = "Travel time not found"
MAPS_TOOL_NAMES = (
    "maps.get_city_name",
    "maps.get_address_information",
    "maps.calculate_distance",
    "maps.calculate_travel_time",
)

__all__ = [
    "API_KEY_ENV",
    "CITY_LEVELS",
    "MAPS_TOOL_NAMES",
    "TRAVEL_MODES",
    "GoogleMapsProvider",
    "GoogleMapsTool",
    "MapsProvider",
    "maps_tools",
]

ToolFunction = Callable[..., Awaitable[Any]]


def _check_mode(mode: str) -> None:
    if mode not in TRAVEL_MODES:
        raise ValueError(f"Invalid mode {mode!r}. Must be one of {list(TRAVEL_MODES)}")


def _check_level(level: str) -> None:
    if level not in CITY_LEVELS:
        raise ValueError(f"Invalid level {level!r}. Must be one of {list(CITY_LEVELS)}")


class GoogleMapsTool:
    """What a judge uses: Mind2Web 2's maps methods, answered by the runner's maps provider.

    Constructed with no arguments. Each method raises `InfraError` when no maps provider is
    configured or the service fails, so the evaluation is reported incomplete, not scored.
    """

    async def get_city_name(self, address: str, level: str = "locality") -> str:
        """The city (`locality`) or district (`sublocality`) of `address`, or a not-found text."""
        _check_level(level)
        return await call_tool("maps.get_city_name", address=address, level=level)

    async def get_address_information(self, address: str) -> list[dict[str, Any]]:
        """The raw geocoding results for `address` (Google's `results` list; empty if unknown)."""
        return await call_tool("maps.get_address_information", address=address)

    async def calculate_distance(
        self, address1: str, address2: str, mode: str = "driving"
    ) -> int | str:
        """Route distance in meters from `address1` to `address2`, or "Distance not found"."""
        _check_mode(mode)
        return await call_tool(
            "maps.calculate_distance", address1=address1, address2=address2, mode=mode
        )

    async def calculate_travel_time(
        self, address1: str, address2: str, mode: str = "driving"
    ) -> int | str:
        """Travel time in seconds from `address1` to `address2`, or "Travel time not found"."""
        _check_mode(mode)
        return await call_tool(
            "maps.calculate_travel_time", address1=address1, address2=address2, mode=mode
        )


class MapsProvider(Protocol):
    """The broker-side seam: raw geocoding and directions, in Google's JSON shapes.

    `geocode` returns the `results` list, `directions` the `routes` list; both are empty when
    the service knows no answer. Service failures raise `InfraError`.
    """

    async def geocode(self, address: str) -> list[dict[str, Any]]: ...

    async def directions(
        self, origin: str, destination: str, mode: str
    ) -> list[dict[str, Any]]: ...


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
        _check_mode(mode)
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


def _missing_provider(name: str) -> ToolFunction:
    async def unavailable(**args: Any) -> Any:
        raise InfraError(
            f"tool '{name}' is not available: no maps provider is configured "
            f"(set {API_KEY_ENV} to use Google Maps)",
            kind="tool",
        )

    return unavailable


def _malformed(service: str, exc: Exception) -> InfraError:
    return InfraError(
        f"maps {service}: unexpected response shape ({type(exc).__name__}: {exc})", kind="tool"
    )


def maps_tools(provider: MapsProvider | None) -> dict[str, ToolFunction]:
    """The broker's `maps.*` tool functions over `provider` (InfraError when it is None)."""
    if provider is None:
        return {name: _missing_provider(name) for name in MAPS_TOOL_NAMES}

    async def get_city_name(address: str, level: str = "locality") -> str:
        _check_level(level)
        results = await provider.geocode(address)
        try:
            components = results[0]["address_components"] if results else []
            return next((c["long_name"] for c in components if level in c["types"]), CITY_NOT_FOUND)
        except (KeyError, TypeError, IndexError) as exc:
            raise _malformed("geocode", exc) from None

    async def get_address_information(address: str) -> list[dict[str, Any]]:
        return await provider.geocode(address)

    async def route_value(address1: str, address2: str, mode: str, field: str) -> int | None:
        _check_mode(mode)
        routes = await provider.directions(address1, address2, mode)
        if not routes:
            return None
        try:
            return int(routes[0]["legs"][0][field]["value"])
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise _malformed("directions", exc) from None

    async def calculate_distance(address1: str, address2: str, mode: str = "driving") -> int | str:
        value = await route_value(address1, address2, mode, "distance")
        return DISTANCE_NOT_FOUND if value is None else value

    async def calculate_travel_time(
        address1: str, address2: str, mode: str = "driving"
    ) -> int | str:
        value = await route_value(address1, address2, mode, "duration")
        return TRAVEL_TIME_NOT_FOUND if value is None else value

    return {
        "maps.get_city_name": get_city_name,
        "maps.get_address_information": get_address_information,
        "maps.calculate_distance": calculate_distance,
        "maps.calculate_travel_time": calculate_travel_time,
    }
