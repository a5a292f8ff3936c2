"""The task and what hangs off it: reviews, discoveries, handoffs, human notes, the change summary
of a review round (seed 000's task machine, seed 002's fields).

As for every coordination row, the status moves only through the transition methods below,
called by the services (`boards/coordination/services/`) with the row locked.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from boards import protocol as p
from boards.coordination.models.machines import seed_transition
from boards.coordination.models.projects import (
    Goal,
    Project,
    ProjectConfig,
    ProjectScopedModel,
    ProjectScopedQuerySet,
    unique_in_project,
)


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
    # Issue 25: the pull request the coder reported with its last submission (http(s) only).
    pr_url = models.URLField(max_length=500, blank=True)
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
            unique_in_project("key", name="task_unique_key"),
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

    # -- seed 000's 13 edges (protocol.TASK_EDGES) ------------------------------------------

    @seed_transition(p.TASK_EDGES, conditions=[_ready_to_finalize])
    def finalize(self) -> None:
        """The planner finished the definition (done_when and spec_ref present)."""

    @seed_transition(p.TASK_EDGES, conditions=[_dependencies_merged, _holds_claim])
    def claim(self) -> None:
        """A coder takes an UNCLAIMED task whose dependencies are all MERGED."""

    @seed_transition(p.TASK_EDGES, conditions=[_holds_claim])
    def reclaim(self) -> None:
        """The coder (or, after its lease lapsed, another coder) resumes a rejected task."""

    @seed_transition(p.TASK_EDGES, conditions=[_holds_claim])
    def claim_integration_fix(self) -> None:
        """Any coder takes the failed merge, keeping the worktree."""

    @seed_transition(p.TASK_EDGES, conditions=[_has_review_commit])
    def submit_for_review(self) -> None:
        """The coder requests review of a clean, committed tree."""

    @seed_transition(p.TASK_EDGES, conditions=[_has_block_diagnosis])
    def block(self) -> None:
        """The coder cannot proceed."""

    @seed_transition(p.TASK_EDGES)
    def approve(self) -> None:
        """Enough distinct reviewers approved the round (seed 001 criticality)."""

    @seed_transition(p.TASK_EDGES, conditions=[_has_rejection_reason])
    def reject(self) -> None:
        """One rejection rejects the round."""

    @seed_transition(p.TASK_EDGES, conditions=[_worktree_cleared])
    def merge(self) -> None:
        """Merged to the integration branch."""

    @seed_transition(p.TASK_EDGES)
    def fail_integration(self) -> None:
        """Merge conflict or integration test failure."""

    @seed_transition(p.TASK_EDGES)
    def release(self) -> None:
        """Escalation answered: back to the queue (failed_by kept, worktree cleared)."""

    @seed_transition(p.TASK_EDGES, conditions=[_has_rescope])
    def supersede(self) -> None:
        """Rescoped into new tasks."""

    @seed_transition(p.TASK_EDGES)
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


class Review(ProjectScopedModel):
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


class Discovery(ProjectScopedModel):
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

    class Meta:
        ordering = ["created", "id"]
        verbose_name_plural = "discoveries"
        constraints = [unique_in_project("disc_id", name="discovery_unique_id")]

    def __str__(self) -> str:
        return f"{self.project}/{self.disc_id}"


class Handoff(ProjectScopedModel):
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

    def __str__(self) -> str:
        return f"handoff of {self.task}"


class HumanNote(ProjectScopedModel):
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

    class Meta:
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return self.message[:60]


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
