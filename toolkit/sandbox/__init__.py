"""The sandbox: untrusted judges run in confined job processes, talking to the parent's broker.

`launch` starts the fork server (`worker`) wrapped by `isolation`; `pool` (parent) adopts it
and, per evaluation, hands a fresh socket to it, and the fork server forks a `job` process
that runs one judge under `confinement`'s guards and talks over that socket directly to the
parent's `broker`; `protocol` is what crosses the boundary.
"""
