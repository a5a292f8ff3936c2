"""The alert conditions of the project, its sprints and its agents: checkpoint, pause, deadline,
the breaker, quotas, budgets, agents in error, stalled runs, broken invariants."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import F, OuterRef, Subquery

from agents.models import Agent, Run, RunState
from agents.selectors import task_stalls
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, CircuitBreaker, Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.availability import ERROR, agents_availability
from boards.coordination.selectors.budgets import EXHAUSTED, OK, budget_states
from boards.interop.invariants import Violation
from boards.protocol import (
    TERMINAL_TASK_STATES,
    SprintStatus,
    TaskStatus,
    format_timestamp,
)
from boards.watch.selectors.conditions.base import (
    STALE_CHECKPOINT_LEVELS,
    STALE_PAUSE_LEVELS,
    AlertCondition,
    AlertKind,
    stale_kind,
)


def stale_checkpoint(project: Project, now: datetime, config) -> list[AlertCondition]:
    sprint = Sprint.objects.filter(
        project=project, status=SprintStatus.CHECKPOINT, checkpoint_at__isnull=False
    ).first()
    if sprint is None:
        return []
    return _stale(
        STALE_CHECKPOINT_LEVELS,
        sprint.sprint_id,
        f"{sprint.sprint_id} at CHECKPOINT",
        since=sprint.checkpoint_at,
        now=now,
    )


def breaker_triggered(project: Project, now: datetime, config) -> list[AlertCondition]:
    breaker = CircuitBreaker.objects.filter(
        project=project, status=CircuitBreaker.Status.TRIGGERED
    ).first()
    return [] if breaker is None else [_breaker_condition(breaker.current_trigger or {})]


def stale_pause(project: Project, now: datetime, config) -> list[AlertCondition]:
    if project.paused_at is None:
        return []
    return _stale(
        STALE_PAUSE_LEVELS,
        project.slug,
        "project paused",
        since=project.paused_at,
        now=now,
    )


def _stale(
    levels, subject: str, what: str, *, since: datetime, now: datetime
) -> list[AlertCondition]:
    """A stop (a checkpoint, a pause) that has lasted: the alert of the level its age reached,
    headed by that level ("CHECKPOINT STUCK: S2 at CHECKPOINT"); none before the first."""
    kind = stale_kind(levels, since, now)
    return [] if kind is None else [kind.about(subject, what, since=since)]


QUOTA = AlertKind(Alert.Type.QUOTA, Alert.Level.WARNING)


def quota(project: Project, now: datetime, config) -> list[AlertCondition]:
    """Issue 24: a supervisor paused by its provider's quota wall, until the wall lifts."""
    return [
        QUOTA.about(
            agent.agent_id,
            f"{agent.agent_id} ({agent.quota_provider}) paused until "
            f"{format_timestamp(agent.quota_until)}: {agent.quota_message}",
            agent_id=agent.agent_id,
        )
        for agent in Agent.objects.filter(project=project, quota_until__gt=now).order_by("pk")
    ]


AGENT_ERROR = AlertKind(Alert.Type.AGENT_ERROR, Alert.Level.WARNING)


def agent_error(project: Project, now: datetime, config) -> list[AlertCondition]:
    """Seed 003: an agent in error (repeated lease expiries or a crash loop), until it clears."""
    agents = list(Agent.objects.filter(project=project))
    states = agents_availability(project_id=project.pk, agents=agents, now=now)
    return [
        AGENT_ERROR.about(agent.agent_id, states[agent.pk].reason, agent_id=agent.agent_id)
        for agent in agents
        if states[agent.pk].state == ERROR
    ]


BUDGET_AT_80 = AlertKind(Alert.Type.BUDGET, Alert.Level.WARNING, "BUDGET AT 80 %")
BUDGET_EXHAUSTED = AlertKind(Alert.Type.BUDGET, Alert.Level.CRITICAL, "BUDGET EXHAUSTED")


def budget_conditions(project: Project, now: datetime, config) -> list[AlertCondition]:
    """Issue 24: a budget from 80 % spent (warning) and once spent (critical, escalated on the
    same alert): one alert per budget while it is over, resolved when an admin raises it."""
    found = []
    for state in budget_states(project=project):
        if state.state == OK:
            continue
        budget = state.budget
        spent = state.state == EXHAUSTED
        found.append(
            (BUDGET_EXHAUSTED if spent else BUDGET_AT_80).about(
                f"{budget.scope}:{budget.subject}",
                state.message + ("; work is stopped until an admin raises it" if spent else ""),
                task=budget.task,
                agent_id=budget.agent.agent_id if budget.agent is not None else "",
            )
        )
    return found


RUN_STALLED = AlertKind(Alert.Type.RUN_STALLED, Alert.Level.WARNING)


def stalled_run_conditions(
    project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """Issue 24: a task whose latest run its supervisor's watchdog stopped as stalled, while
    the task is open: one warning, resolved by its next run (the retry) or its end."""
    latest = Run.objects.filter(task=OuterRef("task")).order_by("-started", "-id").values("pk")[:1]
    stalled = (
        Run.objects.filter(project=project, state=RunState.STALLED, task__isnull=False)
        .exclude(task__status__in=TERMINAL_TASK_STATES)
        .annotate(latest=Subquery(latest))
        .filter(pk=F("latest"))
        .select_related("task", "agent")
        .order_by("pk")
    )
    found = []
    for run in stalled:
        stalls = task_stalls(task=run.task)
        found.append(
            RUN_STALLED.on(
                run.task,
                f"{run.agent.agent_id} on {run.task.key} — no output and no commit "
                f"for {config.stall_timeout} s, terminated (stall {stalls}/{config.max_stalls}"
                + ("; the task is BLOCKED)" if run.task.status == TaskStatus.BLOCKED else ")"),
                agent_id=run.agent.agent_id,
            )
        )
    return found


SPRINT_DEADLINE = AlertKind(
    Alert.Type.SPRINT_DEADLINE, Alert.Level.WARNING, "SPRINT DEADLINE REACHED"
)


def sprint_deadline_conditions(project: Project, now: datetime, config) -> list[AlertCondition]:
    """Seed 000: a sprint that reached its deadline (the sweep also checkpoints it): one
    warning while the deadline stays passed and the sprint open; a new future deadline or none
    (`sprint_resume`), or the sprint's end, resolves it."""
    sprints = Sprint.objects.filter(
        project=project,
        status__in=(SprintStatus.IN_PROGRESS, SprintStatus.CHECKPOINT),
        deadline__lte=now,
    ).order_by("pk")
    return [
        SPRINT_DEADLINE.about(
            sprint.sprint_id,
            f"{sprint.sprint_id} — deadline {format_timestamp(sprint.deadline)} passed; the "
            "sprint is at CHECKPOINT for a human to review, extend or complete",
        )
        for sprint in sprints
    ]


CIRCUIT_BREAKER = AlertKind(Alert.Type.CIRCUIT_BREAKER, Alert.Level.CRITICAL)


def _breaker_condition(trigger: dict) -> AlertCondition:
    """A TRIGGERED circuit breaker: critical until a human resolves it; one alert per trip
    (its subject is the trip's time), so a later trip is a new alert."""
    pattern = trigger.get("pattern") or "unknown pattern"
    return CIRCUIT_BREAKER.about(
        str(trigger.get("timestamp") or "triggered"),
        f"{pattern} ({trigger.get('severity') or '?'}) — the sprint is at "
        "CHECKPOINT until a human resolves the trigger",
    )


INVALID_STATE = AlertKind(Alert.Type.INVALID_STATE, Alert.Level.CRITICAL)


def invariant_conditions(
    *, project: Project, violations: Sequence[Violation]
) -> list[AlertCondition]:
    """An INVALID STATE alert per broken invariant (the original watcher ran
    liza-validate.sh each round): the rule, what it names and, for a task, the last event that
    touched it — where to start looking."""
    keys = {v.subject for v in violations}
    tasks = {t.key: t for t in Task.objects.filter(project=project, key__in=keys)}
    found = []
    for v in violations:  # a handful at most: a query per broken task is fine
        task = tasks.get(v.subject)
        detail = f"{v.rule}: {v}"
        if task is not None:
            event = Event.objects.filter(task=task).order_by("-timestamp", "-id").first()
            if event is not None:
                detail += (
                    f"; last event: {event.action} by {event.actor_id}"
                    f" at {format_timestamp(event.timestamp)}"
                )
        found.append(INVALID_STATE.about(f"{v.rule} {v.subject}", detail, task=task))
    return found
