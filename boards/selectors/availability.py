"""Agent availability (seed 003 agent component: IDLE/PROCESSING, OVERLOADED, ERROR, DISABLED).

One answer per agent, read by claims (refused), claim-next, `/work` (wait) and the board's
agents panel:

- **disabled**: a project admin disabled the identity (`Agent.enabled`); its key is refused on
  every request (403), what it held was taken back.
- **error**: `ERROR_EXPIRIES` lease expiries of the agent (events `lease_expired`, written by
  the watcher) within the last `ERROR_WINDOW` seconds, counting only those after an admin's
  clear (`Agent.error_cleared_at`). It clears by itself once the third most recent expiry is
  older than the window (seed 003 spec 026: "3 timeouts in 5 min → pause that agent").
- **overloaded**: set by a project admin (`Agent.overloaded`): the agent keeps what it holds
  and heartbeats, but takes no new task or review until set available again. Liza coders hold
  one task at a time, so seed 003's "queue full" has no capacity to measure here: it is the
  operator's word that the agent's machine has no room.
- **enabled**: none of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from agents.models import Agent
from boards.models import Event
from boards.protocol import Action

ERROR_EXPIRIES = 3
ERROR_WINDOW = 300  # seconds

DISABLED, ERROR, OVERLOADED, ENABLED = "disabled", "error", "overloaded", "enabled"
STATES = (ENABLED, DISABLED, OVERLOADED, ERROR)


@dataclass(frozen=True)
class Availability:
    state: str
    reason: str = ""
    until: datetime | None = None  # when an error clears by itself

    @property
    def takes_work(self) -> bool:
        return self.state == ENABLED

    def retry_after(self, now: datetime, default: int) -> int:
        if self.until is None:
            return default
        return max(1, math.ceil((self.until - now).total_seconds()))


def _counts(agent: Agent, at: datetime, now: datetime) -> bool:
    """A lease expiry at `at` counts towards the agent's error: inside the window, after the
    last clear."""
    return now - timedelta(seconds=ERROR_WINDOW) < at <= now and (
        agent.error_cleared_at is None or at > agent.error_cleared_at
    )


def _error_until(expiries: list[datetime]) -> datetime | None:
    """Given the counting expiries, newest first: when the error clears (the oldest of the last
    three leaves the window), or None when there are too few for an error."""
    if len(expiries) < ERROR_EXPIRIES:
        return None
    return expiries[ERROR_EXPIRIES - 1] + timedelta(seconds=ERROR_WINDOW)


def _lease_expiries(project_id: int, now: datetime):
    """(agent id, when) of the project's lease expiries in the window, newest first."""
    return (
        Event.objects.filter(
            project_id=project_id,
            action=Action.LEASE_EXPIRED,
            outcome=Event.Outcome.APPLIED,
            timestamp__gt=now - timedelta(seconds=ERROR_WINDOW),
            timestamp__lte=now,
        )
        .order_by("-timestamp")
        .values_list("data__agent", "timestamp")
    )


def agent_in_error(agent: Agent, now: datetime) -> datetime | None:
    """THE "agent in error" predicate: when the error clears by itself, or None when the agent
    is not in error. Its one source today is repeated lease expiries (recorded by the watcher);
    a crash loop reported by the agent's supervisor (issue 11, the agent client's slice) is to
    be added here, so claims, `/work` and the board follow."""
    expiries = [
        at
        for _, at in _lease_expiries(agent.project_id, now).filter(data__agent=agent.agent_id)
        if _counts(agent, at, now)
    ]
    return _error_until(expiries)


def _availability(agent: Agent, error_until: datetime | None) -> Availability:
    """The order of the states: disabled over error over overloaded."""
    if not agent.enabled:
        return Availability(DISABLED, f"{agent.agent_id} is disabled")
    if error_until is not None:
        return Availability(
            ERROR,
            f"{agent.agent_id} is in error: {ERROR_EXPIRIES} lease expiries within "
            f"{ERROR_WINDOW // 60} min; it clears by itself at {error_until:%H:%M:%S}Z "
            "or when a project admin sets it available",
            error_until,
        )
    if agent.overloaded:
        return Availability(
            OVERLOADED, f"{agent.agent_id} is overloaded: it takes no new work until set available"
        )
    return Availability(ENABLED)


def agent_availability(agent: Agent, now: datetime) -> Availability:
    """What claims, claim-next and `/work` respect (one query when the agent is enabled)."""
    return _availability(agent, None if not agent.enabled else agent_in_error(agent, now))


def agents_availability(
    *, project_id: int, agents: list[Agent], now: datetime
) -> dict[int, Availability]:
    """`agent_availability` for the board's agents panel in one query: agent pk → state."""
    by_id = {a.agent_id: a for a in agents}
    stamps: dict[str, list[datetime]] = {}
    for agent_id, at in _lease_expiries(project_id, now):
        agent = by_id.get(agent_id)
        if agent is not None and _counts(agent, at, now):
            stamps.setdefault(agent_id, []).append(at)
    return {a.pk: _availability(a, _error_until(stamps.get(a.agent_id, []))) for a in agents}
