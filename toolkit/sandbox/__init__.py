"""The sandbox: untrusted judges run in confined worker processes, talking to the parent's broker.

`pool` (parent) starts workers wrapped by `isolation`; `worker` is the fork server inside the
sandbox, `job` the process that runs one judge under `confinement`'s guards; `broker` answers
the judge's LLM, page and tool calls in the parent; `protocol` is what crosses the boundary.
"""
