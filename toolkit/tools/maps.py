"""Maps for judges: Mind2Web 2's `GoogleMapsTool` on the judge side, providers on the broker side.

A judge calls `GoogleMapsTool().calculate_distance(...)` exactly as in Mind2Web 2; the call
travels as `maps.<method>` through the tool channel to the runner's broker, where
`maps_tools(provider)` shapes a `MapsProvider`'s raw answers into Mind2Web 2's return values
(meters, seconds, a city name, the geocoding results, or their "... not found" strings).
The judge process never holds the API key. Invariant: a failure to reach the maps service is
an `InfraError` (node `error`), while an address the service cannot resolve is an ordinary
"not found" answer. The Google provider lives in `toolkit.tools.google_maps` (over httpx2), so
a run that builds no maps provider does not import an HTTP client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from toolkit.config import MAPS_KEY_ENV
from toolkit.errors import InfraError
from toolkit.tools import call_tool

TRAVEL_MODES = ("driving", "walking", "transit")
CITY_LEVELS = ("locality", "sublocality")
API_KEY_ENV = MAPS_KEY_ENV
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
    "GoogleMapsTool",
    "MapsProvider",
    "maps_tools",
]

ToolFunction = Callable[..., Awaitable[Any]]


def check_mode(mode: str) -> None:
    """Reject a travel mode Google does not know (the ValueError Mind2Web 2 raises)."""
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
        check_mode(mode)
        return await call_tool(
            "maps.calculate_distance", address1=address1, address2=address2, mode=mode
        )

    async def calculate_travel_time(
        self, address1: str, address2: str, mode: str = "driving"
    ) -> int | str:
        """Travel time in seconds from `address1` to `address2`, or "Travel time not found"."""
        check_mode(mode)
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
        check_mode(mode)
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
