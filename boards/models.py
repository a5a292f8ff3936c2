"""The Liza domain model (SPEC §3–§5; field names follow seed 002 so state.yaml round-trips).

Every tenant-owned row carries `project`. Status fields are django-fsm-2 `FSMField`s with
`protected=True`: they change only through the transition methods below, and only services
(`boards/services/`) call those methods, inside one transaction with the row locked. The
transition methods hold the conditions that belong to the state itself (what the target state's
invariants need); the services set the fields and run the side effects.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from . import protocol as p


class Project(models.Model):
    """The tenant. Nothing of one project is ever visible from another."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created = models.DateTimeField()
    # SPEC §5.4 / seed 000 PAUSE file: while paused, claims are refused and agents exit 42.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=500, blank=True)
    # When a watcher last swept this project (boards.services.watch): the board says how long
    # ago, and warns when it has been silent (boards.selectors.watch.watcher_seen).
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


class Membership(models.Model):
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
    # always may, viewers never (boards.selectors.access.may_plan).
    can_plan = models.BooleanField(default=False, verbose_name="planner right")

    objects = ProjectScopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user")
        ]

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


class ProjectConfig(models.Model):
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
    # (boards.selectors.code_links). Empty = no links.
    repo_url = models.CharField(max_length=500, blank=True, default="")

    objects = ProjectScopedManager()

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


class Goal(FSMModelMixin, models.Model):
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

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "goal_id"], name="goal_unique_id"),
            models.UniqueConstraint(
                fields=["project"],
                condition=Q(status=p.GoalStatus.IN_PROGRESS),
                name="goal_one_in_progress",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.goal_id}"

    @transition(field=status, source=p.GoalStatus.IN_PROGRESS, target=p.GoalStatus.COMPLETED)
    def complete(self) -> None:
        """All planned work done."""

    @transition(field=status, source=p.GoalStatus.IN_PROGRESS, target=p.GoalStatus.ABORTED)
    def abort(self) -> None:
        """A human stopped the goal."""


class Sprint(FSMModelMixin, models.Model):
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

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["started", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "sprint_id"], name="sprint_unique_id"),
            models.UniqueConstraint(
                fields=["project"],
                condition=Q(status__in=[p.SprintStatus.IN_PROGRESS, p.SprintStatus.CHECKPOINT]),
                name="sprint_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.sprint_id}"

    @property
    def is_open(self) -> bool:
        return self.status not in p.TERMINAL_SPRINT_STATES

    @transition(field=status, source=p.SprintStatus.IN_PROGRESS, target=p.SprintStatus.CHECKPOINT)
    def checkpoint(self) -> None:
        """Deadline reached, human request or circuit breaker: a human decides."""

    @transition(field=status, source=p.SprintStatus.CHECKPOINT, target=p.SprintStatus.IN_PROGRESS)
    def resume(self) -> None:
        """The human chose to continue."""

    @transition(field=status, source=p.SprintStatus.IN_PROGRESS, target=p.SprintStatus.COMPLETED)
    def complete(self) -> None:
        """All planned tasks terminal (checked by the service)."""

    @transition(
        field=status,
        source=[p.SprintStatus.IN_PROGRESS, p.SprintStatus.CHECKPOINT],
        target=p.SprintStatus.ABORTED,
    )
    def abort(self) -> None:
        """Human or circuit breaker stopped the sprint."""


def _present(value: object) -> bool:
    return value not in (None, "", [])


class TaskQuerySet(ProjectScopedQuerySet):
    def non_terminal(self) -> TaskQuerySet:
        return self.exclude(status__in=p.TERMINAL_TASK_STATES)


class Task(FSMModelMixin, models.Model):
    """A unit of work (seed 002 `tasks[]`), moving through seed 000's task machine exactly."""

    class Criticality(models.TextChoices):
        STANDARD = "standard"
        COMPLEX = "complex"
        SECURITY_SENSITIVE = "security-sensitive"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks")
    goal = models.ForeignKey(
        Goal, on_delete=models.SET_NULL, null=True, blank=True, related_name="tasks"
    )
    key = models.CharField(max_length=64, help_text="the seed's task id, e.g. task-4a")
    description = models.TextField()
    status = FSMField(
        default=p.TaskStatus.DRAFT,
        choices=[(s, s) for s in p.TASK_STATES],
        protected=True,
        db_index=True,
    )
    priority = models.PositiveSmallIntegerField(default=3, help_text="1 highest … 5")
    created = models.DateTimeField()
    spec_ref = models.CharField(max_length=500, blank=True)
    done_when = models.TextField(blank=True)
    scope = models.TextField(blank=True)
    depends_on = models.ManyToManyField(
        "self", symmetrical=False, blank=True, related_name="dependents"
    )
    # Agent ids are kept as the blackboard's strings: a state.yaml may name agents that never
    # registered here (seed 002's own example does), and history must outlive agent rows.
    assigned_to = models.CharField(max_length=64, blank=True, db_index=True)
    worktree = models.CharField(max_length=500, blank=True)
    base_commit = models.CharField(max_length=64, blank=True)
    review_commit = models.CharField(max_length=64, blank=True)
    merge_commit = models.CharField(max_length=64, blank=True)
    approved_by = models.JSONField(default=list, blank=True)
    iteration = models.PositiveIntegerField(null=True, blank=True)
    review_cycles_current = models.PositiveIntegerField(default=0)
    review_cycles_total = models.PositiveIntegerField(default=0)
    rejection_reason = models.TextField(blank=True)
    blocked_reason = models.TextField(blank=True)
    blocked_questions = models.JSONField(default=list, blank=True)
    attempted = models.JSONField(default=list, blank=True)
    failed_by = models.JSONField(default=list, blank=True)
    superseded_by = models.JSONField(default=list, blank=True)
    supersedes = models.CharField(max_length=64, blank=True)
    rescope_reason = models.TextField(blank=True)
    integration_fix = models.BooleanField(default=False)
    handoff_pending = models.BooleanField(default=False)
    # Seed 003 retry: lease expiries of the current coder on this task (crashed attempts),
    # counted when it claims the task again after one (or the watcher blocks it); a new coder
    # starts again at 0. The claim queue reads it in SQL: no query per candidate.
    crashes = models.PositiveIntegerField(default=0)
    # Not indexed: a heartbeat writes it, and an update that changes no indexed column can be a
    # HOT update (no index writes, same heap page; docs/decisions.md "Heartbeats are HOT"). Its
    # readers (the watcher, the takeover rule) filter by project and status first, which the
    # (project, status, priority, created) index serves.
    lease_expires = models.DateTimeField(null=True, blank=True)
    criticality = models.CharField(
        max_length=20, choices=Criticality.choices, default=Criticality.STANDARD
    )
    # Per-task overrides (seed 002 "Config Scope"; lease_duration_override: "Lease Model").
    max_iterations = models.PositiveIntegerField(null=True, blank=True)
    max_review_cycles = models.PositiveIntegerField(null=True, blank=True)
    lease_duration_override = models.PositiveIntegerField(null=True, blank=True)
    # SPEC §12 / seed 004 APPROVAL_REQUIRED: a human approves before the task may be APPROVED
    # (on by default for security-sensitive tasks, set at creation by the service).
    needs_human_approval = models.BooleanField(default=False)
    # Seed 004 SUSPENDED as an overlay on the status, not a 12th state (SPEC §12): while set,
    # the task and its review cannot be claimed.
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_by = models.CharField(max_length=150, blank=True)
    suspended_reason = models.TextField(blank=True)
    updated = models.DateTimeField(null=True, blank=True)
    # The keys an imported state.yaml wrote for this task with an empty value (`worktree: null`,
    # `depends_on: []`, as the original's scripts write them), and that value: export writes
    # them back where it would otherwise leave the key out (original-liza.md §2.1).
    file_empty_keys = models.JSONField(default=dict, blank=True)

    objects = models.Manager.from_queryset(TaskQuerySet)()

    class Meta:
        ordering = ["priority", "created", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="task_unique_key"),
            models.CheckConstraint(
                condition=Q(priority__gte=1) & Q(priority__lte=5), name="task_priority_1_5"
            ),
        ]
        indexes = [models.Index(fields=["project", "status", "priority", "created", "id"])]

    def __str__(self) -> str:
        return f"{self.project}/{self.key}"

    # -- derived values ------------------------------------------------------------------------

    @property
    def is_terminal(self) -> bool:
        return self.status in p.TERMINAL_TASK_STATES

    @property
    def is_suspended(self) -> bool:
        return self.suspended_at is not None

    def effective_max_iterations(self, config: ProjectConfig) -> int:
        return self.max_iterations or config.max_coder_iterations

    def effective_max_review_cycles(self, config: ProjectConfig) -> int:
        return self.max_review_cycles or config.max_review_cycles

    def lease_seconds(self, config: ProjectConfig) -> int:
        return self.lease_duration_override or config.lease_duration

    def lease_until(self, *, now: datetime, config: ProjectConfig) -> datetime:
        return now + timedelta(seconds=self.lease_seconds(config))

    @property
    def required_approvals(self) -> int:
        return p.REQUIRED_APPROVALS[self.criticality]

    # -- conditions: what the target state's invariants need (seed 002 "Validation Rules") ------

    def _ready_to_finalize(self) -> bool:
        return _present(self.done_when) and _present(self.spec_ref)

    def _dependencies_merged(self) -> bool:
        return not self.depends_on.exclude(status=p.TaskStatus.MERGED).exists()

    def _holds_claim(self) -> bool:
        return (
            _present(self.assigned_to)
            and _present(self.worktree)
            and self.lease_expires is not None
            and (self.integration_fix or _present(self.base_commit))
        )

    def _has_review_commit(self) -> bool:
        return _present(self.review_commit)

    def _has_rejection_reason(self) -> bool:
        return _present(self.rejection_reason)

    def _has_block_diagnosis(self) -> bool:
        return (
            _present(self.blocked_reason)
            and 1 <= len(self.blocked_questions or []) <= p.MAX_BLOCKED_QUESTIONS
        )

    def _has_rescope(self) -> bool:
        return _present(self.superseded_by) and _present(self.rescope_reason)

    def _worktree_cleared(self) -> bool:
        return not _present(self.worktree)

    # -- seed 000's 13 edges -------------------------------------------------------------------

    @transition(
        field=status,
        source=p.TaskStatus.DRAFT,
        target=p.TaskStatus.UNCLAIMED,
        conditions=[_ready_to_finalize],
    )
    def finalize(self) -> None:
        """The planner finished the definition (done_when and spec_ref present)."""

    @transition(
        field=status,
        source=p.TaskStatus.UNCLAIMED,
        target=p.TaskStatus.CLAIMED,
        conditions=[_dependencies_merged, _holds_claim],
    )
    def claim(self) -> None:
        """A coder takes an UNCLAIMED task whose dependencies are all MERGED."""

    @transition(
        field=status,
        source=p.TaskStatus.REJECTED,
        target=p.TaskStatus.CLAIMED,
        conditions=[_holds_claim],
    )
    def reclaim(self) -> None:
        """The coder (or, after its lease lapsed, another coder) resumes a rejected task."""

    @transition(
        field=status,
        source=p.TaskStatus.INTEGRATION_FAILED,
        target=p.TaskStatus.CLAIMED,
        conditions=[_holds_claim],
    )
    def claim_integration_fix(self) -> None:
        """Any coder takes the failed merge, keeping the worktree."""

    @transition(
        field=status,
        source=p.TaskStatus.CLAIMED,
        target=p.TaskStatus.READY_FOR_REVIEW,
        conditions=[_has_review_commit],
    )
    def submit_for_review(self) -> None:
        """The coder requests review of a clean, committed tree."""

    @transition(
        field=status,
        source=p.TaskStatus.CLAIMED,
        target=p.TaskStatus.BLOCKED,
        conditions=[_has_block_diagnosis],
    )
    def block(self) -> None:
        """The coder cannot proceed."""

    @transition(field=status, source=p.TaskStatus.READY_FOR_REVIEW, target=p.TaskStatus.APPROVED)
    def approve(self) -> None:
        """Enough distinct reviewers approved the round (seed 001 criticality)."""

    @transition(
        field=status,
        source=p.TaskStatus.READY_FOR_REVIEW,
        target=p.TaskStatus.REJECTED,
        conditions=[_has_rejection_reason],
    )
    def reject(self) -> None:
        """One rejection rejects the round."""

    @transition(
        field=status,
        source=p.TaskStatus.APPROVED,
        target=p.TaskStatus.MERGED,
        conditions=[_worktree_cleared],
    )
    def merge(self) -> None:
        """Merged to the integration branch."""

    @transition(field=status, source=p.TaskStatus.APPROVED, target=p.TaskStatus.INTEGRATION_FAILED)
    def fail_integration(self) -> None:
        """Merge conflict or integration test failure."""

    @transition(field=status, source=p.TaskStatus.BLOCKED, target=p.TaskStatus.UNCLAIMED)
    def release(self) -> None:
        """Escalation answered: back to the queue (failed_by kept, worktree cleared)."""

    @transition(
        field=status,
        source=p.TaskStatus.BLOCKED,
        target=p.TaskStatus.SUPERSEDED,
        conditions=[_has_rescope],
    )
    def supersede(self) -> None:
        """Rescoped into new tasks."""

    @transition(field=status, source=p.TaskStatus.BLOCKED, target=p.TaskStatus.ABANDONED)
    def abandon(self) -> None:
        """Killed by the planner or a human."""

    # -- SPEC §5.1 override block (humans and the system only) ---------------------------------

    @transition(
        field=status,
        source=list(p.OVERRIDE_BLOCK_SOURCES),
        target=p.TaskStatus.BLOCKED,
        conditions=[_has_block_diagnosis],
    )
    def override_block(self) -> None:
        """A human override or a limit enforced by the system."""


class Review(models.Model):
    """One review claim (SPEC §4): the reviewer's own lease, then its verdict.

    A round is open while its reviews have `closed_at` null; it closes when the task leaves
    READY_FOR_REVIEW, so approvals never count across rounds.
    """

    class Verdict(models.TextChoices):
        APPROVED = p.TaskStatus.APPROVED
        REJECTED = p.TaskStatus.REJECTED

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reviews")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.CharField(max_length=64, db_index=True)
    review_commit = models.CharField(max_length=64)
    claimed_at = models.DateTimeField()
    lease_expires = models.DateTimeField(null=True, blank=True)
    verdict = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    reason = models.TextField(blank=True)
    verdict_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["claimed_at", "id"]
        constraints = [
            # One open claim per reviewer per task.
            models.UniqueConstraint(
                fields=["task", "reviewer"],
                condition=Q(closed_at__isnull=True),
                name="review_one_open_per_reviewer",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task} by {self.reviewer}"


class Discovery(models.Model):
    """Seed 002 `discovered[]`."""

    class Severity(models.TextChoices):
        CRITICAL = "critical"
        HIGH = "high"
        MEDIUM = "medium"
        LOW = "low"

    class Urgency(models.TextChoices):
        IMMEDIATE = "immediate"
        DEFERRED = "deferred"

    class Triage(models.TextChoices):
        OPEN = "open"
        CONVERTED = "converted"
        DEFERRED = "deferred"
        REJECTED = "rejected"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="discoveries")
    disc_id = models.CharField(max_length=64)
    by = models.CharField(max_length=64)
    # Task keys as strings: the seed's own example converts a discovery into a task it never
    # lists (disc-2 → task-3a), so these are references, not foreign keys.
    during = models.CharField(max_length=64, blank=True)
    description = models.TextField()
    severity = models.CharField(max_length=10, choices=Severity.choices)
    urgency = models.CharField(max_length=10, choices=Urgency.choices, default=Urgency.DEFERRED)
    recommendation = models.TextField(blank=True)
    created = models.DateTimeField()
    converted_to_task = models.CharField(max_length=64, blank=True)
    # A human's triage (SPEC §7): open until converted into a task, deferred or rejected.
    triage = models.CharField(max_length=10, choices=Triage.choices, default=Triage.OPEN)
    triage_note = models.TextField(blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["created", "id"]
        verbose_name_plural = "discoveries"
        constraints = [
            models.UniqueConstraint(fields=["project", "disc_id"], name="discovery_unique_id")
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.disc_id}"


class Handoff(models.Model):
    """Seed 002 `handoff.<task>`: notes for the next session after context exhaustion."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="handoffs")
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="handoff")
    agent = models.CharField(max_length=64)
    context_used = models.CharField(max_length=16, blank=True)
    timestamp = models.DateTimeField()
    summary = models.CharField(max_length=500)
    next_action = models.CharField(max_length=500)
    approach = models.TextField(blank=True)
    blockers = models.TextField(blank=True)
    files_modified = models.JSONField(default=list, blank=True)
    next_steps = models.JSONField(default=list, blank=True)

    objects = ProjectScopedManager()

    def __str__(self) -> str:
        return f"handoff of {self.task}"


class HumanNote(models.Model):
    """Seed 002 `human_notes[]`: for a task, or for the whole project when task is null."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="human_notes")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="human_notes"
    )
    timestamp = models.DateTimeField()
    message = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return self.message[:60]


class AppendOnlyModel(models.Model):
    """Rows that are written once and never changed (the log, the spec history).

    Enforced here for the ORM and by database triggers for everything else (migration 0002).
    """

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")


class AppendOnlyError(Exception):
    pass


class AppendOnlyQuerySet(ProjectScopedQuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def bulk_update(self, *args, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class SpecChange(AppendOnlyModel):
    """Seed 002 `spec_changes[]` (append-only)."""

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="spec_changes")
    timestamp = models.DateTimeField()
    spec = models.CharField(max_length=500)
    change = models.TextField()
    triggered_by = models.CharField(max_length=200, blank=True)

    objects = models.Manager.from_queryset(AppendOnlyQuerySet)()

    class Meta:
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return f"{self.spec}: {self.change[:40]}"


class Anomaly(models.Model):
    """Seed 002 `anomalies[]`: one of the 13 types with its required `details` fields."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="anomalies")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="anomalies"
    )
    timestamp = models.DateTimeField()
    reporter = models.CharField(max_length=64)
    type = models.CharField(max_length=32, choices=[(t, t) for t in p.ANOMALY_TYPES])
    details = models.JSONField(default=dict, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["timestamp", "id"]
        verbose_name_plural = "anomalies"

    def __str__(self) -> str:
        return f"{self.type} on {self.task}"

    def clean(self) -> None:
        errors = anomaly_details_errors(self.type, self.details)
        if errors:
            raise ValidationError(errors)


def anomaly_details_errors(anomaly_type: str, details: object) -> dict[str, str]:
    """Seed 002 "Required Details Fields": field → problem, empty when the anomaly is valid."""
    if anomaly_type not in p.ANOMALY_REQUIRED_FIELDS:
        return {
            "type": f"unknown anomaly type {anomaly_type!r}; one of {', '.join(p.ANOMALY_TYPES)}"
        }
    if not isinstance(details, dict):
        return {"details": "must be an object"}
    missing = [f for f in p.ANOMALY_REQUIRED_FIELDS[anomaly_type] if details.get(f) in (None, "")]
    if missing:
        return {f"details.{field}": f"required for a {anomaly_type} anomaly" for field in missing}
    return {}


class CircuitBreaker(models.Model):
    """Seed 002 `circuit_breaker`: current status; checks live in CircuitBreakerCheck."""

    class Status(models.TextChoices):
        OK = "OK"
        TRIGGERED = "TRIGGERED"

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="circuit_breaker"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    last_check = models.DateTimeField(null=True, blank=True)
    current_trigger = models.JSONField(null=True, blank=True)

    objects = ProjectScopedManager()

    def __str__(self) -> str:
        return f"circuit breaker of {self.project}: {self.status}"


class CircuitBreakerCheck(models.Model):
    """One entry of `circuit_breaker.history`."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="breaker_checks")
    timestamp = models.DateTimeField()
    pattern = models.CharField(max_length=64, blank=True, help_text="empty = null in state.yaml")
    result = models.CharField(max_length=16)
    # The entry's other seed 002 fields (severity, resolution, resolved_at) and any extra key.
    details = models.JSONField(default=dict, blank=True)
    # A trip's report (boards.selectors.breaker.BreakerReport as JSON): the evidence table, the
    # anomalies, the checklist and the evidence keys that re-arming compares. Not in
    # state.yaml's history (the seed's entry has no such field); null for other entries.
    report = models.JSONField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return f"{self.timestamp}: {self.result}"


class Alert(models.Model):
    """A watcher alert (SPEC §9, the original watcher's 15 types)."""

    class Type(models.TextChoices):
        LEASE_EXPIRED = "lease_expired"
        REVIEW_LEASE_EXPIRED = "review_lease_expired"
        BLOCKED = "blocked"
        ORPHANED_REJECTED = "orphaned_rejected"
        REASSIGNED = "reassigned"
        REVIEW_LOOP = "review_loop"
        INTEGRATION_FAILED = "integration_failed"
        HYPOTHESIS_EXHAUSTION = "hypothesis_exhaustion"
        APPROACHING_LIMITS = "approaching_limits"
        STALLED = "stalled"
        STALE_DRAFT = "stale_draft"
        IMMEDIATE_DISCOVERY = "immediate_discovery"
        INVALID_STATE = "invalid_state"
        STALE_CHECKPOINT = "stale_checkpoint"
        STALE_PAUSE = "stale_pause"
        CIRCUIT_BREAKER = "circuit_breaker"  # TRIGGERED, until a human resolves it
        STATE_TIMEOUT = "state_timeout"  # seed 003: a task over (80 % of) its state's budget
        AGENT_ERROR = "agent_error"  # seed 003: an agent in error (repeated lease expiries)
        SPRINT_DEADLINE = "sprint_deadline"  # seed 000: the sprint's deadline passed
        RUN_STALLED = "run_stalled"  # issue 24: the progress watchdog stopped a task's run
        QUOTA = "quota"  # issue 24: a supervisor paused by its provider's quota wall
        # Issue 24: a task held at the human approval gate (info: it asks for a person).
        AWAITING_APPROVAL = "awaiting_approval"
        BUDGET = "budget"  # issue 24: a budget at 80 % (warning) or spent (critical)
        # Raised and resolved by the webhook's sender, not by a sweep's conditions.
        WEBHOOK_FAILING = "webhook_failing"

    class Level(models.TextChoices):
        INFO = "info"
        WARNING = "warning"
        CRITICAL = "critical"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="alerts")
    type = models.CharField(max_length=32, choices=Type.choices)
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.WARNING)
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="alerts"
    )
    agent_id = models.CharField(max_length=64, blank=True)
    # What the alert is about (a task key, an agent id, a sprint id, a discovery id): at most
    # one open alert per (type, subject); a condition seen again counts on it.
    subject = models.CharField(max_length=64, blank=True)
    message = models.CharField(max_length=500)
    created = models.DateTimeField(help_text="first seen")
    last_seen = models.DateTimeField(null=True, blank=True)
    count = models.PositiveIntegerField(default=1, help_text="sweeps that saw the condition")
    resolved_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # Issue 25: what an age in the alert counts from (a draft's creation, a checkpoint, a pause,
    # the last event), so the age is computed when shown; the message itself holds none.
    since = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "type", "subject"],
                condition=Q(resolved_at__isnull=True),
                name="alert_one_open_per_subject",
            )
        ]

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


class Event(AppendOnlyModel):
    """The append-only log (SPEC §4.1): task history and log.yaml are views of this table.

    Every state change and protocol action writes one row, including refused attempts
    (`outcome` = rejected). Rows are never updated or deleted: the ORM refuses and so does the
    database (triggers in migration 0002).
    """

    class ActorKind(models.TextChoices):
        AGENT = "agent"
        HUMAN = "human"
        SYSTEM = "system"

    class Outcome(models.TextChoices):
        APPLIED = "applied"
        REJECTED = "rejected"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="events")
    task = models.ForeignKey(
        Task, on_delete=models.PROTECT, null=True, blank=True, related_name="events"
    )
    timestamp = models.DateTimeField(db_index=True)
    actor_kind = models.CharField(max_length=10, choices=ActorKind.choices)
    actor_id = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64)
    from_status = models.CharField(max_length=32, blank=True)
    to_status = models.CharField(max_length=32, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.APPLIED)
    detail = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    # The task's board fields as this event left them (boards.selectors.replay: time travel);
    # null for events about no task and for histories imported from files.
    board = models.JSONField(null=True, blank=True)

    objects = models.Manager.from_queryset(AppendOnlyQuerySet)()

    class Meta:
        ordering = ["timestamp", "id"]
        indexes = [
            models.Index(fields=["project", "task", "timestamp"]),
            # The activity feed's keyset pages: a project's events newest first, from an id.
            models.Index(fields=["project", "-id"], name="event_project_recent"),
            # The insights' state history (boards.selectors.insights): each task's applied
            # transitions in order, read from the index alone (an index-only scan, already in
            # the order of its LAG/LEAD windows), not from the wide rows with their JSON.
            models.Index(
                fields=["project", "task", "timestamp", "id"],
                include=["to_status"],
                condition=Q(outcome="applied", task__isnull=False) & ~Q(to_status=""),
                name="event_state_history",
            ),
        ]
        constraints = [
            # "One-line detail is mandatory" (seed 002 log.yaml).
            models.CheckConstraint(condition=~Q(detail=""), name="event_detail_required"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.timestamp:%Y-%m-%dT%H:%M:%SZ} {self.actor_id or self.actor_kind} {self.action}"
        )

    def _config_changes(self) -> dict | None:
        changes = (self.data or {}).get("changes") if self.action == "config_updated" else None
        if isinstance(changes, dict) and any(n in changes for n in p.SECRET_URL_SETTINGS):
            return changes
        return None

    @property
    def shown_detail(self) -> str:
        """The detail as pages show it to anyone: a webhook URL as "changed" (events written
        before issue #27 held the whole URL in `detail`)."""
        changes = self._config_changes()
        return self.detail if changes is None else p.config_change_detail(changes)

    def shown_data(self, *, admin: bool) -> dict:
        """The data as the API answers it to this reader (`protocol.config_changes_shown`)."""
        changes = self._config_changes()
        if changes is None:
            return self.data
        return {**self.data, "changes": p.config_changes_shown(changes, admin=admin)}


class WebhookDelivery(models.Model):
    """One message for the project's escalation webhook (an outbox row): written in the
    sweep's transaction, sent by a watcher after it commits, retried with backoff."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        GAVE_UP = "gave_up"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    alert = models.ForeignKey(
        Alert, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )

    class Channel(models.TextChoices):
        ESCALATION = "escalation"  # the project's signed escalation webhook
        EMAIL = "email"  # a person's notifications (issue 24), through Django's e-mail
        SLACK = "slack"  # ... or to a Slack or Discord incoming webhook
        DISCORD = "discord"

    kind = models.CharField(
        max_length=32, help_text="alert.raised, alert.escalated, notification or digest"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.ESCALATION)
    # A notification's person and address (an e-mail address or a chat webhook URL); the
    # escalation webhook's address is the project's setting, read at each send.
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    target = models.CharField(max_length=500, blank=True)
    # The exact JSON body, signed and sent as is on every attempt (the receiver dedupes on
    # its `delivery` id).
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField()
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A sender's claim: while it runs no other watcher takes the row (crash: it expires).
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_due")]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.kind}, {self.status})"


class WebhookAttempt(models.Model):
    """One try at sending a delivery: the delivery log shown to project admins."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    at = models.DateTimeField()
    url = models.CharField(max_length=200, blank=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"attempt {self.pk} of delivery {self.delivery_id}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class NotificationPreference(models.Model):
    """Issue 24: what one person hears of one project, and where: `events` (protocol.NotifyEvent
    values), e-mail to their address, a chat incoming webhook (Slack's or Discord's format; its
    URL set by a project admin), and how often (`digest_minutes`: 0 at once, else one message
    gathering everything of that many minutes)."""

    class ChatFormat(models.TextChoices):
        SLACK = "slack"
        DISCORD = "discord"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="liza_notifications"
    )
    events = models.JSONField(default=list, blank=True)
    email = models.BooleanField(default=False)
    chat_url = models.URLField(max_length=500, blank=True)
    chat_format = models.CharField(
        max_length=10, choices=ChatFormat.choices, default=ChatFormat.SLACK
    )
    digest_minutes = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="notification_pref_unique")
        ]

    def __str__(self) -> str:
        return f"notifications of {self.user} @ {self.project}"


class Notification(models.Model):
    """One event for one person: waiting for its message (a digest gathers several), then
    sent in the `WebhookDelivery` rows of that message (one per channel)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="notifications")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)
    alert = models.ForeignKey(
        Alert, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    text = models.CharField(max_length=1000)
    created = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedManager()

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["project", "sent_at"], name="notification_pending")]

    def __str__(self) -> str:
        return f"{self.event} for {self.user}: {self.text[:40]}"


class ChangeSummary(models.Model):
    """What a coder's submission changed (issue 25 "what changed, on the card"): the files with
    their added and deleted lines and the unified diff from the task's base commit to the review
    commit, bounded by the agent before upload (agents.client.gitops.change_summary) and by the
    submit input. One per submission: each review round reads the one of its review commit."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="change_summaries")
    review_commit = models.CharField(max_length=64)
    iteration = models.PositiveIntegerField(null=True, blank=True)
    files = models.JSONField(default=list)  # [{"path", "added", "deleted"}]; -1: binary
    diff = models.TextField(blank=True)
    truncated = models.BooleanField(default=False)
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"changes of {self.task_id} at {self.review_commit}"
