"""Small utilities shared across toolkit and generator: hashing, atomic writes, redaction."""
