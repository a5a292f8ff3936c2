"""The claim queue's rule in plain Python: the reference model (oracle) that
`liza_claim_queue_v1` (boards migration 0021) is held equal to.

This is the rule claim-next and `/work` followed as ORM filters until issue 26 moved it into one
SQL function (`boards.coordination.selectors.tasks.claim_candidates` before that change), restated
over plain
values so that a reader can check it against the seeds at a glance. Product code never imports
it: the SQL is the product's only implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

TERMINAL_GOAL_STATES = ("COMPLETED", "ABORTED")


@dataclass(frozen=True)
class Card:
    """What the rule reads of one task."""

    pk: int
    status: str
    assigned_to: str
    suspended: bool
    goal_status: str | None  # None: the task has no goal
    dependency_statuses: tuple[str, ...]
    handoff_pending: bool
    crashes: int
    lease_expires: datetime | None
    priority: int
    created: datetime


def retry_due(card: Card, *, now: datetime, grace: int, backoff: list[int]) -> bool:
    """Seed 003: a dead lease is claimable again strictly after lease_expires + lease_grace +
    backoff[crashes]; once crashes reach the schedule's length, strictly after the grace."""
    if card.lease_expires is None:
        return False
    wait = 0 if card.crashes >= len(backoff) else backoff[card.crashes]
    return card.lease_expires + timedelta(seconds=grace + wait) < now


def queue_of(
    card: Card, *, agent_id: str, now: datetime, grace: int, backoff: list[int]
) -> int | None:
    """1 the coder's own REJECTED, 2 INTEGRATION_FAILED, 3 UNCLAIMED with its dependencies
    MERGED, 4 CLAIMED with a dead lease past its backoff and no pending handoff; else None."""
    if card.suspended or card.goal_status in TERMINAL_GOAL_STATES:
        return None
    deps_met = all(status == "MERGED" for status in card.dependency_statuses)
    if card.status == "REJECTED":
        return 1 if card.assigned_to == agent_id else None
    if card.status == "INTEGRATION_FAILED":
        return 2
    if card.status == "UNCLAIMED":
        return 3 if deps_met else None
    if card.status == "CLAIMED" and not card.handoff_pending and deps_met:
        return 4 if retry_due(card, now=now, grace=grace, backoff=backoff) else None
    return None


def queues(
    cards: list[Card], *, agent_id: str, now: datetime, grace: int, backoff: list[int]
) -> list[list[int]]:
    """The four queues' task pks, each by priority, then age, then id (claim-next's order)."""
    found: list[list[Card]] = [[], [], [], []]
    for card in cards:
        n = queue_of(card, agent_id=agent_id, now=now, grace=grace, backoff=backoff)
        if n is not None:
            found[n - 1].append(card)
    return [[c.pk for c in sorted(q, key=lambda c: (c.priority, c.created, c.pk))] for q in found]
