"""An agent's session and liveness (seed 000 "Agent State Machine", seed 002 "Lease Model"):
registering, the heartbeat that extends its leases or tells it to stop, leaving."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

from agents.models import (
    Agent,
)
from agents.selectors import leave_refusal
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import ended_session, superseded_refusal
from boards.coordination.selectors.budgets import budget_exists_sql, budget_refusal
from boards.coordination.selectors.sprints import sprint_current_sql
from boards.coordination.selectors.work import Stop, stop_reason
from boards.coordination.services.actors import ANY_AGENT
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import (
    agents_only,
    fenced,
    refuse_if_superseded,
    require_role,
)
from boards.coordination.services.locking import lock_agent
from boards.errors import (
    Collision,
    Forbidden,
    LeaseLost,
    ProtocolValidationError,
)
from boards.protocol import (
    AGENT_EDGES,
    AGENT_ID_PREFIX,
    OPEN_SPRINT_STATES,
    Action,
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


@agents_only  # the agent of the key: people have none (the view's `agent` refuses them)
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
        agent.left_at = None  # a session again: its heartbeats count
        # A new session: a process of an older one is refused from now on (`superseded_refusal`).
        agent.generation += 1
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


@agents_only  # the agent of the key: its supervisor as it stops, or `liza leave`
@fenced
@records_refusals
def agent_leave(
    *, project: Project, agent: Agent, now: datetime, generation: int | None = None
) -> Agent:
    """The agent's session ends: its identity is given up now, not when its lease lapses, so
    the same id registers again at once (SPEC §5.2 "HANDOFF → (deregistered)"; the original
    Liza deletes its registry entry when the agent exits).

    Its lease ends now (registration, `/work` and the board read a lease in the past as no
    session), and `left_at` says the session ended: until the id registers again, a heartbeat
    that arrives late (its supervisor's heartbeat thread racing this, a stale process, a
    retried request) is refused `not_registered` instead of bringing the lease back. A WORKING
    coder or REVIEWING reviewer goes to HANDOFF, seed 000's state before the process
    terminates (it holds no live claim by then, see below); any other state stays, as
    registration restarts the machine from every state. Refused (409) while it still holds
    work under a live lease (`agents.selectors.leave_refusal`): it hands off or gives back
    first, or that work would wait for its lease to lapse with nobody behind it.

    `generation` (its process's `Liza-Generation`): a superseded session's late leave — its
    supervisor exiting after the id registered again — is refused `not_registered` on the
    locked row, or it would end the live session.
    """
    attempt = Attempt(project, agent, "agent_leave", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    config = config_of(project)
    with transaction.atomic():
        agent = lock_agent(agent)  # its claims lock it first: none can come in between
        refuse_if_superseded(agent, generation, action="agent_leave", now=now)
        refusal = leave_refusal(agent=agent, now=now, config=config)
        if refusal is not None:
            raise attempt.conflict(refusal, from_status=agent.status)
        from_status = agent.status
        if agent.status in (AgentStatus.WORKING, AgentStatus.REVIEWING):
            agent.hand_off()
        if agent.has_live_lease(now):
            agent.lease_expires = now
        if agent.left_at is None:  # leaving twice: it left the first time
            agent.left_at = now
        agent.save()
        attempt.record(
            action=Action.DEREGISTERED,
            detail=f"{agent.agent_id} left: its id is free to register again",
            from_status=from_status,
            to_status=agent.status,
        )
    return agent


@agents_only  # the agent of the key, as agent_register
@fenced
@records_refusals
def agent_heartbeat(
    *,
    agent: Agent,
    now: datetime,
    context_percent: int | None = None,
    progress_at: datetime | None = None,
    generation: int | None = None,
) -> HeartbeatResult:
    """Extend the agent lease and the task and review leases it holds (SPEC §6).

    A coder whose task was taken over gets lease_lost: it must exit 42 (seed 002 "If original
    agent returns after expiry → must self-abort immediately").

    `progress_at` (issue 24): its supervised run's last progress (output, a commit), as its
    supervisor saw it. Older than `progress_stale` (the supervisor's watchdog should have
    stopped it long before: a hung supervisor), the task lease is not extended — it lapses —
    and the answer says stop ("stalled").

    An agent that left (`agent_leave`) and has not registered since is `not_registered`
    (409, exit 8): its session ended, and a late heartbeat must not bring its lease back. So
    is a process of a superseded session (`generation`, its `Liza-Generation`, older than the
    agent's: `availability.superseded_refusal`): it must not extend the live session's leases.

    The locks, checks and writes are `liza_heartbeat_v3` (boards migration 0035), one round
    trip with the reads the stop answer needs; this raises what it refuses.
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
    # One statement writes all a heartbeat writes, and nothing when it refuses: alone, in
    # autocommit, it is its own transaction — no BEGIN and COMMIT round trips around it. Inside
    # the request's transaction (an Idempotency-Key's) it keeps a savepoint of its own, as before.
    with transaction.atomic() if connection.in_atomic_block else nullcontext():
        beat = _Heartbeat.of(
            agent, now, config, context_percent, progress_at, stale=stale, generation=generation
        )
        agent, task = beat.agent, beat.task
        _refuse_unless_ok(beat, project, now, generation)
        # Heartbeats write no Event, but open boards show leases and heartbeat ages: published
        # within outbox.BEAT_WINDOW, merged with the project's other heartbeats.
        changed = [(outbox.AGENT, agent.pk)] + (
            [(outbox.TASK, task.pk)] if task is not None else []
        )
        outbox.heartbeat(project.pk, *changed)
    stop = _heartbeat_stop(
        agent,
        project,
        config,
        task,
        beat.reviews,
        progress_at=progress_at if stale else None,
        beat=beat,
    )
    return HeartbeatResult(agent=agent, task=task, reviews=beat.reviews, stop=stop)


def _refuse_unless_ok(
    beat: _Heartbeat, project: Project, now: datetime, generation: int | None
) -> None:
    """Raise what `liza_heartbeat_v3` refused (its answer has written nothing), as the errors
    the heartbeat always raised, each recorded as a rejected attempt: a disabled agent, a
    superseded session or one that left (`not_registered`, exit 8), a lost task or its lease
    (`lease_lost`, exit 42)."""
    agent, task = beat.agent, beat.task
    if beat.outcome == "disabled":
        raise Attempt(project, agent, "agent_heartbeat", now).refuse(
            Forbidden(f"agent {agent.agent_id} is disabled")
        )
    superseded = superseded_refusal(agent, generation) if beat.outcome == "superseded" else None
    if superseded is not None:  # the SQL's answer, said in the one rule's words
        raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(superseded)
    ended = ended_session(agent) if beat.outcome == "left" else None
    if ended is not None:  # the SQL's answer, said in the one rule's words
        raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(ended)
    if beat.outcome == "lost":
        raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
            LeaseLost(
                f"{agent.agent_id} lost {task.key} ({agent.lost_reason}); exit 42",
                {
                    "task": task.key,
                    "reason": agent.lost_reason,
                    "assigned_to": task.assigned_to or None,
                },
            ),
            task=task,
        )
    if beat.outcome == "gone":
        raise Task.DoesNotExist(f"Task {agent.current_task_id} does not exist")
    if beat.outcome == "lease_lost":
        raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
            LeaseLost(
                f"{agent.agent_id} lost its lease on {task.key}; exit 42",
                {"task": task.key},
            ),
            task=task,
        )


@dataclass(frozen=True)
class _Heartbeat:
    """What `liza_heartbeat_v3` answered, in the one statement that calls it: its outcome
    (`ok`, or the refusal: `disabled`, `superseded`, `left`, `lost`, `lease_lost`, `gone`),
    the agent row as written (or as locked, refused), its task (the lost one for `lost`), its
    review claims each with its task, the project's current sprint (`stop_reason`) and whether
    the project has any budget (`budget_refusal`)."""

    outcome: str
    agent: Agent
    task: Task | None
    reviews: list[Review]
    sprint: Sprint | None
    has_budgets: bool

    @classmethod
    def of(
        cls,
        agent: Agent,
        now: datetime,
        config,
        context_percent: int | None,
        progress_at: datetime | None,
        *,
        stale: bool,
        generation: int | None,
    ) -> _Heartbeat:
        ready_from, ready_to = _READY
        with rows.prepared_cursor() as cursor:
            cursor.execute(
                _call_sql(),
                [
                    agent.project_id,
                    agent.pk,
                    now,
                    config.lease_duration,
                    config.lease_grace,
                    context_percent,
                    progress_at,
                    stale,
                    TaskStatus.CLAIMED,
                    Agent.Role.CODE_REVIEWER,
                    ready_from,
                    ready_to,
                    generation,
                    agent.project_id,
                    *OPEN_SPRINT_STATES,
                ],
            )
            answered = cursor.fetchall()
        if not answered:
            raise Agent.DoesNotExist(f"Agent {agent.pk} does not exist")
        first = answered[0]
        cut = _cuts()
        locked = rows.from_row(Agent, first[cut[0] : cut[1]])
        task = _row_or_none(Task, first[cut[1] : cut[2]])
        if task is not None:
            # The answer shows it: no second read.
            if first[0] == "lost":
                locked.lost_task = task
            else:
                locked.current_task = task
        reviews = []
        for row in answered:
            review = _row_or_none(Review, row[cut[2] : cut[3]])
            if review is not None:
                review.task = rows.from_row(Task, row[cut[3] : cut[4]])
                reviews.append(review)
        return cls(
            outcome=first[0],
            agent=locked,
            task=task,
            reviews=reviews,
            sprint=_row_or_none(Sprint, first[cut[4] : cut[5]]),
            has_budgets=first[cut[5]],
        )


def _ready_edge() -> tuple[str, str]:
    """Seed 000's `ready` (STARTING → IDLE), the one edge a heartbeat takes, as the function's
    arguments: the FSM's table stays the one place that names it. It is open to every role;
    a role condition there would have to become an argument too."""
    (edge,) = [
        (pair, role) for pair, (name, role) in AGENT_EDGES.items() if name == Agent.ready.__name__
    ]
    (source, target), role = edge
    if role is not None:
        raise ImproperlyConfigured("the heartbeat's ready edge is open to every role")
    return source, target


_READY = _ready_edge()


def _row_or_none(model, values: tuple):
    return None if values[0] is None else rows.from_row(model, values)


@cache
def _cuts() -> tuple[int, ...]:
    """Where each model's columns start in `_call_sql`'s row: the agent, its task, the review,
    the review's task, the sprint, then `has_budgets`."""
    bounds = [1]
    for model in (Agent, Task, Review, Task, Sprint):
        bounds.append(bounds[-1] + rows.width(model))
    return tuple(bounds)


# The composite rows the function answers, each expanded once under a one-letter name: its
# columns named as `(h.task_row)."status"`, twice over the task's 45, made the statement 4,462
# characters, and psycopg caches the parsing of a statement only up to 4,096 (0.09 ms a
# heartbeat parsed again, measured; tests/agents/services/test_heartbeats_sql.py keeps the hot
# statements under it).
_EXPANDED = (("a", "agent_row"), ("t", "task_row"), ("r", "review_row"), ("rt", "review_task_row"))


@cache
def _call_sql() -> str:
    expanded = " ".join(
        f"CROSS JOIN LATERAL (SELECT (h.{row}).*) {alias}" for alias, row in _EXPANDED
    )
    return (
        f"SELECT h.outcome, {rows.select_list(Agent, 'a')}, {rows.select_list(Task, 't')}, "
        f"{rows.select_list(Review, 'r')}, {rows.select_list(Task, 'rt')}, "
        f"{rows.select_list(Sprint, 's')}, {budget_exists_sql('%s')} "
        "FROM liza_heartbeat_v3(%s::bigint, %s::timestamptz, %s::integer, %s::integer, "
        "%s::integer, %s::timestamptz, %s::boolean, %s::text, %s::text, %s::text, %s::text, "
        f"%s::bigint) h {expanded} "
        f"LEFT JOIN LATERAL ({sprint_current_sql('%s')}) s ON TRUE"
    )


def _heartbeat_stop(
    agent: Agent,
    project: Project,
    config,
    task: Task | None,
    reviews: list[Review],
    *,
    progress_at: datetime | None,
    beat: _Heartbeat,
) -> Stop | None:
    """Whether the heartbeat says stop: the project's stop-work rule, a spent budget, or (with
    `progress_at`, stale) a stalled run."""
    stop = stop_reason(project, sprint=beat.sprint)
    if stop is None:
        # Issue 24: a spent budget stops the running agent through its heartbeat, whatever it
        # holds; its supervisor terminates it (the run ends with reason "budget").
        exhausted = budget_refusal(
            project=project,
            agent=agent,
            tasks=[task, *(r.task for r in reviews)],
            has_budgets=beat.has_budgets,
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
