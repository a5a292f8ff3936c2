"""Agent availability (seed 003 agent component: IDLE/PROCESSING, OVERLOADED, ERROR, DISABLED).

One answer per agent, read by claims (refused), claim-next, `/work` (wait) and the board's
agents panel:

- **disabled**: a project admin disabled the identity (`Agent.enabled`); its key is refused on
  every request (403), what it held was taken back.
- **error**: `ERROR_EXPIRIES` lease expiries of the agent (events `lease_expired`, written by
  the watcher) within the last `ERROR_WINDOW` seconds (seed 003 spec 026: "3 timeouts in 5 min
  → pause that agent"), or as many crashes of its supervised agent command (events
  `agent_crashed`, written when `liza supervise` reports a run that exited neither 0 nor 42:
  seed 000's crash loop), counting only those after an admin's clear
  (`Agent.error_cleared_at`). It clears by itself once the third most recent of them is older
  than the window.
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

from django.db import connection

from agents.models import Agent
from boards.coordination.models.records import Event
from boards.errors import NotRegistered
from boards.protocol import Action, format_timestamp

ERROR_EXPIRIES = 3
ERROR_WINDOW = 300  # seconds

DISABLED, ERROR, OVERLOADED, ENABLED = "disabled", "error", "overloaded", "enabled"
STATES = (ENABLED, DISABLED, OVERLOADED, ERROR)


def departed_refusal(agent: Agent) -> str | None:
    """Why `agent` may take no work because its session ended, or None: it left
    (`agent_leave`, `Agent.left_at`) and has not registered since. Its heartbeat is refused
    (`not_registered`, `liza_heartbeat_v2`), so a claim would hand it a lease nobody keeps;
    the original Liza deletes its registry entry on exit. The one rule for a coder's claims
    (`selectors.tasks.claimer_refusal`), a reviewer's (`authority.refuse_if_departed`) and
    `/work` for both."""
    if agent.left_at is not None:
        return f"{agent.agent_id} left; register again to start a new session"
    return None


def ended_session(agent: Agent) -> NotRegistered | None:
    """`departed_refusal` as a session's own calls hear it — its heartbeat and `/work`, the two
    its loop keeps making: `not_registered` (409, exit 8), the session is over and nothing
    restarts it. (Its claims are refused in the same rule's words as a conflict.)"""
    if departed_refusal(agent) is None:
        return None
    left_at = format_timestamp(agent.left_at)
    return NotRegistered(
        f"{agent.agent_id} is not registered: it left at {left_at}; register again to start a "
        "new session",
        {"agent_id": agent.agent_id, "left_at": left_at},
    )


def session_refusal(agent: Agent, generation: int | None) -> NotRegistered | None:
    """Why a request of `agent`'s process belongs to no live session, or None: a superseded
    session (`superseded_refusal`), then one that left (`ended_session`). `/work` asks it: an
    agent's loop must hear there, as from its heartbeat, that its session is over."""
    return superseded_refusal(agent, generation) or ended_session(agent)


def superseded_refusal(agent: Agent, generation: int | None) -> NotRegistered | None:
    """THE fence of a stale session (reference/original-liza.md §4 item 2): a process that
    sends the generation its registration answered (`Liza-Generation`), older than the agent's
    (`Agent.generation`, one more at every `agent_register`), belongs to a session the id's
    next registration superseded — its lease lapsed and the id registered again while it hung —
    and must stop without acting as the live session: `not_registered` (409, exit 8; the client
    stops without leaving, which would end the live one). None when it is the live session, or
    sends no generation (older clients and people's tools, docs/decisions.md). `agent` must be
    the row the operation locked (the heartbeat's `liza_heartbeat_v3` asks the same in SQL)."""
    if generation is None or generation >= agent.generation:
        return None
    return NotRegistered(
        f"session {generation} of {agent.agent_id} was superseded by session "
        f"{agent.generation} registered at {format_timestamp(agent.registered_at)}; exit",
        {
            "agent_id": agent.agent_id,
            "generation": generation,
            "current_generation": agent.generation,
            "registered_at": format_timestamp(agent.registered_at),
        },
    )


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


def failures_sql(*, agent: bool = False) -> str:
    """THE read of failures: (action, agent named, actor, when) of the project's lease expiries
    and supervised crashes in the error window, newest first; with `agent`, only one agent's.
    Its parameters: `failures_params` (claim-next reads it in the statement of its call). A
    lease expiry names its agent in its data (the watcher writes it); a crash is reported by the
    agent itself."""
    mine = (
        " AND ((e.action = %s AND e.data -> 'agent' = to_jsonb(%s::text))"
        " OR (e.action = %s AND e.actor_id = %s))"
        if agent
        else ""
    )
    return (
        "SELECT e.action, e.data ->> 'agent', e.actor_id, e.timestamp "
        f"FROM {connection.ops.quote_name(Event._meta.db_table)} e WHERE e.project_id = %s "
        "AND e.action IN (%s, %s) AND e.outcome = %s AND e.timestamp > %s AND e.timestamp <= %s"
        f"{mine} ORDER BY e.timestamp DESC"
    )


def failures_params(project_id: int, now: datetime, agent_id: str | None = None) -> list:
    """`failures_sql`'s parameters (`agent_id` with `agent=True`)."""
    params = [project_id, Action.LEASE_EXPIRED, Action.AGENT_CRASHED, Event.Outcome.APPLIED]
    params += [now - timedelta(seconds=ERROR_WINDOW), now]
    if agent_id is not None:
        params += [Action.LEASE_EXPIRED, agent_id, Action.AGENT_CRASHED, agent_id]
    return params


def _failures(project_id: int, now: datetime, agent_id: str | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            failures_sql(agent=agent_id is not None), failures_params(project_id, now, agent_id)
        )
        return cursor.fetchall()


@dataclass(frozen=True)
class InError:
    """An agent in error: when it clears by itself, and why (its real cause, said in the
    AGENT ERROR alert and the refusals)."""

    until: datetime
    cause: str


def _error_from(rows, agent: Agent, now: datetime) -> InError | None:
    """Whether `agent` is in error from its failures among `rows` (newest first): the later of
    the two rules, each counted on its own, and the cause of each that applies."""
    expiries: list[datetime] = []
    crashes: list[datetime] = []
    for action, named, actor, at in rows:
        if action == Action.LEASE_EXPIRED and named == agent.agent_id:
            expiries.append(at)
        elif action == Action.AGENT_CRASHED and actor == agent.agent_id:
            crashes.append(at)
    window = f"within {ERROR_WINDOW // 60} min"
    found = [
        (until, cause)
        for until, cause in (
            (
                _error_until([at for at in expiries if _counts(agent, at, now)]),
                f"{ERROR_EXPIRIES} lease expiries {window}",
            ),
            (
                _error_until([at for at in crashes if _counts(agent, at, now)]),
                f"{ERROR_EXPIRIES} crashes of its agent command {window} (a crash loop)",
            ),
        )
        if until is not None
    ]
    if not found:
        return None
    return InError(max(u for u, _ in found), " and ".join(c for _, c in found))


def agent_in_error(agent: Agent, now: datetime) -> InError | None:
    """THE "agent in error" predicate: when the error clears by itself and why, or None when
    the agent is not in error. Two sources: repeated lease expiries (recorded by the watcher)
    and a crash loop of its supervised agent command (reported by `liza supervise`)."""
    return _error_from(_failures(agent.project_id, now, agent.agent_id), agent, now)


def _availability(agent: Agent, error: InError | None) -> Availability:
    """The order of the states: disabled over error over overloaded."""
    if not agent.enabled:
        return Availability(DISABLED, f"{agent.agent_id} is disabled")
    if error is not None:
        return Availability(
            ERROR,
            f"{agent.agent_id} is in error: {error.cause}; it clears by itself at "
            f"{error.until:%H:%M:%S}Z or when a project admin sets it available",
            error.until,
        )
    if agent.overloaded:
        return Availability(
            OVERLOADED, f"{agent.agent_id} is overloaded: it takes no new work until set available"
        )
    return Availability(ENABLED)


def agent_availability(agent: Agent, now: datetime, failures: list | None = None) -> Availability:
    """What claims, claim-next and `/work` respect (one query when the agent is enabled).
    `failures`: the agent's rows of `failures_sql`, when the caller has read them (claim-next,
    in the statement of its call)."""
    if not agent.enabled:
        return _availability(agent, None)
    if failures is None:
        return _availability(agent, agent_in_error(agent, now))
    return _availability(agent, _error_from(failures, agent, now))


def agents_availability(
    *, project_id: int, agents: list[Agent], now: datetime
) -> dict[int, Availability]:
    """`agent_availability` for the board's agents panel in one query: agent pk → state."""
    rows = _failures(project_id, now)
    return {a.pk: _availability(a, _error_from(rows, a, now)) for a in agents}
