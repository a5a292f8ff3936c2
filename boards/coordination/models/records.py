"""The record: the append-only log (events, spec changes), anomalies, alerts and the circuit
breaker's state. Events and spec changes are never updated or deleted (SPEC §4.1; the ORM
refuses and migration 0002's triggers refuse too).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from boards import protocol as p
from boards.coordination.models.projects import (
    Project,
    ProjectScopedModel,
    ProjectScopedQuerySet,
    unique_in_project,
)
from boards.coordination.models.tasks import Task


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


class Anomaly(ProjectScopedModel):
    """Seed 002 `anomalies[]`: one of the 13 types with its required `details` fields."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="anomalies")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="anomalies"
    )
    timestamp = models.DateTimeField()
    reporter = models.CharField(max_length=64)
    type = models.CharField(max_length=32, choices=[(t, t) for t in p.ANOMALY_TYPES])
    details = models.JSONField(default=dict, blank=True)

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


class CircuitBreaker(ProjectScopedModel):
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

    def __str__(self) -> str:
        return f"circuit breaker of {self.project}: {self.status}"


class CircuitBreakerCheck(ProjectScopedModel):
    """One entry of `circuit_breaker.history`."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="breaker_checks")
    timestamp = models.DateTimeField()
    pattern = models.CharField(max_length=64, blank=True, help_text="empty = null in state.yaml")
    result = models.CharField(max_length=16)
    # The entry's other seed 002 fields (severity, resolution, resolved_at) and any extra key.
    details = models.JSONField(default=dict, blank=True)
    # A trip's report (boards.watch.selectors.breaker.BreakerReport as JSON): the evidence table,
    # the anomalies, the checklist and the evidence keys that re-arming compares. Not in
    # state.yaml's history (the seed's entry has no such field); null for other entries.
    report = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return f"{self.timestamp}: {self.result}"


class Alert(ProjectScopedModel):
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

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            unique_in_project(
                "type",
                "subject",
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
    # The task's board fields as this event left them (boards.board.selectors.replay: time
    # travel); null for events about no task and for histories imported from files.
    board = models.JSONField(null=True, blank=True)

    objects = models.Manager.from_queryset(AppendOnlyQuerySet)()

    class Meta:
        ordering = ["timestamp", "id"]
        indexes = [
            models.Index(fields=["project", "task", "timestamp"]),
            # The activity feed's keyset pages: a project's events newest first, from an id.
            models.Index(fields=["project", "-id"], name="event_project_recent"),
            # The insights' state history (boards.insights.selectors.insights): each task's applied
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
