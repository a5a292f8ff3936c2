"""What the watcher finds due in a project (SPEC §9): plain reads; the service re-checks them
under its locks before acting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from agents.models import Agent, Run, RunState
from agents.selectors import task_stalls
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, CircuitBreaker, Event
from boards.coordination.models.tasks import Discovery, Review, Task
from boards.coordination.selectors.availability import ERROR, agents_availability
from boards.coordination.selectors.budgets import EXHAUSTED, OK, budget_states
from boards.coordination.selectors.leases import lease_stale_before
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.errors import ProtocolValidationError
from boards.interop.invariants import Violation
from boards.protocol import (
    STATE_TIMEOUT_WARN_RATIO,
    TERMINAL_TASK_STATES,
    Action,
    AgentStatus,
    SprintStatus,
    TaskStatus,
    format_timestamp,
)

# A watcher silent for more than this many of the project's watch intervals is reported down.
SILENT_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class WatcherSeen:
    last_swept: datetime | None
    age_seconds: int | None  # None: never swept
    silent_after: int  # seconds
    silent: bool


def watcher_silent_after(config: ProjectConfig) -> int:
    """Seconds without a sweep after which the watcher counts as silent: 3 of its intervals."""
    return SILENT_AFTER_INTERVALS * config.watch_interval


def watcher_silent(*, last_swept: datetime | None, config: ProjectConfig, now: datetime) -> bool:
    return last_swept is None or (now - last_swept).total_seconds() > watcher_silent_after(config)


def watcher_seen(*, project: Project, config: ProjectConfig, now: datetime) -> WatcherSeen:
    """How long ago a watcher last swept `project`, and whether that is too long (issue #11:
    "watcher last seen N s ago", a warning when silent for more than 3 intervals)."""
    last = project.last_swept
    return WatcherSeen(
        last_swept=last,
        age_seconds=None if last is None else max(0, int((now - last).total_seconds())),
        silent_after=watcher_silent_after(config),
        silent=watcher_silent(last_swept=last, config=config, now=now),
    )


def projects_to_watch(*, slugs: Sequence[str] = ()) -> list[Project]:
    projects = Project.objects.select_related("config").order_by("slug")
    if slugs:
        projects = projects.filter(slug__in=slugs)
    return list(projects)


def sprint_past_deadline(*, project: Project, now: datetime) -> Sprint | None:
    """The IN_PROGRESS sprint whose deadline has passed (seed 000: deadline → CHECKPOINT)."""
    return Sprint.objects.filter(
        project=project, status=SprintStatus.IN_PROGRESS, deadline__lte=now
    ).first()


def coders_with_dead_leases(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[Agent]:
    """Coders still recorded on a CLAIMED task whose lease expired more than `lease_grace` ago."""
    return list(
        Agent.objects.filter(
            project=project,
            role=Agent.Role.CODER,
            current_task__status=TaskStatus.CLAIMED,
            current_task__assigned_to=F("agent_id"),
            current_task__lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("current_task")
        .order_by("pk")
    )


def retry_exhausted_claims(*, project: Project, now: datetime, config: ProjectConfig) -> list[Task]:
    """CLAIMED tasks whose dead lease is their coder's crash past the retry schedule (seed 003
    PERMANENTLY_FAILED): the watcher blocks them (`retry_exhausted`) without waiting for a claim."""
    return list(
        Task.objects.filter(
            project=project,
            status=TaskStatus.CLAIMED,
            handoff_pending=False,
            crashes__gte=len(config.retry_backoff),
            lease_expires__lt=lease_stale_before(now, config),
        ).order_by("pk")
    )


@dataclass(frozen=True)
class StateTimeout:
    """A task at 80 % or more of its state's time budget (seed 003 per-state timeouts)."""

    task: Task
    state: str
    since: datetime  # when it entered the state (its last status change)
    budget: int  # seconds
    elapsed: int  # seconds
    action: str  # alert | block
    reason: str

    @property
    def over(self) -> bool:
        return self.elapsed >= self.budget


def state_timeouts(*, project: Project, now: datetime, config: ProjectConfig) -> list[StateTimeout]:
    """Tasks in a state with a budget (`ProjectConfig.state_timeouts`) that have spent at least
    80 % of it there. Time in state runs from the task's last status change: the last applied
    event that moved it into its current state (its creation for a task never moved), else its
    creation. One query whatever the number of budgets."""
    rules = config.state_timeouts or {}
    if not rules:
        return []
    entered = (
        Event.objects.filter(task=OuterRef("pk"), outcome="applied", to_status=OuterRef("status"))
        .exclude(from_status=F("to_status"))
        .order_by("-timestamp", "-id")
        .values("timestamp")[:1]
    )
    found = []
    tasks = Task.objects.filter(project=project, status__in=list(rules)).annotate(
        entered=Coalesce(Subquery(entered), F("created"))
    )
    for task in tasks.order_by("created", "id"):
        rule = rules[task.status]
        budget = int(rule["seconds"])
        elapsed = int((now - task.entered).total_seconds())
        if elapsed >= budget * STATE_TIMEOUT_WARN_RATIO:
            found.append(
                StateTimeout(
                    task=task,
                    state=task.status,
                    since=task.entered,
                    budget=budget,
                    elapsed=elapsed,
                    action=rule.get("action", "alert"),
                    reason=rule.get("reason", ""),
                )
            )
    return found


def _state_timeout_conditions(timeouts: list[StateTimeout]) -> list[AlertCondition]:
    """A warning from 80 % of a state's budget, critical from 100 % (one alert per task and
    state: escalated once, not raised again each sweep)."""
    found = []
    for t in timeouts:
        share = int(t.elapsed * 100 // t.budget)
        found.append(
            AlertCondition(
                Alert.Type.STATE_TIMEOUT,
                f"{t.task.key} {t.state}"[:64],
                Alert.Level.CRITICAL if t.over else Alert.Level.WARNING,
                f"STATE TIMEOUT: {t.task.key} in {t.state} for {t.elapsed} s"
                f" ({share} % of {t.budget} s){': ' + t.reason if t.reason else ''}"[:500],
                t.task,
                t.task.assigned_to,
            )
        )
    return found


def stale_review_claims(*, project: Project, now: datetime, config: ProjectConfig) -> list[Review]:
    """Pending review claims (no verdict, not closed) whose lease is dead."""
    return list(
        Review.objects.filter(
            project=project,
            closed_at__isnull=True,
            verdict="",
            lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("task")
        .order_by("pk")
    )


@dataclass(frozen=True)
class AlertCondition:
    """One condition the original watcher alerts on (SPEC §9), as seen at one instant."""

    type: str
    subject: str
    level: str
    message: str
    task: Task | None = None
    agent_id: str = ""
    # What its age counts from (Alert.since): the message holds no age (issue 25).
    since: datetime | None = None

    def logged(self, now: datetime) -> str:
        """The message with its age at `now`, for the watcher's log lines."""
        if self.since is None:
            return self.message
        return f"{self.message} (for {int((now - self.since).total_seconds() // 60)} min)"


# Stale checkpoint and pause (the original's liza-watch.sh thresholds, in seconds).
STALE_CHECKPOINT_LEVELS = (
    (8 * 3600, Alert.Level.CRITICAL, "CHECKPOINT ABANDONED?"),
    (2 * 3600, Alert.Level.CRITICAL, "CHECKPOINT STUCK"),
    (30 * 60, Alert.Level.WARNING, "CHECKPOINT STALE"),
)


STALE_PAUSE_LEVELS = (
    (2 * 3600, Alert.Level.CRITICAL, "PAUSE FORGOTTEN?"),
    (30 * 60, Alert.Level.WARNING, "STALE PAUSE"),
)


def escalation_step(alert_type: str, message: str) -> int:
    """How far a stale checkpoint alert has escalated (0 none, 1 STALE, 2 STUCK, 3 ABANDONED?),
    read from its message's label; 0 for other types. The escalation webhook sends each step,
    including the 8 h one, which keeps the CRITICAL level of the 2 h one."""
    if alert_type != Alert.Type.STALE_CHECKPOINT:
        return 0
    label = message.partition(":")[0]
    labels = [label for _, _, label in reversed(STALE_CHECKPOINT_LEVELS)]
    return labels.index(label) + 1 if label in labels else 0


LIMIT_WARNING_MARGIN = 2  # warn from (effective limit − 2): iteration 8/10, review cycle 3/5


def _aged(levels, since: datetime, now: datetime):
    age = (now - since).total_seconds()
    for threshold, level, label in levels:
        if age > threshold:
            return level, label, int(age // 60)
    return None


def alert_conditions(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """Every alert condition that holds in `project` at `now`."""
    found: list[AlertCondition] = []
    stale = lease_stale_before(now, config)
    for task in Task.objects.filter(
        project=project, status=TaskStatus.CLAIMED, lease_expires__lt=stale
    ):
        found.append(
            AlertCondition(
                Alert.Type.LEASE_EXPIRED,
                task.key,
                Alert.Level.WARNING,
                f"LEASE EXPIRED: {task.assigned_to} on {task.key}",
                task,
                task.assigned_to,
            )
        )
    for task in Task.objects.filter(project=project, status=TaskStatus.READY_FOR_REVIEW):
        reviews = list(Review.objects.filter(task=task).order_by("-pk")[:1])
        if reviews and reviews[0].closed_at is not None and not reviews[0].verdict:
            found.append(
                AlertCondition(
                    Alert.Type.REVIEW_LEASE_EXPIRED,
                    task.key,
                    Alert.Level.WARNING,
                    f"REVIEW LEASE EXPIRED: {reviews[0].reviewer} on {task.key}"
                    " — review can be reclaimed",
                    task,
                    reviews[0].reviewer,
                )
            )
    for task in Task.objects.filter(project=project, status=TaskStatus.BLOCKED):
        found.append(
            AlertCondition(
                Alert.Type.BLOCKED,
                task.key,
                Alert.Level.WARNING,
                f"BLOCKED: {task.key} — {task.blocked_reason}"[:500],
                task,
            )
        )
    for task in Task.objects.filter(
        project=project, status=TaskStatus.READY_FOR_REVIEW, needs_human_approval=True
    ):
        if awaiting_human_approval(task):  # issue 24: a person is asked; notifications say so
            found.append(
                AlertCondition(
                    Alert.Type.AWAITING_APPROVAL,
                    task.key,
                    Alert.Level.INFO,
                    f"AWAITING APPROVAL: {task.key} — approved by its reviewers, "
                    "waiting for a human at the approval gate",
                    task,
                )
            )
    for task in Task.objects.filter(project=project, status=TaskStatus.INTEGRATION_FAILED):
        found.append(
            AlertCondition(
                Alert.Type.INTEGRATION_FAILED,
                task.key,
                Alert.Level.CRITICAL,
                f"INTEGRATION FAILED: {task.key}",
                task,
            )
        )
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
                AlertCondition(
                    Alert.Type.APPROACHING_LIMITS,
                    task.key,
                    Alert.Level.WARNING,
                    f"APPROACHING LIMIT: {task.key} — {', '.join(notes)}",
                    task,
                    task.assigned_to,
                )
            )
    for discovery in Discovery.objects.filter(
        project=project,
        urgency=Discovery.Urgency.IMMEDIATE,
        converted_to_task="",
        triage=Discovery.Triage.OPEN,
    ):
        found.append(
            AlertCondition(
                Alert.Type.IMMEDIATE_DISCOVERY,
                discovery.disc_id,
                Alert.Level.CRITICAL,
                f"IMMEDIATE DISCOVERY: {discovery.disc_id} — {discovery.description}"[:500],
            )
        )
    found += _task_health_conditions(project, now, config)
    found += _state_timeout_conditions(state_timeouts(project=project, now=now, config=config))
    sprint = Sprint.objects.filter(
        project=project, status=SprintStatus.CHECKPOINT, checkpoint_at__isnull=False
    ).first()
    if sprint is not None and (aged := _aged(STALE_CHECKPOINT_LEVELS, sprint.checkpoint_at, now)):
        level, label, _ = aged
        found.append(
            AlertCondition(
                Alert.Type.STALE_CHECKPOINT,
                sprint.sprint_id,
                level,
                f"{label}: {sprint.sprint_id} at CHECKPOINT",
                since=sprint.checkpoint_at,
            )
        )
    found += _sprint_deadline_conditions(project, now)
    found += _stalled_run_conditions(project, config)
    breaker = CircuitBreaker.objects.filter(
        project=project, status=CircuitBreaker.Status.TRIGGERED
    ).first()
    if breaker is not None:
        found.append(_breaker_condition(breaker.current_trigger or {}))
    if project.paused_at is not None and (
        aged := _aged(STALE_PAUSE_LEVELS, project.paused_at, now)
    ):
        level, label, _ = aged
        found.append(
            AlertCondition(
                Alert.Type.STALE_PAUSE,
                project.slug,
                level,
                f"{label}: project paused",
                since=project.paused_at,
            )
        )
    # Issue 24: a supervisor paused by its provider's quota wall, until the wall lifts.
    for agent in Agent.objects.filter(project=project, quota_until__gt=now).order_by("pk"):
        found.append(
            AlertCondition(
                Alert.Type.QUOTA,
                agent.agent_id,
                Alert.Level.WARNING,
                f"QUOTA: {agent.agent_id} ({agent.quota_provider}) paused until "
                f"{format_timestamp(agent.quota_until)}: {agent.quota_message}"[:500],
                None,
                agent.agent_id,
            )
        )
    found += _budget_conditions(project)
    # Seed 003: an agent in error (repeated lease expiries or a crash loop), until it clears.
    agents = list(Agent.objects.filter(project=project))
    states = agents_availability(project_id=project.pk, agents=agents, now=now)
    for agent in agents:
        available = states[agent.pk]
        if available.state == ERROR:
            found.append(
                AlertCondition(
                    Alert.Type.AGENT_ERROR,
                    agent.agent_id,
                    Alert.Level.WARNING,
                    f"AGENT ERROR: {available.reason}"[:500],
                    None,
                    agent.agent_id,
                )
            )
    return found


def _budget_conditions(project: Project) -> list[AlertCondition]:
    """Issue 24: a budget from 80 % spent (warning) and once spent (critical, escalated on the
    same alert): one alert per budget while it is over, resolved when an admin raises it."""
    found = []
    for state in budget_states(project=project):
        if state.state == OK:
            continue
        budget = state.budget
        spent = state.state == EXHAUSTED
        found.append(
            AlertCondition(
                Alert.Type.BUDGET,
                f"{budget.scope}:{budget.subject}"[:64],
                Alert.Level.CRITICAL if spent else Alert.Level.WARNING,
                ("BUDGET EXHAUSTED: " if spent else "BUDGET AT 80 %: ")
                + state.message
                + ("; work is stopped until an admin raises it" if spent else ""),
                budget.task,
                budget.agent.agent_id if budget.agent is not None else "",
            )
        )
    return found


def _stalled_run_conditions(project: Project, config: ProjectConfig) -> list[AlertCondition]:
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
            AlertCondition(
                Alert.Type.RUN_STALLED,
                run.task.key,
                Alert.Level.WARNING,
                f"RUN STALLED: {run.agent.agent_id} on {run.task.key} — no output and no commit "
                f"for {config.stall_timeout} s, terminated (stall {stalls}/{config.max_stalls}"
                + ("; the task is BLOCKED)" if run.task.status == TaskStatus.BLOCKED else ")"),
                run.task,
                run.agent.agent_id,
            )
        )
    return found


def _sprint_deadline_conditions(project: Project, now: datetime) -> list[AlertCondition]:
    """Seed 000: a sprint that reached its deadline (the sweep also checkpoints it): one
    warning while the deadline stays passed and the sprint open; a new future deadline or none
    (`sprint_resume`), or the sprint's end, resolves it."""
    sprints = Sprint.objects.filter(
        project=project,
        status__in=(SprintStatus.IN_PROGRESS, SprintStatus.CHECKPOINT),
        deadline__lte=now,
    ).order_by("pk")
    return [
        AlertCondition(
            Alert.Type.SPRINT_DEADLINE,
            sprint.sprint_id,
            Alert.Level.WARNING,
            f"SPRINT DEADLINE REACHED: {sprint.sprint_id} — deadline "
            f"{format_timestamp(sprint.deadline)} passed; the sprint is at CHECKPOINT for a "
            "human to review, extend or complete",
        )
        for sprint in sprints
    ]


def _breaker_condition(trigger: dict) -> AlertCondition:
    """A TRIGGERED circuit breaker: critical until a human resolves it; one alert per trip
    (its subject is the trip's time), so a later trip is a new alert."""
    pattern = trigger.get("pattern") or "unknown pattern"
    return AlertCondition(
        Alert.Type.CIRCUIT_BREAKER,
        str(trigger.get("timestamp") or "triggered")[:64],
        Alert.Level.CRITICAL,
        f"CIRCUIT BREAKER: {pattern} ({trigger.get('severity') or '?'}) — the sprint is at "
        "CHECKPOINT until a human resolves the trigger",
    )


# The original watcher's other thresholds (liza-watch.sh), in seconds.
STALE_DRAFT_AFTER = 30 * 60


STALLED_AFTER = 30 * 60


ORPHANED_AFTER = 30


def _task_health_conditions(
    project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """The original watcher's alerts 4, 5, 6, 8, 10 and 11 (reference §2.6), with our limits:
    an orphaned REJECTED task, a reassigned one, a review loop at its cliff, hypothesis
    exhaustion, a project with work in progress but no event for 30 min, a stale DRAFT."""
    found: list[AlertCondition] = []
    live = Task.objects.filter(project=project).exclude(status__in=TERMINAL_TASK_STATES)
    holders = dict(Agent.objects.filter(project=project).values_list("agent_id", "status"))
    first_claimer = (
        Event.objects.filter(task=OuterRef("pk"), action=Action.CLAIMED, outcome="applied")
        .order_by("timestamp", "id")
        .values("actor_id")[:1]
    )
    # Only rows that can meet one of the conditions below (each implies its clause here: a
    # takeover appends the previous coder to failed_by, a cliff is at least one cycle), so a
    # sweep of a large quiet project reads a handful of tasks, not all of them.
    candidates = live.filter(
        Q(status=TaskStatus.DRAFT, created__lt=now - timedelta(seconds=STALE_DRAFT_AFTER))
        | (Q(status=TaskStatus.REJECTED) & ~Q(assigned_to=""))
        | Q(review_cycles_current__gte=1)
        | ~Q(failed_by=[])
    )
    for task in candidates.annotate(first_claimer=Subquery(first_claimer)).order_by(
        "created", "id"
    ):
        if task.status == TaskStatus.DRAFT:
            age = (now - task.created).total_seconds()
            if age > STALE_DRAFT_AFTER:
                found.append(
                    AlertCondition(
                        Alert.Type.STALE_DRAFT,
                        task.key,
                        Alert.Level.WARNING,
                        f"STALE DRAFT: {task.key} (Planner crash?)",
                        task,
                        since=task.created,
                    )
                )
        holder_status = holders.get(task.assigned_to)
        since = task.updated or task.created
        if (
            task.status == TaskStatus.REJECTED
            and task.assigned_to
            and holder_status != AgentStatus.WORKING
            and (now - since).total_seconds() > ORPHANED_AFTER
        ):
            found.append(
                AlertCondition(
                    Alert.Type.ORPHANED_REJECTED,
                    task.key,
                    Alert.Level.CRITICAL,
                    f"ORPHANED REJECTED: {task.key} — assigned to {task.assigned_to} but the"
                    f" agent is {holder_status or 'MISSING'}",
                    task,
                    task.assigned_to,
                )
            )
        if (
            task.status == TaskStatus.CLAIMED
            and task.first_claimer
            and task.first_claimer != task.assigned_to
        ):
            found.append(
                AlertCondition(
                    Alert.Type.REASSIGNED,
                    task.key,
                    Alert.Level.WARNING,
                    f"REASSIGNED: {task.key} — now {task.assigned_to} (was"
                    f" {task.first_claimer}), hypothesis exhaustion risk",
                    task,
                    task.assigned_to,
                )
            )
        cliff = task.effective_max_review_cycles(config)
        if task.review_cycles_current >= cliff:
            found.append(
                AlertCondition(
                    Alert.Type.REVIEW_LOOP,
                    task.key,
                    Alert.Level.CRITICAL,
                    f"REVIEW LOOP: {task.key} — {task.review_cycles_current} cycles (at cliff)",
                    task,
                )
            )
        if len(task.failed_by or []) >= 2:
            found.append(
                AlertCondition(
                    Alert.Type.HYPOTHESIS_EXHAUSTION,
                    task.key,
                    Alert.Level.CRITICAL,
                    f"HYPOTHESIS EXHAUSTION: {task.key} — requires rescope",
                    task,
                )
            )
    # Work that could move (not DRAFT, not BLOCKED: those wait for a human or the planner;
    # not while paused or at a checkpoint: agents are told to stop, with alerts of their own)
    # but no event for 30 min.
    stopped = (
        project.paused_at is not None
        or Sprint.objects.filter(project=project, status=SprintStatus.CHECKPOINT).exists()
    )
    if not stopped and live.exclude(status__in=(TaskStatus.DRAFT, TaskStatus.BLOCKED)).exists():
        last = (
            Event.objects.filter(project=project, outcome="applied")
            .order_by("-timestamp")
            .values_list("timestamp", flat=True)
            .first()
        )
        if last is not None and (now - last).total_seconds() > STALLED_AFTER:
            found.append(
                AlertCondition(
                    Alert.Type.STALLED,
                    project.slug,
                    Alert.Level.WARNING,
                    "STALLED: no progress",
                    since=last,
                )
            )
    return found


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
        message = f"INVALID STATE: {v.rule}: {v}"
        if task is not None:
            event = Event.objects.filter(task=task).order_by("-timestamp", "-id").first()
            if event is not None:
                message += (
                    f"; last event: {event.action} by {event.actor_id}"
                    f" at {format_timestamp(event.timestamp)}"
                )
        found.append(
            AlertCondition(
                Alert.Type.INVALID_STATE,
                f"{v.rule} {v.subject}"[:64],
                Alert.Level.CRITICAL,
                message[:500],
                task,
            )
        )
    return found


def open_alerts(*, project: Project) -> dict[tuple[str, str], Alert]:
    return {
        (a.type, a.subject): a
        for a in Alert.objects.filter(project=project, resolved_at__isnull=True)
    }


def alert_list(
    *, project: Project, state: str = "", type: str = "", severity: str = ""
) -> list[Alert]:
    """The project's alerts, newest first; `state` open or resolved, `type`, `severity`
    (the alert's level). An unknown filter value is a 400 naming it."""
    alerts = Alert.objects.filter(project=project).select_related("task", "acknowledged_by")
    if state:
        if state not in ("open", "resolved"):
            raise ProtocolValidationError("state", "open or resolved")
        alerts = alerts.filter(resolved_at__isnull=state == "open")
    if type:
        if type not in Alert.Type.values:
            raise ProtocolValidationError("type", f"one of {', '.join(Alert.Type.values)}")
        alerts = alerts.filter(type=type)
    if severity:
        if severity not in Alert.Level.values:
            raise ProtocolValidationError("severity", f"one of {', '.join(Alert.Level.values)}")
        alerts = alerts.filter(level=severity)
    return list(alerts)
