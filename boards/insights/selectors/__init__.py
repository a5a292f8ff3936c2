"""The insights reads (no writes)."""
