"""A maps provider answering from a script: offline runs, other services' saved answers, tests.

The script is a JSON file (`MapsScript`) of Google-shaped answers: geocoding `results` by
address, directions `routes` by (origin, destination, mode). An address the script does not
cover is an `InfraError` (node `error`, evaluation incomplete), never a "not found" verdict:
a gap in the script must not pass for the service's answer. Use it from `judgegen run` with a
factory module, e.g. `--maps mymaps:provider` where `provider()` returns
`ScriptedMapsProvider.from_file("maps.json")`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.errors import InfraError, SpecError

MAPS_SCRIPT_VERSION = 1


class ScriptedRoute(BaseModel):
    """The directions answer for one trip."""

    model_config = ConfigDict(extra="forbid")

    origin: str
    destination: str
    mode: str = "driving"
    routes: list[dict[str, Any]] = Field(description="Google's `routes` list ([] = no route).")


class MapsScript(BaseModel):
    """A maps script file: what the service answers, in Google's JSON shapes."""

    model_config = ConfigDict(extra="forbid")

    version: int = MAPS_SCRIPT_VERSION
    geocode: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="Address → Google's geocoding `results` ([] = unknown)."
    )
    directions: list[ScriptedRoute] = Field(default_factory=list)


class ScriptedMapsProvider:
    """A `MapsProvider` over a `MapsScript`; records every call in `calls`."""

    def __init__(self, script: MapsScript, source: str = "maps script") -> None:
        self.script = script
        self.source = source
        self.calls: list[tuple[str, ...]] = []
        self._routes = {(r.origin, r.destination, r.mode): r.routes for r in script.directions}

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedMapsProvider:
        """Load a script file; a malformed one is a `SpecError` naming the field."""
        path = Path(path)
        try:
            script = MapsScript.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise SpecError(
                str(path), "<file>", f"cannot be read ({exc})", "check the path"
            ) from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<file>"
            raise SpecError(
                str(path), where, first["msg"], "see toolkit.tools.scripted_maps"
            ) from exc
        return cls(script, str(path))

    async def geocode(self, address: str) -> list[dict[str, Any]]:
        """The scripted geocoding results for `address`."""
        self.calls.append(("geocode", address))
        if address not in self.script.geocode:
            raise InfraError(
                f"maps: {self.source} has no geocode answer for {address!r}; add it", kind="tool"
            )
        return self.script.geocode[address]

    async def directions(self, origin: str, destination: str, mode: str) -> list[dict[str, Any]]:
        """The scripted routes from `origin` to `destination` by `mode`."""
        self.calls.append(("directions", origin, destination, mode))
        routes = self._routes.get((origin, destination, mode))
        if routes is None:
            raise InfraError(
                f"maps: {self.source} has no {mode} directions from {origin!r} to "
                f"{destination!r}; add them",
                kind="tool",
            )
        return routes
