"""The runner: loads judges, runs them in sandboxed workers, and writes results and metrics."""
