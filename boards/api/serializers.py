"""API serializers: inputs are validated shapes only, outputs are plain reads (STYLE.md API).

No business logic lives here: views pass validated data to services.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards import protocol as p
from boards.coordination.models.projects import Goal, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, Anomaly, Event
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.reviews import awaiting_human_approval, review_live
from boards.coordination.selectors.sprints import sprint_metrics_current
from boards.protocol import TaskStatus
from boards.watch.models import NotificationPreference

# -- the error envelope (documented once, used in every endpoint's responses) -------------------


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="invalid_transition, conflict, lease_lost, paused, …")
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


# -- outputs ----------------------------------------------------------------------------------


class TaskSerializer(serializers.ModelSerializer):
    depends_on = serializers.SerializerMethodField()
    waiting_on = serializers.SerializerMethodField()
    reviewing_by = serializers.SerializerMethodField()
    review_lease_expires = serializers.SerializerMethodField()
    allowed_transitions = serializers.SerializerMethodField()
    awaiting_human_approval = serializers.SerializerMethodField()
    # The pull request its coder reported (issue 25), "" when none: a string, not a `uri` (an
    # empty one would not be one).
    pr_url = serializers.CharField(read_only=True)

    class Meta:
        model = Task
        fields = [
            "key",
            "description",
            "status",
            "priority",
            "criticality",
            "created",
            "updated",
            "spec_ref",
            "done_when",
            "scope",
            "depends_on",
            "waiting_on",
            "assigned_to",
            "worktree",
            "base_commit",
            "review_commit",
            "merge_commit",
            "pr_url",
            "approved_by",
            "iteration",
            "review_cycles_current",
            "review_cycles_total",
            "rejection_reason",
            "blocked_reason",
            "blocked_questions",
            "attempted",
            "failed_by",
            "superseded_by",
            "supersedes",
            "rescope_reason",
            "integration_fix",
            "handoff_pending",
            "lease_expires",
            "reviewing_by",
            "review_lease_expires",
            "max_iterations",
            "max_review_cycles",
            "lease_duration_override",
            "needs_human_approval",
            "awaiting_human_approval",
            "suspended_at",
            "suspended_by",
            "suspended_reason",
            "allowed_transitions",
        ]
        read_only_fields = fields

    def get_depends_on(self, task: Task) -> list[str]:
        return sorted(d.key for d in task.depends_on.all())

    def get_waiting_on(self, task: Task) -> list[str]:
        return sorted(d.key for d in task.depends_on.all() if d.status != TaskStatus.MERGED)

    def _active_reviews(self, task: Task) -> list[Review]:
        now = self.context.get("now") or timezone.now()
        config = config_of(task.project)
        return [r for r in task.reviews.all() if review_live(r, now, config)]

    def get_reviewing_by(self, task: Task) -> list[str]:
        return [r.reviewer for r in self._active_reviews(task)]

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_review_lease_expires(self, task: Task) -> str | None:
        leases = [r.lease_expires for r in self._active_reviews(task)]
        return serializers.DateTimeField().to_representation(min(leases)) if leases else None

    def get_allowed_transitions(self, task: Task) -> list[str]:
        return p.task_targets(task.status)

    def get_awaiting_human_approval(self, task: Task) -> bool:
        """The reviewers approved; a human's approval gate holds it (seed 004)."""
        return awaiting_human_approval(task)


class EventSerializer(serializers.ModelSerializer):
    """An event; a config change of the escalation webhook reads "changed" unless the context
    says the reader is an admin (`admin`: True), who sees its URLs redacted (docs/security.md)."""

    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    detail = serializers.CharField(source="shown_detail", read_only=True)
    data = serializers.SerializerMethodField()

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_data(self, event: Event) -> dict:
        return event.shown_data(admin=bool(self.context.get("admin")))

    class Meta:
        model = Event
        fields = [
            "id",
            "timestamp",
            "task",
            "actor_kind",
            "actor_id",
            "action",
            "from_status",
            "to_status",
            "outcome",
            "detail",
            "data",
        ]
        read_only_fields = fields


class HumanNoteSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = HumanNote
        fields = ["timestamp", "task", "message", "author"]
        read_only_fields = fields


class HandoffSerializer(serializers.ModelSerializer):
    class Meta:
        model = Handoff
        fields = [
            "agent",
            "context_used",
            "timestamp",
            "summary",
            "next_action",
            "approach",
            "blockers",
            "files_modified",
            "next_steps",
        ]
        read_only_fields = fields


class AnomalySerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)

    class Meta:
        model = Anomaly
        fields = ["id", "timestamp", "task", "reporter", "type", "details"]
        read_only_fields = fields


class DiscoverySerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="disc_id", read_only=True)

    class Meta:
        model = Discovery
        fields = [
            "id",
            "by",
            "during",
            "description",
            "severity",
            "urgency",
            "recommendation",
            "created",
            "converted_to_task",
            "triage",
            "triage_note",
        ]
        read_only_fields = fields


class ReviewSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True)
    # Blank until the reviewer gives its verdict.
    verdict = serializers.ChoiceField(
        choices=[("", "no verdict yet"), *Review.Verdict.choices], read_only=True
    )

    class Meta:
        model = Review
        fields = [
            "id",
            "task",
            "reviewer",
            "review_commit",
            "claimed_at",
            "lease_expires",
            "verdict",
            "reason",
            "verdict_at",
            "closed_at",
        ]
        read_only_fields = fields


class TaskDetailSerializer(TaskSerializer):
    history = serializers.SerializerMethodField()
    human_notes = HumanNoteSerializer(many=True, read_only=True)
    handoff = serializers.SerializerMethodField()
    anomalies = AnomalySerializer(many=True, read_only=True)
    reviews = ReviewSerializer(many=True, read_only=True)

    class Meta(TaskSerializer.Meta):
        fields = [
            *TaskSerializer.Meta.fields,
            "history",
            "human_notes",
            "handoff",
            "anomalies",
            "reviews",
        ]
        read_only_fields = fields

    @extend_schema_field(EventSerializer(many=True))
    def get_history(self, task: Task) -> list[dict]:
        events = Event.objects.filter(task=task).order_by("timestamp", "id")
        return EventSerializer(events, many=True).data

    @extend_schema_field(HandoffSerializer(allow_null=True))
    def get_handoff(self, task: Task) -> dict | None:
        handoff = Handoff.objects.filter(task=task).first()
        return HandoffSerializer(handoff).data if handoff else None


class GoalSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="goal_id", read_only=True)

    class Meta:
        model = Goal
        fields = ["id", "description", "spec_ref", "created", "status", "alignment_history"]
        read_only_fields = fields


class SprintSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="sprint_id", read_only=True)
    goal = serializers.SlugRelatedField(slug_field="goal_id", read_only=True)
    planned = serializers.SlugRelatedField(slug_field="key", many=True, read_only=True)
    stretch = serializers.SlugRelatedField(slug_field="key", many=True, read_only=True)
    metrics = serializers.SerializerMethodField()

    class Meta:
        model = Sprint
        fields = [
            "id",
            "goal",
            "status",
            "planned",
            "stretch",
            "started",
            "deadline",
            "checkpoint_at",
            "ended",
            "metrics",
            "retrospective",
        ]
        read_only_fields = fields

    def get_metrics(self, sprint: Sprint) -> dict:
        return sprint_metrics_current(sprint)


class WorkSerializer(serializers.Serializer):
    role = serializers.CharField()
    agent = serializers.CharField(
        allow_null=True,
        help_text="the asking agent's id (what `liza supervise --id` checks before it "
        "registers); null when a human asks, or an agent asks about another role",
    )
    work = serializers.BooleanField(help_text="there is work this role can take now")
    exit = serializers.IntegerField(
        allow_null=True,
        help_text="0 when the role is complete (seed 000); a coder or reviewer's only once no "
        "task is open past DRAFT and no goal is IN_PROGRESS; 42 to stop; else null",
    )
    waiting_for_drafts = serializers.IntegerField(help_text="DRAFT tasks the planner may finalize")
    retry_after = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()
    availability = serializers.CharField(
        allow_null=True,
        help_text="the asking agent's: enabled, overloaded or error (seed 003); null for a role",
    )
    merge = serializers.ListField(
        child=serializers.CharField(),
        help_text="a code reviewer's APPROVED tasks whose merge it must still report",
    )
    budget = serializers.CharField(
        required=False,
        help_text="issue 24: the scope of a spent budget that holds this agent's work "
        "(project, goal, sprint, agent, task) until an admin raises it",
    )


class ClaimResultSerializer(serializers.Serializer):
    task = TaskSerializer(allow_null=True)


class ReviewClaimResultSerializer(serializers.Serializer):
    """A review claim-next: the review claimed (or held) and its task; both null when none."""

    review = ReviewSerializer(allow_null=True)
    task = TaskSerializer(allow_null=True)


class NotificationsSerializer(serializers.ModelSerializer):
    """A member's notification preferences (issue 24). The chat webhook's URL is its secret:
    only whether one is set, never the URL."""

    user = serializers.CharField(source="user.username", read_only=True)
    chat_url_set = serializers.SerializerMethodField()

    class Meta:
        model = NotificationPreference
        fields = ["user", "events", "email", "digest_minutes", "chat_format", "chat_url_set"]
        read_only_fields = fields

    def get_chat_url_set(self, pref: NotificationPreference) -> bool:
        return bool(pref.chat_url)


class ConfigSerializer(serializers.ModelSerializer):
    """The project's config. `escalation_webhook` only with `show_webhook=True` in the context
    (project admins): webhook URLs often carry a token, and agents never need it."""

    # An output field, but not read-only: drf-spectacular lists every read-only field as
    # required, and this one is absent for everyone but admins.
    escalation_webhook = serializers.URLField(
        required=False,
        allow_null=True,
        help_text="project admins only (absent for everyone else); null when none is set",
    )
    webhook_secret_set = serializers.BooleanField(
        source="webhook_secret",
        required=False,
        help_text="project admins only: whether the webhook's signing secret is set (the "
        "secret itself is write-only and never shown)",
    )

    class Meta:
        model = ProjectConfig
        fields = [
            "max_coder_iterations",
            "max_review_cycles",
            "heartbeat_interval",
            "lease_duration",
            "coder_poll_interval",
            "coder_max_wait",
            "integration_branch",
            "escalation_webhook",
            "webhook_secret_set",
            "lease_grace",
            "archive_after_days",
            "watch_interval",
            "review_churn_threshold",
            "retry_backoff",
            "state_timeouts",
            "wip_limits",
            "stall_timeout",
            "max_stalls",
            "max_concurrent",
        ]
        read_only_fields = [
            name for name in fields if name not in ("escalation_webhook", "webhook_secret_set")
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if self.context.get("show_webhook", False):
            data["escalation_webhook"] = instance.escalation_webhook or None
            data["webhook_secret_set"] = bool(instance.webhook_secret)
        else:
            data.pop("escalation_webhook", None)
            data.pop("webhook_secret_set", None)
        return data


class ProjectStateSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    paused_at = serializers.DateTimeField(allow_null=True)
    paused_reason = serializers.CharField(allow_blank=True)


class InboxTaskSerializer(serializers.Serializer):
    project = serializers.CharField(source="project.slug")
    key = serializers.CharField(source="task.key")
    description = serializers.CharField(source="task.description")
    status = serializers.CharField(source="task.status")
    priority = serializers.IntegerField(source="task.priority")
    criticality = serializers.CharField(source="task.criticality")
    assigned_to = serializers.CharField(source="task.assigned_to")
    since = serializers.DateTimeField(help_text="when it entered its current state")
    age_seconds = serializers.IntegerField(allow_null=True)
    limit_blocked = serializers.BooleanField(
        help_text="BLOCKED by a limit: only a written release, a rescope or an abandon moves it"
    )
    blocked_reason = serializers.CharField(source="task.blocked_reason")
    blocked_questions = serializers.ListField(
        child=serializers.CharField(), source="task.blocked_questions"
    )
    attempted = serializers.ListField(child=serializers.CharField(), source="task.attempted")
    failed_by = serializers.ListField(child=serializers.CharField(), source="task.failed_by")
    review_commit = serializers.CharField(source="task.review_commit")
    suspended_at = serializers.DateTimeField(source="task.suspended_at", allow_null=True)
    suspended_by = serializers.CharField(source="task.suspended_by")
    suspended_reason = serializers.CharField(source="task.suspended_reason")


class InboxDiscoverySerializer(serializers.Serializer):
    project = serializers.CharField(source="project.slug")
    id = serializers.CharField(source="discovery.disc_id")
    by = serializers.CharField(source="discovery.by")
    during = serializers.CharField(source="discovery.during")
    description = serializers.CharField(source="discovery.description")
    severity = serializers.CharField(source="discovery.severity")
    recommendation = serializers.CharField(source="discovery.recommendation")
    created = serializers.DateTimeField(source="discovery.created")
    age_seconds = serializers.IntegerField()


class InboxCheckpointSerializer(serializers.Serializer):
    project = serializers.CharField(source="project.slug")
    sprint = serializers.CharField(source="sprint.sprint_id")
    goal = serializers.CharField(source="sprint.goal.goal_id")
    checkpoint_at = serializers.DateTimeField(source="sprint.checkpoint_at", allow_null=True)
    deadline = serializers.DateTimeField(source="sprint.deadline", allow_null=True)
    age_seconds = serializers.IntegerField(allow_null=True, help_text="time at CHECKPOINT")


class InboxPauseSerializer(serializers.Serializer):
    project = serializers.CharField(source="project.slug")
    paused_at = serializers.DateTimeField(source="project.paused_at")
    paused_reason = serializers.CharField(source="project.paused_reason")
    age_seconds = serializers.IntegerField()


class InboxSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    blocked = InboxTaskSerializer(many=True)
    integration_failed = InboxTaskSerializer(many=True)
    awaiting_approval = InboxTaskSerializer(many=True)
    suspended = InboxTaskSerializer(many=True)
    discoveries = InboxDiscoverySerializer(many=True)
    checkpoints = InboxCheckpointSerializer(many=True)
    paused = InboxPauseSerializer(many=True)


class AlertSerializer(serializers.ModelSerializer):
    """A watcher alert (SPEC §9); `severity` is its level, `first_seen` when it was raised."""

    severity = serializers.CharField(source="level", read_only=True)
    first_seen = serializers.DateTimeField(source="created", read_only=True)
    task = serializers.SlugRelatedField(slug_field="key", read_only=True)
    acknowledged_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    open = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "type",
            "subject",
            "severity",
            "message",
            "task",
            "agent_id",
            "first_seen",
            "last_seen",
            "count",
            "escalated_at",
            "resolved_at",
            "open",
            "acknowledged_by",
            "acknowledged_at",
        ]
        read_only_fields = fields

    def get_open(self, alert: Alert) -> bool:
        return alert.resolved_at is None


class BreakerCheckSerializer(serializers.Serializer):
    """One entry of seed 002's `circuit_breaker.history` (the report is on the breaker)."""

    timestamp = serializers.DateTimeField()
    pattern = serializers.SerializerMethodField()
    result = serializers.CharField()
    severity = serializers.SerializerMethodField()
    resolution = serializers.SerializerMethodField()
    resolved_at = serializers.SerializerMethodField()
    resolved_by = serializers.SerializerMethodField()

    def get_pattern(self, check) -> str | None:
        return check.pattern or None

    def _detail(self, check, name: str) -> str | None:
        value = (check.details or {}).get(name)
        return None if value is None else str(value)

    def get_severity(self, check) -> str | None:
        return self._detail(check, "severity")

    def get_resolution(self, check) -> str | None:
        return self._detail(check, "resolution")

    def get_resolved_at(self, check) -> str | None:
        return self._detail(check, "resolved_at")

    def get_resolved_by(self, check) -> str | None:
        return self._detail(check, "resolved_by")


class BreakerSerializer(serializers.Serializer):
    """The circuit breaker (seed 002 `circuit_breaker`): status, the current trigger, the
    report of the current trip (else of the last one, resolved) and the history."""

    status = serializers.CharField()
    last_check = serializers.DateTimeField(allow_null=True)
    current_trigger = serializers.JSONField(allow_null=True)
    report = serializers.JSONField(allow_null=True)
    history = BreakerCheckSerializer(many=True)
