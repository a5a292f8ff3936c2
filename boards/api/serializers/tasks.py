"""A task, its detail (reviews, notes, discoveries, anomalies, the latest handoff), its reviews, and
what `/work` and the claims answer.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards import protocol as p
from boards.api.serializers.base import ReadOnlyModelSerializer
from boards.api.serializers.records import (
    AnomalySerializer,
    EventSerializer,
    HandoffSerializer,
    HumanNoteSerializer,
)
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Handoff, Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.reviews import awaiting_human_approval, review_live
from boards.protocol import TaskStatus


class TaskSerializer(ReadOnlyModelSerializer):
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


# A review under its task: in the API's answer (with its id and task) and in the admin's task page.
REVIEW_FIELDS = (
    "reviewer",
    "review_commit",
    "claimed_at",
    "lease_expires",
    "verdict",
    "reason",
    "verdict_at",
    "closed_at",
)


class ReviewSerializer(ReadOnlyModelSerializer):
    task = serializers.SlugRelatedField(slug_field="key", read_only=True)
    # Blank until the reviewer gives its verdict.
    verdict = serializers.ChoiceField(
        choices=[("", "no verdict yet"), *Review.Verdict.choices], read_only=True
    )

    class Meta:
        model = Review
        fields = ["id", "task", *REVIEW_FIELDS]


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

    @extend_schema_field(EventSerializer(many=True))
    def get_history(self, task: Task) -> list[dict]:
        events = Event.objects.filter(task=task).order_by("timestamp", "id")
        return EventSerializer(events, many=True).data

    @extend_schema_field(HandoffSerializer(allow_null=True))
    def get_handoff(self, task: Task) -> dict | None:
        handoff = Handoff.objects.filter(task=task).first()
        return HandoffSerializer(handoff).data if handoff else None


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
