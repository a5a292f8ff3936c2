"""Lease liveness (seed 002 "Lease Model"): one rule for coder and review leases."""

from __future__ import annotations

from datetime import datetime, timedelta

from boards.coordination.models.projects import ProjectConfig


def lease_alive(expires: datetime | None, now: datetime, config: ProjectConfig) -> bool:
    """A holder may still act within `lease_grace` after its lease expired (seed 002 "Watcher
    grace period"), and nobody may take its work over before that grace has passed.

    The same rule for a coder's task lease and a reviewer's review lease: the heartbeat extends
    either while it is alive, so a claim must not take either while it is alive.
    """
    return expires is not None and expires + timedelta(seconds=config.lease_grace) > now


def lease_stale_before(now: datetime, config: ProjectConfig) -> datetime:
    """Leases that expired before this instant are dead (`lease_alive` as a query bound)."""
    return now - timedelta(seconds=config.lease_grace)
