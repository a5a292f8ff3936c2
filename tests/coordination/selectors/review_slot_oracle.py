"""The review-slot rule in plain Python: the reference model (oracle) that `liza_review_slot_v2`
(boards migration 0028) is held equal to.

This is the rule review claims, review claim-next and `/work` followed in Python until issue 26
moved it into one SQL function (`boards.coordination.selectors.reviews.review_slot_refusal`
before that change), restated over plain values, with what v2 added: a reviewer that gave back
its review of the task's current round (a review of it closed without a verdict, and its
`review_released` after the task last entered READY_FOR_REVIEW, the last of its own this round
not made while its session was stopping) gets `released`. Product code
never imports it: the SQL is the product's only implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

TERMINAL_GOAL_STATES = ("COMPLETED", "ABORTED")
REQUIRED_APPROVALS = {"standard": 1, "complex": 2, "security-sensitive": 2}  # seed 001


@dataclass(frozen=True)
class Claim:
    """One open review of the task's round."""

    reviewer: str
    verdict: str  # "", "APPROVED" or "REJECTED"
    lease_expires: datetime | None


@dataclass(frozen=True)
class Mark:
    """One event of the task's log, in append order: what the rule reads of it."""

    action: str
    actor_kind: str  # "agent", "human" or "system"
    actor_id: str
    outcome: str  # "applied" or "rejected"
    from_status: str
    to_status: str
    stopping: bool = False  # a give-back's data says its session was stopping


@dataclass(frozen=True)
class Card:
    """What the rule reads of one task."""

    pk: int
    status: str
    suspended: bool
    goal_status: str | None  # None: the task has no goal
    assigned_to: str
    failed_by: tuple[str, ...]
    criticality: str
    round: tuple[Claim, ...]
    closed: tuple[Claim, ...]  # the task's closed reviews, of every round
    history: tuple[Mark, ...]
    priority: int
    created: datetime


@dataclass(frozen=True)
class Reviewer:
    agent_id: str
    status: str
    security_reviewer: bool


def released_this_round(history: tuple[Mark, ...]) -> set[str]:
    """The agents that gave back their review of the current round, judging they could not
    finish it: each submission (an applied move into READY_FOR_REVIEW from another state) starts
    the round afresh, and an agent's last give-back decides — one because its session was
    stopping does not count, nor brings back a judgement before it."""
    released: set[str] = set()
    for mark in history:
        if mark.outcome != "applied":
            continue
        if mark.to_status == "READY_FOR_REVIEW" and mark.from_status != "READY_FOR_REVIEW":
            released = set()
        elif mark.action == "review_released" and mark.actor_kind == "agent":
            if mark.stopping:
                released.discard(mark.actor_id)
            else:
                released.add(mark.actor_id)
    return released


def slot(
    card: Card, reviewer: Reviewer, *, security_ids: set[str], now: datetime, grace: int
) -> str | None:
    """None when `reviewer` may claim a review of `card` now, else why not."""
    if card.status != "READY_FOR_REVIEW":
        return "status"
    if card.suspended:
        return "suspended"
    if card.goal_status in TERMINAL_GOAL_STATES:
        return "goal"
    if reviewer.agent_id == card.assigned_to or reviewer.agent_id in card.failed_by:
        return "coded"  # nobody reviews their own work
    if reviewer.status not in ("STARTING", "IDLE"):
        return "busy"
    # Held: a verdict given, or a claim whose lease is alive (the grace included).
    held = [
        c
        for c in card.round
        if c.verdict
        or (c.lease_expires is not None and c.lease_expires + timedelta(seconds=grace) > now)
    ]
    if any(c.reviewer == reviewer.agent_id for c in held):
        return "held"
    approving = [c.reviewer for c in held if c.verdict == "APPROVED"]
    active = [c.reviewer for c in held if not c.verdict]
    free = REQUIRED_APPROVALS[card.criticality] - len(approving) - len(active)
    if free <= 0:
        return "full"
    if (
        card.criticality == "security-sensitive"
        and free == 1
        and not reviewer.security_reviewer
        and not (set(approving) | set(active)) & security_ids
    ):
        return "security"
    let_go = any(c.reviewer == reviewer.agent_id and not c.verdict for c in card.closed)
    if let_go and reviewer.agent_id in released_this_round(card.history):
        return "released"  # open, but claim-next passes it over; a named claim takes it
    return None


def reviewable(
    cards: list[Card], reviewer: Reviewer, *, security_ids: set[str], now: datetime, grace: int
) -> list[int]:
    """The tasks whose slot is open to `reviewer`, by priority, then age, then id."""
    asked = {"security_ids": security_ids, "now": now, "grace": grace}
    open_to = [c for c in cards if slot(c, reviewer, **asked) is None]
    return [c.pk for c in sorted(open_to, key=lambda c: (c.priority, c.created, c.pk))]
