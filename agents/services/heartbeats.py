"""An agent's session and liveness (seed 000 "Agent State Machine", seed 002 "Lease Model"):
registering, the heartbeat that extends its leases or tells it to stop."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.db import connection, transaction

from agents.models import (
    Agent,
)
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.budgets import budget_exists_sql, budget_refusal
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.sprints import sprint_current_sql
from boards.coordination.selectors.work import UNREAD, Stop, stop_reason
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.locking import lock_agent
from boards.errors import (
    Collision,
    Forbidden,
    LeaseLost,
    ProtocolValidationError,
)
from boards.protocol import (
    AGENT_ID_PREFIX,
    OPEN_SPRINT_STATES,
    AgentStatus,
    TaskStatus,
    agent_id_matches_role,
    format_timestamp,
)

# ---------------------------------------------------------------------------------------------
# identity and liveness (seed 000 "Agent State Machine", seed 002 "Lease Model")
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeartbeatResult:
    agent: Agent
    task: Task | None
    reviews: list[Review]
    # "paused" / "checkpoint" when the agent must stop (exit 42) although its leases were kept.
    stop: Stop | None


@records_refusals
def agent_register(
    *, project: Project, agent_id: str, role: str, now: datetime, terminal: str = ""
) -> Agent:
    """Register (or restart) an identity; an id held by a live lease is a collision.

    Seed 000: "If agent registration fails (ID collision with active lease), the agent process
    exits immediately with error — it never enters the state machine."
    """
    if role not in Agent.Role.values:
        raise ProtocolValidationError("role", f"one of {', '.join(Agent.Role.values)}")
    if not isinstance(agent_id, str) or not agent_id_matches_role(agent_id, role):
        prefix = AGENT_ID_PREFIX[role]
        raise ProtocolValidationError("agent_id", f"must look like {prefix}-N for role {role}")
    if not isinstance(terminal, str) or len(terminal) > 200:
        raise ProtocolValidationError("terminal", "a string of at most 200 characters")
    config = config_of(project)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(project=project, agent_id=agent_id).first()
        # A handoff frees the identity at once for the same id's next session (seed 000 "Exit
        # 42 with Handoff"): only a live lease held by a process still at work is a collision.
        held = agent is not None and agent.has_live_lease(now)
        if agent is not None and (
            (held and agent.status != AgentStatus.HANDOFF) or agent.role != role
        ):
            raise Attempt(project=project, actor=agent, action="register", now=now).refuse(
                Collision(
                    f"{agent_id} is held by a live lease until "
                    f"{format_timestamp(agent.lease_expires)}; exit",
                    {"agent_id": agent_id},
                )
            )
        if agent is not None and not agent.enabled:
            raise Forbidden(f"agent {agent_id} is disabled")
        lease = now + timedelta(seconds=config.lease_duration)
        if agent is None:
            agent = Agent(project=project, agent_id=agent_id, role=role)
            action, detail = "registered", f"{agent_id} registered as {role}"
        else:
            agent.restart()
            # A fresh process starts clean: whatever it lost was its predecessor's.
            agent.lost_task, agent.lost_reason = None, ""
            action, detail = "restarted", f"{agent_id} restarted fresh"
        agent.lease_expires = lease
        agent.heartbeat = now
        agent.registered_at = now
        agent.terminal = terminal
        agent.save()
        record_event(
            project=project,
            actor=agent,
            action=action,
            now=now,
            detail=detail,
            to_status=agent.status,
        )
    return agent


@records_refusals
def agent_heartbeat(
    *,
    agent: Agent,
    now: datetime,
    context_percent: int | None = None,
    progress_at: datetime | None = None,
) -> HeartbeatResult:
    """Extend the agent lease and the task and review leases it holds (SPEC §6).

    A coder whose task was taken over gets lease_lost: it must exit 42 (seed 002 "If original
    agent returns after expiry → must self-abort immediately").

    `progress_at` (issue 24): its supervised run's last progress (output, a commit), as its
    supervisor saw it. Older than `progress_stale` (the supervisor's watchdog should have
    stopped it long before: a hung supervisor), the task lease is not extended — it lapses —
    and the answer says stop ("stalled").
    """
    project = agent.project
    if context_percent is not None and (
        isinstance(context_percent, bool)
        or not isinstance(context_percent, int)
        or not 0 <= context_percent <= 100
    ):
        raise ProtocolValidationError("context_percent", "an integer from 0 to 100")
    config = config_of(project)
    if progress_at is not None and progress_at > now:
        progress_at = now  # a supervisor's clock ahead of ours: progress now, not later
    stale = progress_at is not None and progress_stale(progress_at, now, config)
    with transaction.atomic():
        read = _HeartbeatRead.of(agent)
        agent = read.agent
        if not agent.enabled:
            raise Attempt(project, agent, "agent_heartbeat", now).refuse(
                Forbidden(f"agent {agent.agent_id} is disabled")
            )
        _refuse_if_lost(agent, project, now)
        # Lock order (boards.coordination.services.locking): the agent, then its task, then its
        # reviews. A coder holds at most one task and no review, a reviewer review leases and no
        # task (seed 000): each asks only for its own rows.
        task = _extend_task_lease(agent, project, now, config, stale=stale, read=read)
        reviews = _extend_review_leases(agent, project, now, config)
        if agent.status == AgentStatus.STARTING:
            agent.ready()
        agent.heartbeat = now
        agent.lease_expires = max(
            [now + timedelta(seconds=config.lease_duration)]
            + [r.lease_expires for r in reviews if r.lease_expires]
            + ([task.lease_expires] if task is not None and task.lease_expires else [])
        )
        if context_percent is not None:
            agent.context_percent = context_percent
        fields = ["status", "heartbeat", "lease_expires", "context_percent"]
        if progress_at is not None:
            agent.progress_at = progress_at
            fields.append("progress_at")
        # Only what a heartbeat changes: a narrow UPDATE of unindexed columns stays HOT.
        rows.save_fields(agent, fields)
        # Heartbeats write no Event, but open boards show leases and heartbeat ages.
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        if task is not None:
            outbox.changed(project.pk, outbox.TASK, task.pk)
    stop = _heartbeat_stop(
        agent, project, config, task, reviews, progress_at=progress_at if stale else None, read=read
    )
    return HeartbeatResult(agent=agent, task=task, reviews=reviews, stop=stop)


@dataclass(frozen=True)
class _HeartbeatRead:
    """What a heartbeat reads, in one statement on PostgreSQL: the agent row locked, its task
    as it is (unlocked: its lease is written only if the row is unchanged since,
    `rows.save_fields(version=...)`), the project's current sprint (`stop_reason`) and whether
    the project has any budget (`budget_refusal`). Elsewhere, or when that statement's task is
    not the locked agent's, the agent alone (`lock_agent`) and the rest read where it is used."""

    agent: Agent
    task: Task | None = None
    version: str = ""
    sprint: Sprint | object | None = UNREAD
    has_budgets: bool | None = None

    @classmethod
    def of(cls, agent: Agent) -> _HeartbeatRead:
        if connection.vendor != "postgresql":
            return cls(lock_agent(agent))
        with connection.cursor() as cursor:
            cursor.execute(_read_sql(), [*OPEN_SPRINT_STATES, agent.pk])
            row = cursor.fetchone()
        if row is None:
            return cls(lock_agent(agent))  # gone: DoesNotExist, as lock_agent says it
        agent_end = rows.width(Agent)
        task_end = agent_end + rows.width(Task)
        sprint_end = task_end + 1 + rows.width(Sprint)
        locked = rows.from_row(Agent, row[:agent_end])
        task = rows.from_row(Task, row[agent_end:task_end]) if row[agent_end] is not None else None
        if (task.pk if task is not None else None) != locked.current_task_id:
            task = None  # its task changed while the lock was awaited: lock it as it is now
        sprint = (
            rows.from_row(Sprint, row[task_end + 1 : sprint_end])
            if row[task_end + 1] is not None
            else None
        )
        return cls(
            locked,
            task=task,
            version=row[task_end] or "",
            sprint=sprint,
            has_budgets=row[sprint_end],
        )


@cache
def _read_sql() -> str:
    quote = connection.ops.quote_name
    return (
        f"SELECT {rows.select_list(Agent, 'a')}, {rows.select_list(Task, 't')}, "
        f"t.{rows.VERSION}, {rows.select_list(Sprint, 's')}, "
        f"{budget_exists_sql('a.' + quote('project_id'))} "
        f"FROM {quote(Agent._meta.db_table)} a "
        f"LEFT JOIN {quote(Task._meta.db_table)} t "
        f"ON t.{quote('id')} = a.{quote('current_task_id')} "
        f"LEFT JOIN LATERAL ({sprint_current_sql('a.' + quote('project_id'))}) s ON TRUE "
        f"WHERE a.{quote('id')} = %s FOR UPDATE OF a"
    )


def _refuse_if_lost(agent: Agent, project: Project, now: datetime) -> None:
    """A coder whose task was taken from it gets lease_lost, exit 42."""
    if agent.lost_task_id is None:
        return
    lost = agent.lost_task
    raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
        LeaseLost(
            f"{agent.agent_id} lost {lost.key} ({agent.lost_reason}); exit 42",
            {
                "task": lost.key,
                "reason": agent.lost_reason,
                "assigned_to": lost.assigned_to or None,
            },
        ),
        task=lost,
    )


def _extend_task_lease(
    agent: Agent, project: Project, now: datetime, config, *, stale: bool, read: _HeartbeatRead
) -> Task | None:
    """The coder's task, locked, its lease extended (not when its progress is stale); a lease
    it no longer holds is lease_lost.

    The common case — the task read with the agent, still its live claim, its progress not
    stale — is one UPDATE, made only if the row is as read; any other case locks the row and
    decides on it."""
    if agent.current_task_id is None:
        return None
    task = read.task
    if (
        task is not None
        and not stale
        and task.status == TaskStatus.CLAIMED
        and not _task_lost(task, agent, now, config)
    ):
        task.lease_expires = task.lease_until(now=now, config=config)
        if rows.save_fields(task, ["lease_expires"], version=read.version):
            agent.current_task = task  # the answer shows it: no second read
            return task
    task = rows.get_locked(Task, agent.current_task_id)
    agent.current_task = task  # the answer shows it: no second read
    if task.status == TaskStatus.CLAIMED:
        if _task_lost(task, agent, now, config):
            raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
                LeaseLost(
                    f"{agent.agent_id} lost its lease on {task.key}; exit 42",
                    {"task": task.key},
                ),
                task=task,
            )
        if not stale:
            task.lease_expires = task.lease_until(now=now, config=config)
            rows.save_fields(task, ["lease_expires"])
    return task


def _task_lost(task: Task, agent: Agent, now: datetime, config) -> bool:
    """A CLAIMED task is no longer the agent's: taken over, or its lease dead."""
    return task.assigned_to != agent.agent_id or not lease_alive(task.lease_expires, now, config)


def _extend_review_leases(agent: Agent, project: Project, now: datetime, config) -> list[Review]:
    """A reviewer's pending review claims, locked alone (their tasks are read, not locked: only
    the lease length is taken from them), each live lease extended."""
    if agent.role != Agent.Role.CODE_REVIEWER:
        return []
    reviews = list(
        Review.objects.select_for_update(of=("self",))
        .select_related("task")
        .filter(
            task__project=project,
            reviewer=agent.agent_id,
            closed_at__isnull=True,
            verdict="",
            lease_expires__isnull=False,
        )
        .order_by("pk")
    )
    for review in reviews:
        if lease_alive(review.lease_expires, now, config):
            review.lease_expires = now + timedelta(seconds=review.task.lease_seconds(config))
            rows.save_fields(review, ["lease_expires"])
    return reviews


def _heartbeat_stop(
    agent: Agent,
    project: Project,
    config,
    task: Task | None,
    reviews: list[Review],
    *,
    progress_at: datetime | None,
    read: _HeartbeatRead,
) -> Stop | None:
    """Whether the heartbeat says stop: the project's stop-work rule, a spent budget, or (with
    `progress_at`, stale) a stalled run."""
    stop = stop_reason(project, sprint=read.sprint)
    if stop is None:
        # Issue 24: a spent budget stops the running agent through its heartbeat, whatever it
        # holds; its supervisor terminates it (the run ends with reason "budget").
        exhausted = budget_refusal(
            project=project,
            agent=agent,
            tasks=[task, *(r.task for r in reviews)],
            has_budgets=read.has_budgets,
        )
        if exhausted is not None:
            stop = Stop("budget_exhausted", f"{exhausted.message}; stop the agent")
    if stop is None and progress_at is not None:
        stop = Stop(
            "stalled",
            f"no progress reported since {format_timestamp(progress_at)} (stall_timeout "
            f"{config.stall_timeout} s): the task lease is not extended; stop the agent",
        )
    return stop


def progress_stale(progress_at: datetime, now: datetime, config) -> bool:
    """THE server's side of the progress watchdog: a supervised run's last progress older than
    twice `stall_timeout` — its supervisor's own watchdog stops it at once `stall_timeout`, so
    a supervisor still heartbeating past twice that is hung itself."""
    return now - progress_at > timedelta(seconds=2 * config.stall_timeout)
