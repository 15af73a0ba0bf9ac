"""Maps: the judge-side tool, the broker-side tool functions, and the Google provider on loopback."""

from __future__ import annotations

import logging

import pytest
from pytest_httpserver import HTTPServer

from tests.fixtures.m2w2.scenario import DictTools, FakeMaps
from toolkit.errors import InfraError
from toolkit.tools import current_tools
from toolkit.tools.google_maps import GoogleMapsProvider
from toolkit.tools.maps import (
    API_KEY_ENV,
    MAPS_TOOL_NAMES,
    GoogleMapsTool,
    maps_tools,
)

KEY = "test-key-not-a-secret-123"
PORTLAND = "1005 W Burnside St, Portland, OR"


@pytest.fixture
def with_provider():
    """Route the judge-side tool to `maps_tools(FakeMaps())` for one test."""
    token = current_tools.set(DictTools(maps_tools(FakeMaps())))
    yield
    current_tools.reset(token)


@pytest.fixture
def google(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> GoogleMapsProvider:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    return GoogleMapsProvider(
        base_url=httpserver.url_for("/maps/api"), retry_delay=0.0, trust_env=False
    )


def geocode_body(city: str) -> dict:
    components = [{"long_name": city, "types": ["locality", "political"]}]
    return {"status": "OK", "results": [{"address_components": components}]}


def route_body(meters: int, seconds: int) -> dict:
    leg = {"distance": {"value": meters}, "duration": {"value": seconds}}
    return {"status": "OK", "routes": [{"legs": [leg]}]}


# -- without a provider ------------------------------------------------------------------


async def test_tool_without_a_channel_raises_infra_error():
    with pytest.raises(InfraError) as info:
        await GoogleMapsTool().calculate_distance("a", "b")
    assert info.value.kind == "tool"


@pytest.mark.parametrize("name", MAPS_TOOL_NAMES)
async def test_tool_functions_without_a_provider_raise_infra_error(name):
    with pytest.raises(InfraError, match="no maps provider"):
        await maps_tools(None)[name](address="x", address1="a", address2="b")


async def test_judge_call_through_a_channel_without_provider_raises_infra_error():
    token = current_tools.set(DictTools(maps_tools(None)))
    try:
        with pytest.raises(InfraError):
            await GoogleMapsTool().get_city_name("x")
    finally:
        current_tools.reset(token)


# -- judge side over a provider ----------------------------------------------------------


async def test_city_name_comes_from_the_locality_component(with_provider):
    assert await GoogleMapsTool().get_city_name(PORTLAND) == "Portland"


async def test_unknown_address_gives_mind2web2_not_found_texts(with_provider):
    tool = GoogleMapsTool()
    assert await tool.get_city_name("nowhere") == "City/Sub-city name not found"
    assert await tool.calculate_distance("a", "nowhere") == "Distance not found"
    assert await tool.calculate_travel_time("a", "nowhere") == "Travel time not found"
    assert await tool.get_address_information("nowhere") == []


async def test_distance_is_meters_and_travel_time_seconds(with_provider):
    tool = GoogleMapsTool()
    assert await tool.calculate_distance("origin", PORTLAND, mode="walking") == 1000
    assert await tool.calculate_travel_time("origin", PORTLAND, mode="transit") == 750


async def test_invalid_mode_is_rejected_before_any_call():
    with pytest.raises(ValueError, match="mode"):
        await GoogleMapsTool().calculate_distance("a", "b", mode="flying")


async def test_malformed_provider_answer_is_an_infra_error():
    class Broken:
        async def geocode(self, address):
            return [{"no_components": True}]

        async def directions(self, origin, destination, mode):
            return [{"legs": []}]

    tools = maps_tools(Broken())
    with pytest.raises(InfraError):
        await tools["maps.get_city_name"](address="x")
    with pytest.raises(InfraError):
        await tools["maps.calculate_distance"](address1="a", address2="b")


# -- Google provider on a loopback stub ----------------------------------------------------


async def test_google_geocode_sends_address_and_key(httpserver, google):
    httpserver.expect_request(
        "/maps/api/geocode/json", query_string={"address": PORTLAND, "key": KEY}
    ).respond_with_json(geocode_body("Portland"))
    city = await maps_tools(google)["maps.get_city_name"](address=PORTLAND)
    assert city == "Portland"


async def test_google_directions_give_distance_and_duration(httpserver, google):
    httpserver.expect_request(
        "/maps/api/directions/json",
        query_string={"origin": "A", "destination": "B", "mode": "transit", "key": KEY},
    ).respond_with_json(route_body(2500, 900))
    tools = maps_tools(google)
    assert (
        await tools["maps.calculate_distance"](address1="A", address2="B", mode="transit") == 2500
    )
    assert (
        await tools["maps.calculate_travel_time"](address1="A", address2="B", mode="transit") == 900
    )


async def test_google_zero_results_is_not_found_not_an_error(httpserver, google):
    httpserver.expect_request("/maps/api/directions/json").respond_with_json(
        {"status": "ZERO_RESULTS", "routes": []}
    )
    distance = await maps_tools(google)["maps.calculate_distance"](address1="A", address2="B")
    assert distance == "Distance not found"


async def test_google_request_denied_is_an_infra_error_without_the_key(httpserver, google):
    httpserver.expect_request("/maps/api/geocode/json").respond_with_json(
        {"status": "REQUEST_DENIED", "error_message": f"The key {KEY} is invalid."}
    )
    with pytest.raises(InfraError) as info:
        await google.geocode("x")
    assert "REQUEST_DENIED" in str(info.value)
    assert KEY not in str(info.value)
    assert info.value.__cause__ is None


async def test_google_server_error_is_retried(httpserver, google):
    httpserver.expect_oneshot_request("/maps/api/geocode/json").respond_with_data("", status=503)
    httpserver.expect_request("/maps/api/geocode/json").respond_with_json(geocode_body("Salem"))
    assert (await google.geocode("x"))[0]["address_components"][0]["long_name"] == "Salem"
    assert len(httpserver.log) == 2


async def test_google_persistent_server_error_ends_in_infra_error(httpserver, google):
    httpserver.expect_request("/maps/api/geocode/json").respond_with_data("", status=500)
    with pytest.raises(InfraError, match="HTTP 500"):
        await google.geocode("x")
    assert len(httpserver.log) == google.max_attempts


async def test_google_client_error_is_not_retried(httpserver, google):
    httpserver.expect_request("/maps/api/geocode/json").respond_with_data("", status=403)
    with pytest.raises(InfraError, match="HTTP 403"):
        await google.geocode("x")
    assert len(httpserver.log) == 1


async def test_google_without_a_key_raises_infra_error_and_sends_nothing(
    httpserver, google, monkeypatch
):
    monkeypatch.delenv(API_KEY_ENV)
    with pytest.raises(InfraError, match=API_KEY_ENV):
        await google.directions("A", "B", "driving")
    assert httpserver.log == []


async def test_unreachable_service_is_an_infra_error(monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, KEY)
    provider = GoogleMapsProvider(
        base_url="http://127.0.0.1:9/maps/api", max_attempts=1, trust_env=False
    )
    with pytest.raises(InfraError, match="transport error") as info:
        await provider.geocode("x")
    assert KEY not in str(info.value)


async def test_google_rate_limit_status_is_retried(httpserver, google):
    httpserver.expect_oneshot_request("/maps/api/geocode/json").respond_with_json(
        {"status": "OVER_QUERY_LIMIT", "results": []}
    )
    httpserver.expect_request("/maps/api/geocode/json").respond_with_json(geocode_body("Bend"))
    city = await maps_tools(google)["maps.get_city_name"](address="x")
    assert city == "Bend"


async def test_google_key_never_reaches_the_http_client_log(httpserver, google, caplog):
    httpserver.expect_request("/maps/api/geocode/json").respond_with_json(geocode_body("Eugene"))
    with caplog.at_level(logging.DEBUG):
        await google.geocode("x")
    assert httpserver.log[0][0].args["key"] == KEY
    client_side = [r for r in caplog.records if not r.name.startswith("werkzeug")]
    assert any(r.name == "httpx2" for r in client_side)
    assert all(KEY not in record.getMessage() for record in client_side)
