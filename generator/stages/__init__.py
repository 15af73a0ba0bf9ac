"""Generation stages, in pipeline order: spec → context (with the API reference) → draft →
lint → debug → reflect → publish; `pipeline` runs them, `tape` records every LLM call."""
