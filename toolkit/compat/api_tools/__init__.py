"""`mind2web2.api_tools` for imported judges: `tool_googlemap` is `toolkit.tools.maps`."""

from __future__ import annotations

from toolkit.tools import maps as tool_googlemap
from toolkit.tools.maps import GoogleMapsTool

__all__ = ["GoogleMapsTool", "tool_googlemap"]
