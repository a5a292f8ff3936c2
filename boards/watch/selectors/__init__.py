"""Reads of the watcher: what is due, which breaker pattern matches, the delivery log."""
