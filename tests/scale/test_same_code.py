"""Every actor of a cluster run must run the driver's judgegen code: a node on another version
would have its evaluations recorded under this code's fingerprint, and taken for fresh."""

from __future__ import annotations

import pytest

from toolkit.runner.fingerprint import toolkit_identity
from toolkit.scale.cluster import check_same_code
from toolkit.scale.errors import ClusterError


def test_actors_running_the_drivers_code_pass() -> None:
    check_same_code({"node-a": toolkit_identity(), "node-b (the gateway)": toolkit_identity()})


def test_a_node_on_other_code_stops_the_run_naming_it_and_the_fix() -> None:
    ours = toolkit_identity()
    with pytest.raises(ClusterError) as raised:
        check_same_code({"node-a": ours, "node-b": "0.1.0+code.0123456789abcdef", "node-c": ""})
    message = str(raised.value)
    assert message.startswith("2 node(s) run other judgegen code than this driver")
    assert "node-b: 0.1.0+code.0123456789abcdef" in message and "node-c: unknown" in message
    assert "node-a" not in message and "Install the same judgegen on every node" in message
