"""Claims' one statement: `liza_claim_v3` (boards migration 0031) called, its answer read.

The pick and every write of a claim are SQL (`liza_claim_v2`, migration 0030, which v3 calls
after reading what claim-next's checks need); `services.tasks.claims` checks who may claim and
raises the refusals. `_rules` passes the tables the SQL follows that live in Python, so each
stays the one place that names them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from agents.models import Agent
from boards import protocol as p
from boards.coordination import outbox, rows
from boards.coordination.models.projects import ProjectConfig, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.alerts import task_alerts_ended_by
from boards.coordination.selectors.availability import failures_params, failures_sql
from boards.coordination.selectors.snapshots import SNAPSHOT_FIELDS
from boards.coordination.selectors.sprints import sprint_current_sql
from boards.coordination.selectors.tasks import CLAIM_QUEUES
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.audit import note_written_events
from boards.coordination.services.tasks.limits import LIMIT_QUESTIONS
from boards.protocol import AGENT_EDGES, OPEN_SPRINT_STATES, AgentStatus, TaskStatus


@dataclass(frozen=True)
class Claimed:
    """What `liza_claim_v3` answered: its outcome (`claimed`, `none`, `blocked`, the refusal
    `busy`, `reworked`, `base_commit`, or `check`: the coder holds a task or the project has a
    budget, nothing written), the task (as prepared, for a refusal's event; for `check`, the
    one the coder holds), the claimer's row as locked or written, the events written, the
    agents it released, whether the project has a budget; with `reads`, the current sprint and
    the agent's failures (`failures_sql`), read beside the call."""

    outcome: str
    task: Task | None
    agent: Agent
    events: list[dict]
    released: list[int]
    has_budgets: bool
    sprint: Sprint | None = None
    failures: list[tuple] | None = None


def claim_sql(
    agent: Agent,
    *,
    mode: str,
    task: Task | None = None,
    queues: list[int] | None = None,
    now: datetime,
    config: ProjectConfig,
    worktree: str = "",
    base_commit: str = "",
    spent: tuple[list[int], list[int]] = ([], []),
    gate: bool = False,
    reads: bool = False,
) -> Claimed:
    """Call `liza_claim_v3` for `agent` in one statement (`mode`: `next` walks `queues`,
    limited to `task` when given; `named` claims `task`, locked and checked; `resume` hands back
    its own live claim `task`; `gate`: answer `check` instead when the coder holds a task or the
    project has a budget; `reads`: read the sprint and the agent's failures beside it). What
    open boards redraw is noted by `noted`, once the checks have passed."""
    params = [
        agent.pk,
        mode,
        task.pk if task is not None else None,
        queues or [],
        now,
        config.lease_duration,
        config.lease_grace,
        [int(s) for s in config.retry_backoff],
        worktree,
        base_commit,
        *spent,
        _rules(),
        gate,
    ]
    if reads:
        params += checks_reads_params(agent, now)
    with rows.prepared_cursor() as cursor:
        cursor.execute(_call_sql(reads), params)
        row = cursor.fetchone()
    cut = rows.width(Task) + 1
    task_values, agent_values = row[1:cut], row[cut : cut + rows.width(Agent)]
    cut += rows.width(Agent)
    events, released, has_budgets = row[cut : cut + 3]
    if isinstance(events, str):
        events = json.loads(events)
    locked = rows.from_row(Agent, agent_values)
    if locked.pk is None:
        raise Agent.DoesNotExist(f"Agent {agent.pk} does not exist")
    sprint, failures = checks_read(row[cut + 3 :]) if reads else (None, None)
    return Claimed(
        outcome=row[0],
        task=None if task_values[0] is None else rows.from_row(Task, task_values),
        agent=locked,
        events=events,
        released=released,
        has_budgets=has_budgets,
        sprint=sprint,
        failures=failures,
    )


def checks_reads_sql() -> tuple[str, str]:
    """What a claim-next's checks read beside its call, in the call's statement: the columns
    (the current sprint's, `sprint_current_sql`; the agent's failures, `failures_sql`, as
    JSON) and the joins after the call's FROM. Review claim-next reads the same."""
    columns = f", {rows.select_list(Sprint, 's')}, f.failures"
    joins = (
        f" LEFT JOIN LATERAL ({sprint_current_sql('%s')}) s ON TRUE"
        " LEFT JOIN LATERAL (SELECT json_agg(json_build_array(r.a, r.named, r.actor, r.at)"
        f" ORDER BY r.at DESC) failures FROM ({failures_sql(agent=True)})"
        " r(a, named, actor, at)) f ON TRUE"
    )
    return columns, joins


def checks_reads_params(agent: Agent, now: datetime) -> list:
    """`checks_reads_sql`'s parameters, after the call's."""
    return [
        agent.project_id,
        *OPEN_SPRINT_STATES,
        *failures_params(agent.project_id, now, agent.agent_id),
    ]


def checks_read(values: tuple) -> tuple[Sprint | None, list[tuple]]:
    """The current sprint and the agent's failures (as the selector reads them) from the last
    columns of a call's row, `checks_reads_sql`'s."""
    sprint_values = values[: rows.width(Sprint)]
    sprint = None if sprint_values[0] is None else rows.from_row(Sprint, sprint_values)
    found = values[rows.width(Sprint)]
    if isinstance(found, str):
        found = json.loads(found)
    failures = [
        (action, named, actor, datetime.fromisoformat(at))
        for action, named, actor, at in found or []
    ]
    return sprint, failures


def noted(answered: Claimed) -> Claimed:
    """What the call wrote, noted for open boards, and its events counted, as
    `audit.record_event` does for the events it writes — once no check refuses the claim."""
    project_id = answered.agent.project_id
    note_written_events(project_id, answered.agent.pk, answered.events)
    for released_pk in answered.released:
        outbox.changed(project_id, outbox.AGENT, released_pk)  # as `release_holder`
    return answered


@cache
def _call_sql(reads: bool) -> str:
    columns, joins = checks_reads_sql() if reads else ("", "")
    return (
        f"SELECT c.outcome, {rows.select_list(Task, '(c.task_row)')}, "
        f"{rows.select_list(Agent, '(c.agent_row)')}, c.events, c.released, c.has_budgets"
        + columns
        + " FROM liza_claim_v3(%s::bigint, %s::text, %s::bigint, %s::integer[], %s::timestamptz, "
        "%s::integer, %s::integer, %s::integer[], %s::text, %s::text, %s::bigint[], "
        "%s::bigint[], %s::jsonb, %s::boolean) c" + joins
    )


def _agent_edge_sources(*names: str) -> list[str]:
    return sorted({source for (source, _), (name, _) in AGENT_EDGES.items() if name in names})


@cache
def _rules() -> str:
    """The tables `liza_claim_v2` follows that live in Python, as its argument: so that each
    stays the one place that names it."""
    works_from = {
        *_agent_edge_sources(Agent.start_work.__name__, Agent.resume_work.__name__),
        # `ready` (STARTING → IDLE), then `start_work`; WORKING stays WORKING (a coder that
        # lost its previous task goes straight on).
        *_agent_edge_sources(Agent.ready.__name__),
        AgentStatus.WORKING,
    }
    return json.dumps(
        {
            "queue_states": list(CLAIM_QUEUES),
            "snapshot": list(SNAPSHOT_FIELDS),
            "ended": {s: task_alerts_ended_by(s) for s in (TaskStatus.CLAIMED, TaskStatus.BLOCKED)},
            "questions": {
                limit: LIMIT_QUESTIONS[limit]
                for limit in ("retry_exhausted", "hypothesis_exhaustion")
            },
            "system": SYSTEM.name,
            "coder": Agent.Role.CODER,
            "works_from": sorted(works_from),
            "stop_from": _agent_edge_sources(Agent.stop_work.__name__),
            # What a coder holds, one at a time (`holder_task`).
            "holding": sorted(p.ACTIVE_CODER_STATES),
        }
    )
