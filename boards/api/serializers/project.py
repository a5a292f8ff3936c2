"""A project's settings, its state, a member's notification preferences, and a person's inbox
across projects.
"""

from __future__ import annotations

from rest_framework import serializers

from boards.api.serializers.base import ReadOnlyModelSerializer
from boards.coordination.models.projects import ProjectConfig
from boards.watch.models import NotificationPreference


class NotificationsSerializer(ReadOnlyModelSerializer):
    """A member's notification preferences (issue 24). The chat webhook's URL is its secret:
    only whether one is set, never the URL."""

    user = serializers.CharField(source="user.username", read_only=True)
    chat_url_set = serializers.SerializerMethodField()

    class Meta:
        model = NotificationPreference
        fields = ["user", "events", "email", "digest_minutes", "chat_format", "chat_url_set"]

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
