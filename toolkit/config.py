"""Reading judgegen's optional configuration file, `judgegen.toml`.

Precedence everywhere: command-line flag > environment variable > `judgegen.toml` > default.
The file is looked up in the current directory and its parents (the repository root,
normally); `JUDGEGEN_CONFIG` names one explicitly. Credentials are never read from it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from toolkit.errors import SpecError

CONFIG_NAME = "judgegen.toml"
CONFIG_ENV = "JUDGEGEN_CONFIG"
MAPS_KEY_ENV = "GOOGLE_MAPS_API_KEY"
"""The Google Maps key's variable: read by the maps provider (`toolkit.tools.google_maps`),
and by `judgegen run` to tell which provider judges are offered without loading the tools."""
FORBIDDEN_KEYS = ("api_key", "apikey", "token", "secret", "password")


def find_config(start: Path | None = None) -> Path | None:
    """`$JUDGEGEN_CONFIG`, else the nearest `judgegen.toml` from `start` upwards, else None."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_section(section: str, path: Path | None = None) -> dict[str, Any]:
    """The `[section]` table of the config file (empty when there is no file or no table)."""
    path = path or find_config()
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(
            str(path), section, f"cannot read it ({exc})", "fix the TOML syntax"
        ) from None
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise SpecError(str(path), section, "is not a table", f"write it as [{section}]")
    _reject_secrets(path, section, table)
    return table


def _reject_secrets(path: Path, section: str, table: dict[str, Any]) -> None:
    for key, value in table.items():
        if any(word in key.lower() for word in FORBIDDEN_KEYS):
            raise SpecError(
                str(path),
                f"{section}.{key}",
                "credentials are not read from files",
                "remove it and set the provider's API key environment variable instead",
            )
        if isinstance(value, dict):
            _reject_secrets(path, f"{section}.{key}", value)
