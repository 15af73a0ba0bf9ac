"""Utilities shared across the toolkit and the generator: no domain knowledge lives here."""
