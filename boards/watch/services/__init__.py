"""Writes of the watcher: the sweep, the breaker's trips, the webhook outbox and sender."""
