"""The tenant and its plan: the project, its members and settings, goals and sprints (SPEC §3–§5;
field names follow seed 002 so state.yaml round-trips).

Every tenant-owned row carries `project`. Status fields are django-fsm-2 `FSMField`s with
`protected=True`: they change only through the transition methods below, and only services
(`boards/coordination/services/`) call those methods, inside one transaction with the row locked.
Each method takes the edges seed 000's table names after it (`machines.seed_transition`) and
holds the conditions that belong to the state itself (what the target state's invariants need);
the services set the fields and run the side effects.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin

from boards import protocol as p
from boards.coordination.models.machines import seed_transition


class Project(models.Model):
    """The tenant. Nothing of one project is ever visible from another."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created = models.DateTimeField()
    # SPEC §5.4 / seed 000 PAUSE file: while paused, claims are refused and agents exit 42.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=500, blank=True)
    # When a watcher last swept this project (boards.watch.services.watch): the board says how long
    # ago, and warns when it has been silent (boards.watch.selectors.watch.watcher_seen).
    last_swept = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_paused(self) -> bool:
        return self.paused_at is not None


class ProjectScopedQuerySet(models.QuerySet):
    def for_project(self, project: Project) -> ProjectScopedQuerySet:
        return self.filter(project=project)


ProjectScopedManager = models.Manager.from_queryset(ProjectScopedQuerySet)


class ProjectScopedModel(models.Model):
    """A row a project owns, queried through `objects.for_project(project)`. Each model declares
    its own `project` key (its related name and what a deleted project does to it are its own);
    the task and the append-only log have managers of their own on the same queryset."""

    objects = ProjectScopedManager()

    class Meta:
        abstract = True


def unique_in_project(
    *fields: str, name: str, condition: Q | None = None
) -> models.UniqueConstraint:
    """At most one row of a project per value of `fields` (of the rows that meet `condition`):
    the ids people write (goal-1, coder-2, task-4a) and the "one open at a time" rules are per
    project, never across tenants."""
    return models.UniqueConstraint(fields=["project", *fields], condition=condition, name=name)


class Membership(ProjectScopedModel):
    class Role(models.TextChoices):
        VIEWER = "viewer"
        MEMBER = "member"
        ADMIN = "admin"

    # Higher rank = more rights; a role includes every lower one (SPEC §3).
    RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.ADMIN: 3}

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="liza_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    # Issue 25: a member who may also plan (goal, tasks, sprints) as the planner would; admins
    # always may, viewers never (boards.coordination.selectors.access.may_plan).
    can_plan = models.BooleanField(default=False, verbose_name="planner right")

    class Meta:
        constraints = [unique_in_project("user", name="membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.project} ({self.role})"

    def allows(self, role: str) -> bool:
        return self.RANK[self.role] >= self.RANK[role]


def _default_retry_backoff() -> list[int]:
    return list(p.RETRY_BACKOFF_SECONDS)


def _positive_int(value: object, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= high


def retry_backoff_problem(value: object) -> str | None:
    """Why `value` is not a retry schedule (1 to 10 steps of 1 s to a week), or None."""
    if (
        not isinstance(value, list)
        or not 1 <= len(value) <= p.RETRY_BACKOFF_MAX_STEPS
        or not all(_positive_int(v, p.RETRY_BACKOFF_STEP_MAX) for v in value)
    ):
        return (
            f"a list of 1 to {p.RETRY_BACKOFF_MAX_STEPS} whole numbers of seconds, "
            f"each from 1 to {p.RETRY_BACKOFF_STEP_MAX}"
        )
    return None


def state_timeouts_problem(value: object) -> str | None:
    """Why `value` is not a per-state time budget table, or None."""
    if not isinstance(value, dict):
        return "an object: {state: {seconds, action, reason}}"
    for state, rule in value.items():
        if state not in p.TASK_STATES or state in p.TERMINAL_TASK_STATES:
            return f"{state!r} is not a non-terminal task state"
        if not isinstance(rule, dict) or set(rule) - {"seconds", "action", "reason"}:
            return f"{state}: an object with seconds, action and reason"
        if not _positive_int(rule.get("seconds"), p.STATE_TIMEOUT_MAX_SECONDS):
            return (
                f"{state}: seconds must be a whole number from 1 to {p.STATE_TIMEOUT_MAX_SECONDS}"
            )
        action = rule.get("action", "alert")
        if action not in p.STATE_TIMEOUT_ACTIONS:
            return f"{state}: action must be one of {', '.join(p.STATE_TIMEOUT_ACTIONS)}"
        reason = rule.get("reason", "")
        if not isinstance(reason, str) or len(reason) > 200:
            return f"{state}: reason must be text of at most 200 characters"
        if action == "block" and state == p.TaskStatus.BLOCKED:
            return "BLOCKED: a blocked task cannot be blocked again; use action alert"
    return None


class ProjectConfig(ProjectScopedModel):
    """Seed 002 `config` with its defaults, plus lease_grace and archive_after_days (SPEC §4)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="config")
    max_coder_iterations = models.PositiveIntegerField(default=10)
    max_review_cycles = models.PositiveIntegerField(default=5)
    heartbeat_interval = models.PositiveIntegerField(default=60, help_text="seconds")
    lease_duration = models.PositiveIntegerField(default=300, help_text="seconds")
    coder_poll_interval = models.PositiveIntegerField(default=30, help_text="seconds")
    coder_max_wait = models.PositiveIntegerField(default=300, help_text="seconds")
    integration_branch = models.CharField(max_length=200, default="integration")
    escalation_webhook = models.URLField(blank=True, help_text="empty = none (null in state.yaml)")
    # The key that signs each delivery (HMAC-SHA256). Stored as given, not hashed: signing needs
    # the raw secret. Write-only: no page, API answer, admin form or export shows it, only
    # whether it is set (docs/decisions.md "Escalation webhook").
    webhook_secret = models.CharField(max_length=200, blank=True, editable=False)
    lease_grace = models.PositiveIntegerField(default=p.LEASE_GRACE_SECONDS, help_text="seconds")
    archive_after_days = models.PositiveIntegerField(default=p.ARCHIVE_AFTER_DAYS)
    # Not a seed key: how often `manage.py liza_watch` sweeps this project (the original: 10 s).
    watch_interval = models.PositiveIntegerField(
        default=p.WATCH_INTERVAL_SECONDS, validators=[MinValueValidator(1)], help_text="seconds"
    )
    # Not a seed key: the circuit breaker's review churn pattern (issue #11, the Go rewrite's
    # #123/#161) trips when a task of the sprint reaches this many review cycles in total.
    review_churn_threshold = models.PositiveIntegerField(
        default=p.REVIEW_CHURN_THRESHOLD,
        validators=[MinValueValidator(1)],
        help_text="review cycles (total) of one task that trip the circuit breaker",
    )
    # Not seed keys (seed 003, SPEC §13). The wait after a coder's 1st, 2nd, ... lease expiry on
    # a task before it is claimable again; one expiry more than there are steps blocks the task.
    retry_backoff = models.JSONField(
        default=_default_retry_backoff, help_text="seconds after the 1st, 2nd, … lease expiry"
    )
    # {task state: {"seconds": N, "action": "alert" | "block", "reason": "..."}}; empty = none.
    state_timeouts = models.JSONField(
        default=dict, blank=True, help_text="time budget per task state; empty = none"
    )
    # Not a seed key either: the board's WIP limits, {column: max cards} (issue #13). The
    # CLAIMED column's is enforced at claim since issue 24 (selectors.limits); the others are
    # shown on the board only (docs/decisions.md).
    wip_limits = models.JSONField(default=dict, blank=True)
    # Issue 24, the progress watchdog: a supervised run with no output, no commit in its
    # worktree for this long is stalled (terminated, retried on seed 003's schedule); the
    # task's `max_stalls`-th stall blocks it.
    stall_timeout = models.PositiveIntegerField(
        default=p.STALL_TIMEOUT_SECONDS, validators=[MinValueValidator(1)], help_text="seconds"
    )
    # Issue 24: agents at work at once (a live lease), enforced at claim, per role and for the
    # project: {"coder": 3, "code_reviewer": 2, "project": 5}; empty = no limit.
    max_concurrent = models.JSONField(default=dict, blank=True)
    max_stalls = models.PositiveIntegerField(
        default=p.MAX_STALLS, validators=[MinValueValidator(1)], help_text="stalls of one task"
    )
    # Issue 25: the repository on its code host (GitHub, GitLab, Gitea) or a URL template with
    # {branch}, {commit}, {pr}; branches and commits on the board link there
    # (boards.board.selectors.code_links). Empty = no links.
    repo_url = models.CharField(max_length=500, blank=True, default="")

    # The seed's keys, in the seed's order (export writes them in this order).
    SEED_KEYS = tuple(p.CONFIG_DEFAULTS)

    def __str__(self) -> str:
        return f"config of {self.project}"

    def clean(self) -> None:
        errors = {}
        if (problem := retry_backoff_problem(self.retry_backoff)) is not None:
            errors["retry_backoff"] = problem
        if (problem := state_timeouts_problem(self.state_timeouts)) is not None:
            errors["state_timeouts"] = problem
        if self.heartbeat_interval and self.lease_duration <= self.heartbeat_interval:
            errors["lease_duration"] = "must be longer than heartbeat_interval"
        for name, (low, high) in p.CONFIG_BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, int) and not low <= value <= high:
                errors.setdefault(name, f"must be from {low} to {high}")
        wip_error = p.wip_limits_error(self.wip_limits)
        if wip_error:
            errors["wip_limits"] = wip_error
        if concurrency_error := p.max_concurrent_error(self.max_concurrent):
            errors["max_concurrent"] = concurrency_error
        if repo_problem := p.repo_url_problem(self.repo_url):
            errors["repo_url"] = repo_problem
        if errors:
            raise ValidationError(errors)


class Goal(FSMModelMixin, ProjectScopedModel):
    """Seed 000 "Goal State Machine": IN_PROGRESS → COMPLETED | ABORTED."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="goals")
    goal_id = models.CharField(max_length=64)
    description = models.TextField()
    spec_ref = models.CharField(max_length=500, blank=True)
    created = models.DateTimeField()
    status = FSMField(
        default=p.GoalStatus.IN_PROGRESS,
        choices=[(s, s) for s in p.GOAL_STATES],
        protected=True,
    )
    # Append-only entries {timestamp, event, summary} (seed 002).
    alignment_history = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            unique_in_project("goal_id", name="goal_unique_id"),
            unique_in_project(
                condition=Q(status=p.GoalStatus.IN_PROGRESS), name="goal_one_in_progress"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.goal_id}"

    @seed_transition(p.GOAL_EDGES)
    def complete(self) -> None:
        """All planned work done."""

    @seed_transition(p.GOAL_EDGES)
    def abort(self) -> None:
        """A human stopped the goal."""


class Sprint(FSMModelMixin, ProjectScopedModel):
    """Seed 000 "Sprint State Machine"."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sprints")
    sprint_id = models.CharField(max_length=64)
    goal = models.ForeignKey(Goal, on_delete=models.PROTECT, related_name="sprints")
    planned = models.ManyToManyField("Task", blank=True, related_name="planned_in")
    stretch = models.ManyToManyField("Task", blank=True, related_name="stretch_in")
    started = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    checkpoint_at = models.DateTimeField(null=True, blank=True)
    ended = models.DateTimeField(null=True, blank=True)
    status = FSMField(
        default=p.SprintStatus.IN_PROGRESS,
        choices=[(s, s) for s in p.SPRINT_STATES],
        protected=True,
    )
    # Live metrics are computed (boards.selectors.sprint_metrics); this is the snapshot taken
    # when the sprint ends, or the metrics an imported state.yaml carried.
    metrics = models.JSONField(null=True, blank=True)
    retrospective = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["started", "id"]
        constraints = [
            unique_in_project("sprint_id", name="sprint_unique_id"),
            unique_in_project(
                condition=Q(status__in=[p.SprintStatus.IN_PROGRESS, p.SprintStatus.CHECKPOINT]),
                name="sprint_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.sprint_id}"

    @property
    def is_open(self) -> bool:
        return self.status not in p.TERMINAL_SPRINT_STATES

    @seed_transition(p.SPRINT_EDGES)
    def checkpoint(self) -> None:
        """Deadline reached, human request or circuit breaker: a human decides."""

    @seed_transition(p.SPRINT_EDGES)
    def resume(self) -> None:
        """The human chose to continue."""

    @seed_transition(p.SPRINT_EDGES)
    def complete(self) -> None:
        """All planned tasks terminal (checked by the service)."""

    @seed_transition(p.SPRINT_EDGES)
    def abort(self) -> None:
        """Human or circuit breaker stopped the sprint."""
