"""`mind2web2.verification_tree` for imported judges: judgegen's rubric tree types."""

from __future__ import annotations

from toolkit.tree import AggregationStrategy, VerificationNode

__all__ = ["AggregationStrategy", "VerificationNode"]
