"""Settings every test runs under."""

from __future__ import annotations

import os

# A `judgegen` started by a test never leaves a warm server behind, nor is served by one
# (tests/runner/test_warm_server.py turns it on for itself, in a folder of its own).
os.environ["JUDGEGEN_SERVER"] = "off"
