"""Scale-out on Ray: judge runs and page capture spread over a cluster's nodes.

Loaded only for `--ray` (Ray is the optional extra `judgegen[ray]`). What runs where:
the driver (the CLI process) schedules and is the one results and page-store writer; one
`Gateway` actor on the driver's node owns the LLM backend (keys, limits, budget, ledger,
cache), the page store reads and the tools; one `NodeRunner` actor per node runs judges in
its local sandboxed pool and captures pages with its local Chromium.
"""
