"""The alert conditions of tasks: leases, reviews, blocks, the gate, limits, the original
watcher's task health checks, state budgets."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import OuterRef, Q, Subquery

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Discovery, Review, Task
from boards.coordination.selectors.leases import lease_stale_before
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.protocol import (
    TERMINAL_TASK_STATES,
    Action,
    AgentStatus,
    SprintStatus,
    TaskStatus,
)
from boards.watch.selectors.conditions.base import (
    LIMIT_WARNING_MARGIN,
    AlertCondition,
    AlertKind,
)
from boards.watch.selectors.watch import StateTimeout, state_timeouts

LEASE_EXPIRED = AlertKind(Alert.Type.LEASE_EXPIRED, Alert.Level.WARNING)


def lease_expired(project: Project, now: datetime, config: ProjectConfig) -> list[AlertCondition]:
    stale = lease_stale_before(now, config)
    claims = Task.objects.filter(
        project=project, status=TaskStatus.CLAIMED, lease_expires__lt=stale
    )
    return [
        LEASE_EXPIRED.on(task, f"{task.assigned_to} on {task.key}", agent_id=task.assigned_to)
        for task in claims
    ]


REVIEW_LEASE_EXPIRED = AlertKind(Alert.Type.REVIEW_LEASE_EXPIRED, Alert.Level.WARNING)


def review_lease_expired(project: Project, now: datetime, config) -> list[AlertCondition]:
    """A task in review whose latest review claim lapsed without a verdict (its reviews read in
    one query, the latest per task, not one query per task)."""
    tasks = list(Task.objects.filter(project=project, status=TaskStatus.READY_FOR_REVIEW))
    latest = {
        review.task_id: review
        for review in Review.objects.filter(task__in=tasks)
        .order_by("task_id", "-pk")
        .distinct("task_id")
    }
    found = []
    for task in tasks:
        review = latest.get(task.pk)
        if review is not None and review.closed_at is not None and not review.verdict:
            found.append(
                REVIEW_LEASE_EXPIRED.on(
                    task,
                    f"{review.reviewer} on {task.key} — review can be reclaimed",
                    agent_id=review.reviewer,
                )
            )
    return found


BLOCKED = AlertKind(Alert.Type.BLOCKED, Alert.Level.WARNING)


def blocked(project: Project, now: datetime, config) -> list[AlertCondition]:
    return [
        BLOCKED.on(task, f"{task.key} — {task.blocked_reason}")
        for task in Task.objects.filter(project=project, status=TaskStatus.BLOCKED)
    ]


AWAITING_APPROVAL = AlertKind(Alert.Type.AWAITING_APPROVAL, Alert.Level.INFO)


def awaiting_approval(project: Project, now: datetime, config) -> list[AlertCondition]:
    """Issue 24: a person is asked; notifications say so."""
    gated = Task.objects.filter(
        project=project, status=TaskStatus.READY_FOR_REVIEW, needs_human_approval=True
    )
    return [
        AWAITING_APPROVAL.on(
            task,
            f"{task.key} — approved by its reviewers, waiting for a human at the approval gate",
        )
        for task in gated
        if awaiting_human_approval(task)
    ]


INTEGRATION_FAILED = AlertKind(Alert.Type.INTEGRATION_FAILED, Alert.Level.CRITICAL)


def integration_failed(project: Project, now: datetime, config) -> list[AlertCondition]:
    return [
        INTEGRATION_FAILED.on(task, task.key)
        for task in Task.objects.filter(project=project, status=TaskStatus.INTEGRATION_FAILED)
    ]


APPROACHING_LIMITS = AlertKind(
    Alert.Type.APPROACHING_LIMITS, Alert.Level.WARNING, "APPROACHING LIMIT"
)


def approaching_limits(
    project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    found = []
    for task in Task.objects.filter(
        project=project,
        status__in=(TaskStatus.CLAIMED, TaskStatus.READY_FOR_REVIEW, TaskStatus.REJECTED),
    ):
        notes = []
        limit = task.effective_max_iterations(config)
        if task.iteration and task.iteration >= limit - LIMIT_WARNING_MARGIN:
            notes.append(f"iteration {task.iteration}/{limit}")
        cycles = task.effective_max_review_cycles(config)
        if task.review_cycles_current >= cycles - LIMIT_WARNING_MARGIN:
            notes.append(f"review cycle {task.review_cycles_current}/{cycles}")
        if notes:
            found.append(
                APPROACHING_LIMITS.on(
                    task, f"{task.key} — {', '.join(notes)}", agent_id=task.assigned_to
                )
            )
    return found


IMMEDIATE_DISCOVERY = AlertKind(Alert.Type.IMMEDIATE_DISCOVERY, Alert.Level.CRITICAL)


def immediate_discoveries(project: Project, now: datetime, config) -> list[AlertCondition]:
    return [
        IMMEDIATE_DISCOVERY.about(
            discovery.disc_id, f"{discovery.disc_id} — {discovery.description}"
        )
        for discovery in Discovery.objects.filter(
            project=project,
            urgency=Discovery.Urgency.IMMEDIATE,
            converted_to_task="",
            triage=Discovery.Triage.OPEN,
        )
    ]


def state_timeout_conditions(project: Project, now: datetime, config: ProjectConfig):
    return _state_timeout_conditions(state_timeouts(project=project, now=now, config=config))


# From 80 % of the state's budget, then from 100 %: the same alert, escalated.
STATE_TIMEOUT_NEAR = AlertKind(Alert.Type.STATE_TIMEOUT, Alert.Level.WARNING)
STATE_TIMEOUT_OVER = AlertKind(Alert.Type.STATE_TIMEOUT, Alert.Level.CRITICAL)


def _state_timeout_conditions(timeouts: list[StateTimeout]) -> list[AlertCondition]:
    """A warning from 80 % of a state's budget, critical from 100 % (one alert per task and
    state: escalated once, not raised again each sweep)."""
    found = []
    for t in timeouts:
        share = int(t.elapsed * 100 // t.budget)
        found.append(
            (STATE_TIMEOUT_OVER if t.over else STATE_TIMEOUT_NEAR).about(
                f"{t.task.key} {t.state}",
                f"{t.task.key} in {t.state} for {t.elapsed} s"
                f" ({share} % of {t.budget} s){': ' + t.reason if t.reason else ''}",
                task=t.task,
                agent_id=t.task.assigned_to,
            )
        )
    return found


# The original watcher's other thresholds (liza-watch.sh), in seconds.
STALE_DRAFT_AFTER = 30 * 60


STALLED_AFTER = 30 * 60


ORPHANED_AFTER = 30


def task_health_conditions(
    project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """The original watcher's alerts 4, 5, 6, 8, 10 and 11 (reference §2.6), with our limits:
    an orphaned REJECTED task, a reassigned one, a review loop at its cliff, hypothesis
    exhaustion (one check per task each, `TASK_HEALTH`), a stale DRAFT, and a project with work
    in progress but no event for 30 min."""
    holders = dict(Agent.objects.filter(project=project).values_list("agent_id", "status"))
    first_claimer = (
        Event.objects.filter(task=OuterRef("pk"), action=Action.CLAIMED, outcome="applied")
        .order_by("timestamp", "id")
        .values("actor_id")[:1]
    )
    # Only rows that can meet one of the checks (each implies its clause here: a takeover
    # appends the previous coder to failed_by, a cliff is at least one cycle), so a sweep of a
    # large quiet project reads a handful of tasks, not all of them.
    candidates = _live(project).filter(
        Q(status=TaskStatus.DRAFT, created__lt=now - timedelta(seconds=STALE_DRAFT_AFTER))
        | (Q(status=TaskStatus.REJECTED) & ~Q(assigned_to=""))
        | Q(review_cycles_current__gte=1)
        | ~Q(failed_by=[])
    )
    found = [
        condition
        for task in candidates.annotate(first_claimer=Subquery(first_claimer)).order_by(
            "created", "id"
        )
        for check in TASK_HEALTH
        if (condition := check(task, now, config, holders)) is not None
    ]
    return found + _stalled(project, now)


def _live(project: Project):
    return Task.objects.filter(project=project).exclude(status__in=TERMINAL_TASK_STATES)


STALE_DRAFT = AlertKind(Alert.Type.STALE_DRAFT, Alert.Level.WARNING)


def _stale_draft(task: Task, now: datetime, config, holders) -> AlertCondition | None:
    if task.status != TaskStatus.DRAFT or (now - task.created).total_seconds() <= STALE_DRAFT_AFTER:
        return None
    return STALE_DRAFT.on(task, f"{task.key} (Planner crash?)", since=task.created)


ORPHANED_REJECTED = AlertKind(Alert.Type.ORPHANED_REJECTED, Alert.Level.CRITICAL)


def _orphaned_rejected(task: Task, now: datetime, config, holders) -> AlertCondition | None:
    holder_status = holders.get(task.assigned_to)
    since = task.updated or task.created
    if not (
        task.status == TaskStatus.REJECTED
        and task.assigned_to
        and holder_status != AgentStatus.WORKING
        and (now - since).total_seconds() > ORPHANED_AFTER
    ):
        return None
    return ORPHANED_REJECTED.on(
        task,
        f"{task.key} — assigned to {task.assigned_to} but the"
        f" agent is {holder_status or 'MISSING'}",
        agent_id=task.assigned_to,
    )


REASSIGNED = AlertKind(Alert.Type.REASSIGNED, Alert.Level.WARNING)


def _reassigned(task: Task, now: datetime, config, holders) -> AlertCondition | None:
    if not (
        task.status == TaskStatus.CLAIMED
        and task.first_claimer
        and task.first_claimer != task.assigned_to
    ):
        return None
    return REASSIGNED.on(
        task,
        f"{task.key} — now {task.assigned_to} (was {task.first_claimer}),"
        " hypothesis exhaustion risk",
        agent_id=task.assigned_to,
    )


REVIEW_LOOP = AlertKind(Alert.Type.REVIEW_LOOP, Alert.Level.CRITICAL)


def _review_loop(task: Task, now: datetime, config, holders) -> AlertCondition | None:
    if task.review_cycles_current < task.effective_max_review_cycles(config):
        return None
    return REVIEW_LOOP.on(task, f"{task.key} — {task.review_cycles_current} cycles (at cliff)")


HYPOTHESIS_EXHAUSTION = AlertKind(Alert.Type.HYPOTHESIS_EXHAUSTION, Alert.Level.CRITICAL)


def _hypothesis_exhaustion(task: Task, now: datetime, config, holders) -> AlertCondition | None:
    if len(task.failed_by or []) < 2:
        return None
    return HYPOTHESIS_EXHAUSTION.on(task, f"{task.key} — requires rescope")


TASK_HEALTH = (_stale_draft, _orphaned_rejected, _reassigned, _review_loop, _hypothesis_exhaustion)


STALLED = AlertKind(Alert.Type.STALLED, Alert.Level.WARNING)


def _stalled(project: Project, now: datetime) -> list[AlertCondition]:
    """Work that could move (not DRAFT, not BLOCKED: those wait for a human or the planner; not
    while paused or at a checkpoint: agents are told to stop, with alerts of their own) but no
    event for 30 min."""
    stopped = (
        project.paused_at is not None
        or Sprint.objects.filter(project=project, status=SprintStatus.CHECKPOINT).exists()
    )
    if (
        stopped
        or not _live(project).exclude(status__in=(TaskStatus.DRAFT, TaskStatus.BLOCKED)).exists()
    ):
        return []
    last = (
        Event.objects.filter(project=project, outcome="applied")
        .order_by("-timestamp")
        .values_list("timestamp", flat=True)
        .first()
    )
    if last is None or (now - last).total_seconds() <= STALLED_AFTER:
        return []
    return [STALLED.about(project.slug, "no progress", since=last)]
