"""API serializers: inputs are validated shapes only, outputs are plain reads (STYLE.md API).

No business logic lives here: views pass validated data to services.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from django.utils import timezone
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards import protocol as p
from boards.models import (
    Anomaly,
    Discovery,
    Event,
    Goal,
    Handoff,
    HumanNote,
    ProjectConfig,
    Review,
    Sprint,
    Task,
)

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
        return sorted(d.key for d in task.depends_on.all() if d.status != "MERGED")

    def _active_reviews(self, task: Task) -> list[Review]:
        now = self.context.get("now") or timezone.now()
        return [r for r in task.reviews.all() if r.is_active(now)]

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
        from boards.selectors import awaiting_human_approval

        return awaiting_human_approval(task)


class EventSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)

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
        from boards.selectors import sprint_metrics

        # Live while the sprint is open; the snapshot taken at its end afterwards.
        return sprint.metrics if not sprint.is_open and sprint.metrics else sprint_metrics(sprint)


# -- inputs -----------------------------------------------------------------------------------


class InputSerializer(serializers.Serializer):
    """A request body: a field it does not know is a 400 naming it, never silently dropped.

    DRF ignores unknown keys; for the agent protocol that would turn a misspelt `depends_on`
    or `questions` into an operation that "succeeded" without the data (SPEC §6: validation →
    400 naming the field).
    """

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(name) for name in data if name not in self.fields)
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class InputSerializerSchema(OpenApiSerializerExtension):
    """Say it in the OpenAPI schema too: request bodies take no other properties."""

    target_class = InputSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


COMMIT = {"max_length": 64, "allow_blank": False}
KEY = {"max_length": 64, "allow_blank": False}


class ClaimInput(InputSerializer):
    base_commit = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="integration HEAD at claim time"
    )
    worktree = serializers.CharField(required=False, allow_blank=True, max_length=500)


class SubmitInput(InputSerializer):
    review_commit = serializers.CharField(**COMMIT)
    tree_clean = serializers.BooleanField(
        help_text="attestation that `git status --porcelain` is empty (seed 002 Clean Sync)"
    )


class BlockInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)
    questions = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        min_length=1,
        max_length=p.MAX_BLOCKED_QUESTIONS,
    )
    attempted = serializers.ListField(
        child=serializers.CharField(max_length=1000), required=False, max_length=100
    )


class VerdictInput(InputSerializer):
    verdict = serializers.ChoiceField(choices=Review.Verdict.values)
    review_commit = serializers.CharField(**COMMIT)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class MergeInput(InputSerializer):
    merge_commit = serializers.CharField(**COMMIT)


class ReasonInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)


class OverrideBlockInput(ReasonInput):
    questions = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        required=False,
        max_length=p.MAX_BLOCKED_QUESTIONS,
    )


class HandoffInput(InputSerializer):
    summary = serializers.CharField(max_length=500)
    next_action = serializers.CharField(max_length=500)
    context_used = serializers.CharField(required=False, allow_blank=True, max_length=16)
    approach = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    blockers = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    files_modified = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=500
    )
    next_steps = serializers.ListField(
        child=serializers.CharField(max_length=1000), required=False, max_length=100
    )


class DiscoveryInput(InputSerializer):
    description = serializers.CharField(max_length=5000)
    severity = serializers.ChoiceField(choices=p.DISCOVERY_SEVERITIES)
    urgency = serializers.ChoiceField(
        choices=p.DISCOVERY_URGENCIES, required=False, default="deferred"
    )
    during = serializers.CharField(required=False, allow_blank=True, max_length=64)
    recommendation = serializers.CharField(required=False, allow_blank=True, max_length=5000)


ANOMALY_DETAILS_MAX_CHARS = 10_000


def _holds_null_character(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_null_character(k) or _holds_null_character(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_null_character(v) for v in value)
    return False


class AnomalyInput(InputSerializer):
    type = serializers.ChoiceField(choices=p.ANOMALY_TYPES)
    details = serializers.DictField(help_text="the type's required fields (seed 002)")
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)

    def validate_details(self, details: dict) -> dict:
        # Stored as jsonb, and PostgreSQL refuses NUL in any jsonb string, key or value.
        if _holds_null_character(details):
            raise serializers.ValidationError("null characters are not allowed")
        if len(json.dumps(details)) > ANOMALY_DETAILS_MAX_CHARS:
            raise serializers.ValidationError(
                f"at most {ANOMALY_DETAILS_MAX_CHARS} characters of JSON"
            )
        return details


class LogInput(InputSerializer):
    action = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
    detail = serializers.CharField(max_length=500)
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)


class NewTaskInput(InputSerializer):
    key = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
    description = serializers.CharField(max_length=10_000)
    priority = serializers.IntegerField(min_value=1, max_value=5, required=False, default=3)
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)
    done_when = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    scope = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    criticality = serializers.ChoiceField(
        choices=Task.Criticality.choices, required=False, default="standard"
    )
    max_iterations = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True
    )
    max_review_cycles = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True
    )
    lease_duration_override = serializers.IntegerField(
        min_value=30, max_value=86_400, required=False, allow_null=True
    )
    needs_human_approval = serializers.BooleanField(
        required=False,
        help_text="a human approves before merge (seed 004); default: security-sensitive only",
    )
    depends_on = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=200
    )


class CreateTaskInput(NewTaskInput):
    sprint_scope = serializers.ChoiceField(
        choices=["planned", "stretch"], required=False, allow_null=True
    )


class DependenciesInput(InputSerializer):
    depends_on = serializers.ListField(child=serializers.CharField(max_length=64), max_length=200)


class RescopeInput(ReasonInput):
    new_tasks = NewTaskInput(many=True, allow_empty=False)


class GoalInput(InputSerializer):
    description = serializers.CharField(max_length=10_000)
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)


class SprintInput(InputSerializer):
    planned = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=1000
    )
    stretch = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=1000
    )
    deadline = serializers.DateTimeField(required=False, allow_null=True)


class WorkSerializer(serializers.Serializer):
    role = serializers.CharField()
    work = serializers.BooleanField(help_text="there is work this role can take now")
    exit = serializers.IntegerField(
        allow_null=True, help_text="0 when the role is complete (seed 000)"
    )
    waiting_for_drafts = serializers.IntegerField(help_text="DRAFT tasks the planner may finalize")
    retry_after = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class ClaimResultSerializer(serializers.Serializer):
    task = TaskSerializer(allow_null=True)


# -- human oversight (boards/api/oversight.py) -----------------------------------------------


class ApprovalInput(InputSerializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class LimitsInput(InputSerializer):
    """Per-task overrides; null puts a limit back to the project's setting."""

    priority = serializers.IntegerField(min_value=1, max_value=5, required=False)
    max_iterations = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True
    )
    max_review_cycles = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, allow_null=True
    )
    lease_duration_override = serializers.IntegerField(
        min_value=30, max_value=86_400, required=False, allow_null=True
    )
    needs_human_approval = serializers.BooleanField(required=False)


class DecisionInput(InputSerializer):
    decision = serializers.CharField(max_length=2000, help_text="recorded in the retrospective")


class DeadlineInput(InputSerializer):
    deadline = serializers.DateTimeField(allow_null=True, help_text="in the future; null clears")


class NoteInput(InputSerializer):
    message = serializers.CharField(max_length=5000)
    task = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="omit for a project note"
    )


class ConvertTaskInput(CreateTaskInput):
    description = serializers.CharField(
        required=False, max_length=10_000, help_text="defaults to the discovery's description"
    )


class TriageInput(InputSerializer):
    decision = serializers.ChoiceField(choices=["convert", "defer", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    task = ConvertTaskInput(required=False, help_text="convert only: the DRAFT task to create")


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
            "lease_grace",
            "archive_after_days",
        ]
        read_only_fields = [name for name in fields if name != "escalation_webhook"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if self.context.get("show_webhook", False):
            data["escalation_webhook"] = instance.escalation_webhook or None
        else:
            data.pop("escalation_webhook", None)
        return data


class ConfigInput(InputSerializer):
    max_coder_iterations = serializers.IntegerField(required=False, min_value=1)
    max_review_cycles = serializers.IntegerField(required=False, min_value=1)
    heartbeat_interval = serializers.IntegerField(required=False, min_value=0)
    lease_duration = serializers.IntegerField(required=False, min_value=1)
    coder_poll_interval = serializers.IntegerField(required=False, min_value=0)
    coder_max_wait = serializers.IntegerField(required=False, min_value=0)
    integration_branch = serializers.CharField(required=False, max_length=200)
    escalation_webhook = serializers.URLField(required=False, allow_blank=True, allow_null=True)
    lease_grace = serializers.IntegerField(required=False, min_value=0)
    archive_after_days = serializers.IntegerField(required=False, min_value=0)


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
