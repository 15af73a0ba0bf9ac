"""Deterministic checks a judge can use instead of an LLM call (placeholder, being written)."""
